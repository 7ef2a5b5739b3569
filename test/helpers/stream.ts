import type { ArtifactUpdateEvent, StreamEvent } from '../../src/core/agent/model.js';
import { eventIds, eventState, textOf } from '../../src/core/agent/model.js';

/** Drains a stream into an array, so assertions run after the await, not inside a loop. */
export async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** Runs a stream and returns the error it ends with (or fails the test if it ends cleanly). */
export async function failureOf(
  stream: AsyncIterable<StreamEvent>,
): Promise<{ error: unknown; events: StreamEvent[] }> {
  const events: StreamEvent[] = [];
  try {
    for await (const event of stream) events.push(event);
  } catch (error) {
    return { error, events };
  }
  throw new Error(`expected the stream to fail, but it ended after ${events.length} event(s)`);
}

/** The answer text as the contract builds it: append adds, anything else replaces. */
export function answerText(events: readonly StreamEvent[]): string {
  const artifacts = new Map<string, string>();
  for (const event of events) {
    if (event.kind !== 'artifact-update') continue;
    const update: ArtifactUpdateEvent = event;
    const text = textOf(update.artifact.parts);
    const before = artifacts.get(update.artifact.artifactId) ?? '';
    artifacts.set(update.artifact.artifactId, update.append ? before + text : text);
  }
  return [...artifacts.values()].join('');
}

export function lastState(events: readonly StreamEvent[]): string | undefined {
  let state: string | undefined;
  for (const event of events) state = eventState(event) ?? state;
  return state;
}

/** The task and context ids the first event names; fails the test when there is none. */
export function idsOf(events: readonly StreamEvent[]): { taskId: string; contextId: string } {
  const first = events[0];
  if (first === undefined) throw new Error('the stream had no events');
  return eventIds(first);
}
