import {
  type Artifact,
  eventIds,
  eventState,
  isSettled,
  type StreamEvent,
  type TaskState,
  textOf,
} from '../a2a/index.js';
import type { TurnObservation } from './observations.js';

/** What the reply rules need to know about one turn's stream, computed once, purely. */
export interface TurnSummary {
  taskEvents: number;
  messageEvents: number;
  /** Distinct non-empty task ids and context ids named by the task events. */
  taskIds: string[];
  contextIds: string[];
  /** Task events that left out their task id or their contextId. */
  eventsMissingIds: number;
  /** The answer as the broker would show it: artifact text only, `append` honoured. */
  artifactText: string;
  /** Agent text anywhere else: status messages and Messages, which the broker does not show. */
  otherText: string;
  last: StreamEvent | undefined;
  /** The state the stream reported last (an artifact update reports none and keeps it). */
  lastState: TaskState | undefined;
  /** The state the stream reported last, when it is settled (terminal or paused). */
  streamSettledState: TaskState | undefined;
  /** As above, or what GetTask said afterwards when the stream ended first. */
  settledState: TaskState | undefined;
}

export function summarize(turn: TurnObservation): TurnSummary {
  const taskIds = new Set<string>();
  const contextIds = new Set<string>();
  const artifacts = new Map<string, string>();
  let taskEvents = 0;
  let messageEvents = 0;
  let eventsMissingIds = 0;
  // A set: the same status message comes again in the final Task snapshot.
  const other = new Set<string>();
  const addOther = (text: string): void => {
    if (text.trim() !== '') other.add(text);
  };
  let lastState: TaskState | undefined;
  for (const event of turn.events) {
    if (event.kind === 'message') {
      messageEvents++;
      addOther(textOf(event.message.parts));
      continue;
    }
    taskEvents++;
    const { taskId, contextId } = eventIds(event);
    if (taskId === '' || contextId === '') eventsMissingIds++;
    if (taskId !== '') taskIds.add(taskId);
    if (contextId !== '') contextIds.add(contextId);
    lastState = eventState(event) ?? lastState;
    if (event.kind === 'task') {
      // A snapshot carries the whole task: its artifacts replace what was streamed so far.
      artifacts.clear();
      for (const a of event.task.artifacts) artifacts.set(a.artifactId, artifactText(a));
      addOther(textOf(event.task.status.message?.parts ?? []));
    } else if (event.kind === 'artifact-update') {
      const before = event.append ? (artifacts.get(event.artifact.artifactId) ?? '') : '';
      artifacts.set(event.artifact.artifactId, before + artifactText(event.artifact));
    } else {
      addOther(textOf(event.status.message?.parts ?? []));
    }
  }
  const streamSettledState = lastState !== undefined && isSettled(lastState) ? lastState : undefined;
  let settledState = streamSettledState;
  let text = [...artifacts.values()].join('');
  const followUp = turn.followUp;
  if (settledState === undefined && followUp?.ok === true) {
    const state = followUp.value.status.state;
    if (isSettled(state)) settledState = state;
    if (text === '') text = followUp.value.artifacts.map(artifactText).join('');
  }
  return {
    taskEvents,
    messageEvents,
    taskIds: [...taskIds],
    contextIds: [...contextIds],
    eventsMissingIds,
    artifactText: text,
    otherText: [...other].join(' / '),
    last: turn.events.at(-1),
    lastState,
    streamSettledState,
    settledState,
  };
}

function artifactText(a: Artifact): string {
  return textOf(a.parts);
}

/** The one task a turn named, when it named exactly one with its context. */
export function turnTask(
  turn: TurnObservation | undefined,
): { taskId: string; contextId: string } | undefined {
  if (turn === undefined) return undefined;
  const s = summarize(turn);
  const [taskId] = s.taskIds;
  const [contextId] = s.contextIds;
  if (
    s.taskIds.length !== 1 ||
    s.contextIds.length !== 1 ||
    taskId === undefined ||
    contextId === undefined
  ) {
    return undefined;
  }
  return { taskId, contextId };
}
