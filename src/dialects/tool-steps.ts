import type { Part, StreamEvent } from '../core/agent/model.js';
import type { ToolStep } from '../core/ports.js';
import { cutWithMark } from '../core/text.js';

/**
 * data parts that mark tool calls and results the way Google ADK (`adk_type`) or kagent's
 * Python runtime (`kagent_type`) mark them become step cards, on every dialect. `adk_` is read
 * first, as kagent's own reader does. Other data parts are never shown.
 */

const SUMMARY_MAX = 200;

function marker(part: Part): string | undefined {
  const metadata = part.metadata ?? {};
  const value = metadata.adk_type ?? metadata.kagent_type;
  return typeof value === 'string' ? value : undefined;
}

function longRunning(part: Part): boolean {
  const metadata = part.metadata ?? {};
  return (metadata.adk_is_long_running ?? metadata.kagent_is_long_running) === true;
}

/** Compact JSON, cut at a character budget, never throwing on odd values. */
export function shortJson(value: unknown, max = SUMMARY_MAX): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? '';
  } catch {
    text = '[unserialisable]';
  }
  return cutWithMark(text, max);
}

export function toolStepOf(part: Part): ToolStep | undefined {
  if (part.kind !== 'data') return undefined;
  const type = marker(part);
  if (type !== 'function_call' && type !== 'function_response') return undefined;
  // A long-running call is a pause (kagent's confirmation), not a step to show.
  if (longRunning(part)) return undefined;
  const data =
    typeof part.data === 'object' && part.data !== null ? (part.data as Record<string, unknown>) : {};
  const toolName = typeof data.name === 'string' && data.name !== '' ? data.name : 'tool';
  if (type === 'function_call') return { kind: 'call', toolName, summary: shortJson(data.args ?? {}) };
  return { kind: 'result', toolName, summary: shortJson(data.response ?? null) };
}

/** What an event without tool steps (nearly every streamed event) gets: one list, never grown. */
const NO_STEPS: readonly ToolStep[] = Object.freeze([]);

export function toolStepsOf(event: StreamEvent): readonly ToolStep[] {
  let parts: readonly Part[] | undefined;
  if (event.kind === 'status-update') parts = event.status.message?.parts;
  else if (event.kind === 'artifact-update') parts = event.artifact.parts;
  if (parts === undefined) return NO_STEPS;
  // Called for every streamed event: nothing is allocated unless a part is a step.
  let steps: ToolStep[] | undefined;
  for (const part of parts) {
    const step = toolStepOf(part);
    if (step === undefined) continue;
    if (steps === undefined) steps = [step];
    else steps.push(step);
  }
  return steps ?? NO_STEPS;
}
