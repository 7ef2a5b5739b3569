import { eventState, isSettled } from '../../a2a/index.js';
import { describeFailure, transportRuleOf } from '../describe.js';
import type { Observations, TurnObservation } from '../observations.js';
import { summarize, type TurnSummary, turnTask } from '../summary.js';
import { fail, notTried, pass, preview, type Rule, skip, type Verdict, warn } from './types.js';

/**
 * Reply rules (R-1..R-8), judged on the probe turns: the first turn (no context), the second
 * (in the first one's context), and the first turn's messageId sent again. A misbehaviour is
 * failed by the one rule that names it; the rules that cannot be judged without what it broke
 * SKIP and point to that rule.
 */

type Gate = { verdict: Verdict } | { turn: TurnObservation; s: TurnSummary };

/** The first turn, when it had task events to judge; otherwise the SKIP that says why not. */
function firstTurnEvents(obs: Observations): Gate {
  const turn = obs.firstTurn;
  if (turn === undefined) return { verdict: notTried(obs, 'a first turn') };
  const s = summarize(turn);
  if (s.taskEvents > 0) return { turn, s };
  if (turn.failure !== undefined && turn.eventCount === 0) {
    const rule = transportRuleOf(turn.failure.error) ?? 'reply.task-events';
    return {
      verdict: skip(`the send failed: ${describeFailure(turn.failure, obs.timeoutMs)} (see ${rule})`),
    };
  }
  return { verdict: skip('the first turn had no task events (see reply.task-events)') };
}

/** A failed send before any event: SKIP when a transport rule explains it, else `otherwise`. */
function failedSend(
  obs: Observations,
  turn: TurnObservation,
  otherwise: (why: string) => Verdict,
): Verdict | undefined {
  if (turn.failure === undefined || turn.eventCount > 0) return undefined;
  const why = describeFailure(turn.failure, obs.timeoutMs);
  const rule = transportRuleOf(turn.failure.error);
  return rule === undefined ? otherwise(why) : skip(`the send failed: ${why} (see ${rule})`);
}

const taskEventsRule: Rule = {
  id: 'reply.task-events',
  rows: ['R-1', 'M-1'],
  consequence:
    'The outcome is unknown: the turn is sent again, and may run again, until it fails after 15 minutes with "the agent could not be reached".',
  judge(obs) {
    const turn = obs.firstTurn;
    if (turn === undefined) return notTried(obs, 'a first turn');
    const failed = failedSend(obs, turn, (why) => fail(`the send failed before any event: ${why}`));
    if (failed !== undefined) return failed;
    const s = summarize(turn);
    if (turn.eventCount === 0) return fail('the stream ended without any event');
    if (s.taskEvents === 0) {
      return fail(
        `the reply was ${s.messageEvents} bare Message(s) and no task event: "${preview(s.otherText)}"`,
      );
    }
    const kinds = [...new Set(turn.events.map((e) => e.kind))].join(', ');
    if (s.messageEvents > 0) {
      return warn(
        `${s.taskEvents} task event(s) and ${s.messageEvents} Message(s) in one reply`,
        'A Message is not part of the turn: its text is not shown.',
      );
    }
    return pass(`${s.taskEvents} task event(s): ${kinds}`);
  },
};

const idsRule: Rule = {
  id: 'reply.ids',
  rows: ['R-2'],
  consequence: 'As for a bare Message: the outcome is unknown and the turn is sent again.',
  judge(obs) {
    const gate = firstTurnEvents(obs);
    if ('verdict' in gate) return gate.verdict;
    const { s } = gate;
    if (s.eventsMissingIds > 0) {
      return fail(
        `${s.eventsMissingIds} of ${s.taskEvents} task event(s) left out the task id or the contextId`,
      );
    }
    if (s.taskIds.length > 1) {
      return warn(`the events named ${s.taskIds.length} tasks: ${s.taskIds.join(', ')}`, null);
    }
    return pass(`every event named task ${s.taskIds[0] ?? ''} and context ${s.contextIds[0] ?? ''}`);
  },
};

const contextCreatedRule: Rule = {
  id: 'reply.context-created',
  rows: ['S-3', 'R-3'],
  consequence: 'Without one contextId the thread has no conversation to continue: the outcome is unknown.',
  judge(obs) {
    const gate = firstTurnEvents(obs);
    if ('verdict' in gate) return gate.verdict;
    const { s } = gate;
    if (s.contextIds.length === 0) return skip('the events named no contextId (see reply.ids)');
    if (s.contextIds.length > 1) return fail(`the first turn's events named ${s.contextIds.length} contexts`);
    return pass(`the agent created context ${s.contextIds[0] ?? ''} for a turn sent without one`);
  },
};

const contextKeptRule: Rule = {
  id: 'reply.context-kept',
  rows: ['R-3', 'S-3'],
  consequence: '"The agent no longer has this conversation" is posted and the new context is kept.',
  judge(obs) {
    const turn = obs.secondTurn;
    if (turn === undefined) return notTried(obs, 'a second turn');
    const sent = turn.contextId ?? '';
    const failed = failedSend(obs, turn, (why) =>
      fail(`the second turn, sent in context ${sent}, failed: ${why}`),
    );
    if (failed !== undefined) return failed;
    const s = summarize(turn);
    const others = s.contextIds.filter((c) => c !== sent);
    if (others.length > 0)
      return fail(`the second turn, sent in context ${sent}, came back in ${others.join(', ')}`);
    if (s.contextIds.length === 0) {
      return fail(
        `the second turn's reply named no contextId (${s.taskEvents} task event(s))`,
        'The outcome is unknown and the turn is sent again.',
      );
    }
    return pass(`the second turn stayed in context ${sent}`);
  },
};

const artifactTextRule: Rule = {
  id: 'reply.artifact-text',
  rows: ['R-4', 'R-9'],
  consequence:
    'Text in the status message, in history or in a bare Message is not shown; a task that completes with no artifact text posts "The agent finished without any output."',
  judge(obs) {
    const gate = firstTurnEvents(obs);
    if ('verdict' in gate) return gate.verdict;
    const { s } = gate;
    const state = s.settledState;
    if (state === undefined)
      return skip('the first turn never settled, so it has no answer yet (see reply.final-task)');
    if (state === 'completed') {
      if (s.artifactText.trim() !== '')
        return pass(`the answer is artifact text: "${preview(s.artifactText)}"`);
      return fail(
        s.otherText.trim() === ''
          ? 'the turn completed with no text at all'
          : `the turn completed with no artifact text; its text was elsewhere: "${preview(s.otherText)}"`,
      );
    }
    if (state === 'input-required' || state === 'auth-required') {
      return warn(
        `the agent paused the probe turn (${state}) instead of answering; the checker cancelled it`,
        null,
      );
    }
    const why = s.otherText.trim() === '' ? '' : `: "${preview(s.otherText)}"`;
    return warn(`the probe turn ended ${state}${why}`, null);
  },
};

const finalTaskRule: Rule = {
  id: 'reply.final-task',
  rows: ['R-5'],
  consequence: 'The stream is treated as dropped, and GetTask settles the turn after a second.',
  judge(obs) {
    const gate = firstTurnEvents(obs);
    if ('verdict' in gate) return gate.verdict;
    const { turn, s } = gate;
    const last = s.last;
    const lastState = last === undefined ? undefined : eventState(last);
    if (last?.kind === 'task' && lastState !== undefined && isSettled(lastState)) {
      return pass(`the stream ended with the full task, ${lastState}`);
    }
    // A2A 1.0 ends a task's stream when the task is interrupted or terminal: its last event is
    // that status update, and the full Task may follow or not.
    if (s.streamSettledState !== undefined) {
      return pass(`the stream ended after the ${s.streamSettledState} status update`);
    }
    const later = s.settledState === undefined ? '' : `; GetTask later showed it ${s.settledState}`;
    if (turn.failure !== undefined) {
      return fail(
        `the stream broke after ${turn.eventCount} event(s), before the task settled: ${describeFailure(turn.failure, obs.timeoutMs)}${later}`,
      );
    }
    return fail(`the stream ended while the task was ${s.lastState ?? 'in no reported state'}${later}`);
  },
};

const eventsRule: Rule = {
  id: 'reply.events-5min',
  rows: ['R-6'],
  consequence: 'The stream is cut and the task followed again with GetTask and SubscribeToTask.',
  judge(obs) {
    const turns = [obs.firstTurn, obs.secondTurn, obs.repeat].filter((t) => t !== undefined);
    if (turns.length === 0) return notTried(obs, 'a turn');
    const gap = Math.max(...turns.map((t) => t.maxGapMs));
    return skip(
      `cannot be proven in a short check: the longest wait for an event here was ${gap} ms; a long tool call must still send an event at least every 5 minutes`,
    );
  },
};

const dedupeRule: Rule = {
  id: 'turn.messageid-dedupe',
  rows: ['R-8', 'S-2'],
  consequence: 'A turn sent again after an unknown outcome keeps its messageId, and the agent runs it twice.',
  judge(obs) {
    const first = turnTask(obs.firstTurn);
    const turn = obs.repeat;
    if (first === undefined || turn === undefined) return notTried(obs, 'sending a messageId twice');
    const failed = failedSend(obs, turn, (why) =>
      warn(
        `the repeated messageId was refused: ${why}`,
        'The broker cannot learn the outcome of a turn it sends again: it retries, then fails the turn.',
      ),
    );
    if (failed !== undefined) return failed;
    const s = summarize(turn);
    const others = s.taskIds.filter((id) => id !== first.taskId);
    if (others.length > 0) {
      return fail(
        `the repeated messageId ran again as task ${others.join(', ')}; the first send was task ${first.taskId}`,
      );
    }
    if (s.taskIds.length === 0) {
      return warn(
        'the reply to the repeated messageId named no task, so a single run could not be confirmed',
        null,
      );
    }
    return pass(`the repeated messageId was answered with the same task, ${first.taskId}`);
  },
};

export const replyRules: readonly Rule[] = [
  taskEventsRule,
  idsRule,
  contextCreatedRule,
  contextKeptRule,
  artifactTextRule,
  finalTaskRule,
  eventsRule,
  dedupeRule,
];
