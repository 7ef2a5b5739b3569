import { z } from 'zod';

/**
 * A2A 0.3 on the wire (specification/json/a2a.json at v0.3.0). How it differs from 1.0:
 * - every Message, Task, Part and stream event carries a `kind` discriminator;
 * - states are lowercase-kebab (`input-required`), roles `user` / `agent`;
 * - a file part nests `{bytes | uri, mimeType, name}` under `file`; a data part's `data` is an object;
 * - a status update carries `final` (set unreliably by real servers, so not trusted);
 * - there is no ListTasks over JSON-RPC.
 * Unknown fields are tolerated; missing ids parse as "" so the engine can see them.
 */

const metadata = z.record(z.string(), z.unknown()).optional();
const id = z.string().optional().default('');
const strings = z.array(z.string()).optional();

const textPart = z.object({ kind: z.literal('text'), text: z.string(), metadata });
const filePart = z.object({
  kind: z.literal('file'),
  file: z.object({
    bytes: z.string().optional(),
    uri: z.string().optional(),
    mimeType: z.string().optional(),
    name: z.string().optional(),
  }),
  metadata,
});
const dataPart = z.object({ kind: z.literal('data'), data: z.unknown(), metadata });

export const part = z.discriminatedUnion('kind', [textPart, filePart, dataPart]);

export const message = z.object({
  kind: z.literal('message').optional(),
  messageId: id,
  role: z.string().optional(),
  parts: z.array(part).optional().default([]),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  referenceTaskIds: strings,
  extensions: strings,
  metadata,
});

export const taskStatus = z.object({
  state: z.string(),
  message: message.optional(),
  timestamp: z.string().optional(),
});

export const artifact = z.object({
  artifactId: id,
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(part).optional().default([]),
  metadata,
  extensions: strings,
});

export const task = z.object({
  kind: z.literal('task'),
  id,
  contextId: id,
  status: taskStatus,
  artifacts: z.array(artifact).optional().default([]),
  history: z.array(message).optional().default([]),
  metadata,
});

export const statusUpdate = z.object({
  kind: z.literal('status-update'),
  taskId: id,
  contextId: id,
  status: taskStatus,
  final: z.boolean().optional(),
  metadata,
});

export const artifactUpdate = z.object({
  kind: z.literal('artifact-update'),
  taskId: id,
  contextId: id,
  artifact,
  append: z.boolean().optional().default(false),
  lastChunk: z.boolean().optional().default(false),
  metadata,
});

export const streamResult = z.discriminatedUnion('kind', [
  task,
  message.extend({ kind: z.literal('message') }),
  statusUpdate,
  artifactUpdate,
]);

export type WirePart = z.infer<typeof part>;
export type WireMessage = z.infer<typeof message>;
export type WireTaskStatus = z.infer<typeof taskStatus>;
export type WireArtifact = z.infer<typeof artifact>;
export type WireTask = z.infer<typeof task>;
