import { type A2AClient, isSettled, type OutgoingMessage, type Task } from '../a2a/index.js';
import { attempt, type Budget, callSignal, sleep } from './calls.js';
import type { Outcome, TurnObservation } from './observations.js';
import { summarize } from './summary.js';

/** A reply longer than this is still read to its end, but only its first events are kept. */
const MAX_KEPT_EVENTS = 2000;
/** How often a task whose stream ended early is read again, as the broker does. */
const FOLLOW_UP_EVERY_MS = 500;

/** Sends one turn and reads its whole stream, within the call bound. Never throws. */
export async function sendTurn(
  client: A2AClient,
  message: OutgoingMessage,
  budget: Budget,
): Promise<TurnObservation> {
  const turn: TurnObservation = {
    messageId: message.messageId,
    contextId: message.contextId,
    events: [],
    eventCount: 0,
    maxGapMs: 0,
    failure: undefined,
    followUp: undefined,
  };
  const signal = callSignal(budget);
  let last = performance.now();
  try {
    for await (const event of client.sendStreamingMessage(message, { signal })) {
      const now = performance.now();
      turn.maxGapMs = Math.max(turn.maxGapMs, Math.round(now - last));
      last = now;
      turn.eventCount++;
      if (turn.events.length < MAX_KEPT_EVENTS) turn.events.push(event);
    }
  } catch (error) {
    turn.failure = { error, timedOut: signal.aborted };
  }
  return turn;
}

/**
 * When a turn's stream ended before its task settled, reads the task with GetTask until it does
 * or the call bound runs out, as the broker would. Only the checker's own tasks are read.
 */
export async function followUp(client: A2AClient, turn: TurnObservation, budget: Budget): Promise<void> {
  const s = summarize(turn);
  if (s.settledState !== undefined || s.taskIds.length !== 1) return;
  const taskId = s.taskIds[0] ?? '';
  const deadline = AbortSignal.any([AbortSignal.timeout(budget.timeoutMs), budget.run]);
  let outcome: Outcome<Task>;
  do {
    outcome = await attempt(budget, (signal) => client.getTask(taskId, { signal }));
    if (!outcome.ok || isSettled(outcome.value.status.state)) break;
    await sleep(FOLLOW_UP_EVERY_MS, deadline);
  } while (!deadline.aborted);
  turn.followUp = outcome;
}
