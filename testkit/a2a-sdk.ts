import { randomUUID } from 'node:crypto';
import { type Part, Role, type SendMessageRequest } from '@a2a-js/sdk';

/**
 * Values of the official @a2a-js/sdk 1.x types, spelled out field by field as its protobuf-shaped
 * types want them. The tests' SDK peer and the bench's SDK client baseline build the same ones.
 */

/** A text part; `mediaType` as the sender declares it ('' when it says nothing). */
export function sdkTextPart(text: string, mediaType = ''): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType };
}

/** A first message from a user, no context or task: what SendMessage and SendStreamingMessage take. */
export function sdkRequest(text: string): SendMessageRequest {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [sdkTextPart(text)],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}
