import { eventIds } from '../../a2a/index.js';
import { describeFailure, rpcCodeOf, transportRuleOf } from '../describe.js';
import type { Observations, Outcome } from '../observations.js';
import { turnTask } from '../summary.js';
import { fail, notTried, pass, type Rule, skip, type Verdict, warn } from './types.js';

/**
 * Method rules (M-2..M-6), each on the first turn's task once it has settled: the broker calls
 * these methods on tasks it already sent, so that is the task to ask about.
 */

/** The common failures of a method call; undefined when the rule must look closer. */
function commonFailure(
  obs: Observations,
  method: string,
  outcome: Extract<Outcome<unknown>, { ok: false }>,
): Verdict {
  const rule = transportRuleOf(outcome.error);
  const why = describeFailure(outcome, obs.timeoutMs);
  if (rule !== undefined) return skip(`${method} failed: ${why} (see ${rule})`);
  const code = rpcCodeOf(outcome.error);
  if (code === -32601) return fail(`${method} is not implemented (JSON-RPC -32601, method not found)`);
  if (code === -32001) return fail(`${method} says the task the agent just ran does not exist (-32001)`);
  return fail(`${method} failed: ${why}`);
}

const getTaskRule: Rule = {
  id: 'method.get-task',
  rows: ['M-2'],
  consequence: 'A turn whose stream does not end with a full task cannot finish.',
  judge(obs) {
    const task = turnTask(obs.firstTurn);
    const outcome = obs.getTask;
    if (task === undefined || outcome === undefined) return notTried(obs, 'GetTask');
    if (!outcome.ok) return commonFailure(obs, 'GetTask', outcome);
    if (outcome.value.id !== task.taskId) {
      return fail(`GetTask for ${task.taskId} answered task ${outcome.value.id || '(no id)'}`);
    }
    return pass(`GetTask: task ${task.taskId} is ${outcome.value.status.state}`);
  },
};

const subscribeRule: Rule = {
  id: 'method.subscribe',
  rows: ['M-3'],
  consequence:
    'Live text stops: the task is read again with GetTask, with a backoff of up to a minute, until it ends.',
  judge(obs) {
    const task = turnTask(obs.firstTurn);
    const outcome = obs.subscribe;
    if (obs.polled) return skip('not called: the broker only polls an agent that does not stream (P-1)');
    if (task === undefined || outcome === undefined) return notTried(obs, 'SubscribeToTask');
    if (!outcome.ok) {
      // A2A has an agent refuse a subscription to a task in a terminal state with -32004, and
      // the probe task has ended by now: that answer shows the method is there.
      if (rpcCodeOf(outcome.error) === -32004) {
        return pass(
          'the agent refused to subscribe to the finished probe task (-32004), as A2A allows; a running task was not tried',
        );
      }
      return commonFailure(obs, 'SubscribeToTask', outcome);
    }
    const first = outcome.value.first;
    if (first === undefined) return fail('the subscription ended without any event');
    const named = eventIds(first).taskId;
    if (named !== task.taskId) return fail(`the subscription's first event named task ${named || '(none)'}`);
    return pass(`SubscribeToTask: first event a ${first.kind} of task ${named}`);
  },
};

const cancelRule: Rule = {
  id: 'method.cancel',
  rows: ['M-4'],
  consequence:
    'The cancel is retried a few times and reported as failed; the task keeps running on the agent.',
  judge(obs) {
    const task = turnTask(obs.firstTurn);
    const outcome = obs.cancel;
    if (task === undefined || outcome === undefined) return notTried(obs, 'CancelTask');
    if (outcome.ok) return pass(`CancelTask: task ${task.taskId} is ${outcome.value.status.state}`);
    const code = rpcCodeOf(outcome.error);
    if (code === -32002)
      return pass('the finished probe task is not cancelable (-32002): the method answers');
    if (code === -32004) {
      return warn(
        'CancelTask of the finished probe task answered -32004 (unsupported operation), not -32002 (not cancelable)',
      );
    }
    return commonFailure(obs, 'CancelTask', outcome);
  },
};

const listTasksRule: Rule = {
  id: 'method.list-tasks',
  rows: ['M-5', 'M-6'],
  consequence:
    'The lookup is retried, then the turn fails after 15 minutes; a list without history makes every turn look absent, so it is sent, and may run, again.',
  judge(obs) {
    const outcome = obs.listTasks;
    if (outcome === 'not-in-version') {
      return skip(
        'ListTasks does not exist in A2A 0.3: the broker never asks a 0.3 agent and sends its turns again',
      );
    }
    const task = turnTask(obs.firstTurn);
    if (task === undefined || outcome === undefined) return notTried(obs, 'ListTasks');
    if (!outcome.ok) return commonFailure(obs, 'ListTasks', outcome);
    const { found, listed, withHistory } = outcome.value;
    if (found !== undefined) {
      return pass(`found task ${found.id} by the turn's messageId in its history (${listed} task(s) listed)`);
    }
    if (listed === 0) return fail(`ListTasks listed no task for context ${task.contextId}`);
    if (withHistory === 0) return fail(`ListTasks listed ${listed} task(s), all without history`);
    return fail(`none of the ${listed} listed task(s) holds the turn's messageId in its history`);
  },
};

export const methodRules: readonly Rule[] = [getTaskRule, subscribeRule, cancelRule, listTasksRule];
