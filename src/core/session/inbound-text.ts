import { actorMetadata, composeTriggerText } from '../compose.js';
import type { Inbound } from '../ports.js';
import type { TurnKind } from '../store.js';
import { cutText, textLength } from '../text.js';

/**
 * What a message the engine receives becomes in its turn: its kind, its text (bounded), the
 * person's label line and the actor metadata (S-5, S-6), or a trigger's instruction and fields.
 */

/**
 * Text fit to store and send: NUL (PostgreSQL cannot store it, and it means nothing in chat)
 * and lone surrogates (not text) are replaced rather than failing the turn for ever, and an
 * overlong message is cut with a visible mark (nothing a user sent is dropped silently).
 */
export function boundedText(input: string, maxLength: number): string {
  const text = input.replaceAll('\0', '\uFFFD').toWellFormed();
  if (textLength(text) <= maxLength) return text;
  return `${cutText(text, maxLength)}\n[… message cut at ${maxLength} characters]`;
}

export interface InboundContent {
  kind: TurnKind;
  text: string;
  label: string | null;
  metadata: Record<string, unknown> | null;
}

export function inboundContent(input: Inbound, maxLength: number): InboundContent {
  if (input.kind === 'person')
    return {
      kind: input.addressed ? 'message' : 'context',
      text: boundedText(input.text, maxLength),
      label: input.actor.label,
      metadata: { ...input.metadata, ...actorMetadata(input.actor) },
    };
  return {
    kind: 'trigger',
    text: composeTriggerText(boundedText(input.instruction, maxLength), input.fields),
    label: null,
    metadata: null,
  };
}
