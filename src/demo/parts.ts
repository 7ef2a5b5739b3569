import { randomUUID } from 'node:crypto';
import { type Message, type Part, Role } from '@a2a-js/sdk';

/** The demo agent's A2A 1.0 values, built field by field as the SDK's protobuf-shaped types want. */

export function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' };
}

export function data(value: unknown, metadata: Record<string, unknown>): Part {
  return { content: { $case: 'data', value }, metadata, filename: '', mediaType: '' };
}

export function agentMessage(
  parts: Part[],
  task: { id: string; contextId: string },
  extra: Partial<Message> = {},
): Message {
  return {
    messageId: randomUUID(),
    contextId: task.contextId,
    taskId: task.id,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

export function firstText(message: Message): string {
  for (const part of message.parts) if (part.content?.$case === 'text') return part.content.value;
  return '';
}
