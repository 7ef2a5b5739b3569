import { type A2AClient, isSettled, type OutgoingMessage, type Task, textOf } from '../a2a/index.js';
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

/** How often a polled turn's task is read, as a backend with a short spec.polling.interval would. */
const POLL_EVERY_MS = 500;

/**
 * P-2, P-3: sends one turn with SendMessage (asking for an immediate return) and reads its task
 * with GetTask until it settles or the call bound runs out. The observation's events are the
 * send's answer and then each read as a task event, so the reply rules judge it as a stream.
 * Never throws.
 */
export async function sendPolledTurn(
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
    polled: { sendMs: 0, reads: 0, changes: 0 },
  };
  const polled = turn.polled ?? { sendMs: 0, reads: 0, changes: 0 };
  const started = performance.now();
  const sent = await attempt(budget, (signal) => client.sendMessage(message, { signal }));
  polled.sendMs = Math.round(performance.now() - started);
  if (!sent.ok) {
    turn.failure = { error: sent.error, timedOut: sent.timedOut };
    return turn;
  }
  turn.events.push(sent.value);
  turn.eventCount++;
  if (sent.value.kind !== 'task' || sent.value.task.id === '') return turn;
  const taskId = sent.value.task.id;
  let seen = fingerprint(sent.value.task);
  let state = sent.value.task.status.state;
  const deadline = AbortSignal.any([AbortSignal.timeout(budget.timeoutMs), budget.run]);
  let last = performance.now();
  while (!isSettled(state) && !deadline.aborted) {
    await sleep(POLL_EVERY_MS, deadline);
    if (deadline.aborted) break;
    const read = await attempt(budget, (signal) => client.getTask(taskId, { signal }));
    polled.reads++;
    if (!read.ok) {
      turn.failure = { error: read.error, timedOut: read.timedOut };
      return turn;
    }
    const now = performance.now();
    const print = fingerprint(read.value);
    if (print !== seen) {
      polled.changes++;
      turn.maxGapMs = Math.max(turn.maxGapMs, Math.round(now - last));
      last = now;
      seen = print;
    }
    state = read.value.status.state;
    turn.eventCount++;
    if (turn.events.length < MAX_KEPT_EVENTS) turn.events.push({ kind: 'task', task: read.value });
  }
  return turn;
}

function fingerprint(task: Task): string {
  return `${task.status.state}\n${task.artifacts.map((a) => textOf(a.parts)).join('\n')}`;
}
