import { isSettled } from '../../a2a/index.js';
import { summarize } from '../summary.js';
import { fail, notTried, pass, type Rule, skip, warn } from './types.js';

/**
 * P-2, P-3 (`--polling`, a card without streaming): the first turn's SendMessage returned its
 * task at once and GetTask followed it to a settled state. The other rules judge the same turn
 * as they judge a stream (its events are the send's answer and each read).
 */

/** A send that takes this long ignored the immediate return it was asked for. */
const IMMEDIATE_MS = 5_000;

const progressRule: Rule = {
  id: 'poll.progress',
  rows: ['P-2', 'P-3'],
  consequence:
    'A turn whose task never settles under GetTask is cancelled at the polling timeout, and the thread is told.',
  judge(obs) {
    const turn = obs.firstTurn;
    if (turn === undefined) return notTried(obs, 'the first turn');
    if (!obs.polling) return skip('not asked for: run with --polling to check the non-streaming path');
    const polled = turn.polled;
    if (!obs.polled || polled === undefined)
      return skip('the card streams: the broker streams it even with polling on');
    if (turn.failure !== undefined && turn.events.length === 0) return notTried(obs, 'a settled SendMessage');
    const first = turn.events[0];
    if (first?.kind === 'message')
      return warn(
        'SendMessage answered with a bare Message, no task: it is shown as the answer, and such a turn cannot be recovered after a crash',
        null,
      );
    if (first?.kind !== 'task' || first.task.id === '' || first.task.contextId === '')
      return fail('SendMessage did not answer with a Task naming its task and context');
    const s = summarize(turn);
    const state = s.lastState;
    if (turn.failure !== undefined)
      return fail(`GetTask failed after ${polled.reads} read(s) of task ${first.task.id}`);
    if (state === undefined || !isSettled(state))
      return fail(
        `task ${first.task.id} was still ${state ?? 'unknown'} after ${polled.reads} GetTask read(s) within the call bound`,
      );
    const reads = `${polled.reads} GetTask read(s), ${polled.changes} with something new`;
    if (polled.sendMs >= IMMEDIATE_MS && polled.reads === 0)
      return warn(
        `SendMessage took ${polled.sendMs} ms and returned task ${first.task.id} already ${state}: it ignored the immediate return asked for`,
        'Nothing shows in the thread until the task ends; the answer then appears at once.',
      );
    return pass(`SendMessage returned task ${first.task.id} in ${polled.sendMs} ms; ${state} after ${reads}`);
  },
};

export const pollingRules: readonly Rule[] = [progressRule];
