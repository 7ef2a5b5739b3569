import { z } from 'zod';

/**
 * A2A 1.0 on the wire is the ProtoJSON of a2a.proto (v1.0.1):
 * - camelCase fields, enums as SCREAMING_SNAKE names (ProtoJSON also allows the number);
 * - a oneof is "whichever member key is present" (Part: text | raw | url | data;
 *   StreamResponse: task | message | statusUpdate | artifactUpdate);
 * - default values are omitted: a missing append/lastChunk is false, a missing list is [],
 *   a missing string is "".
 * Unknown fields are tolerated (a newer minor version may add some). Ids are checked later,
 * by the engine, so a missing id parses as "" rather than failing here.
 */

const metadata = z.record(z.string(), z.unknown()).optional();
const id = z.string().optional().default('');
const strings = z.array(z.string()).optional();

export const part = z.object({
  text: z.string().optional(),
  raw: z.string().optional(),
  url: z.string().optional(),
  data: z.unknown().optional(),
  mediaType: z.string().optional(),
  filename: z.string().optional(),
  metadata,
});

const stateName = z.union([z.string(), z.number()]);

export const message = z.object({
  messageId: id,
  role: z.union([z.string(), z.number()]).optional(),
  parts: z.array(part).optional().default([]),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  referenceTaskIds: strings,
  extensions: strings,
  metadata,
});

export const taskStatus = z.object({
  state: stateName,
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
  id,
  contextId: id,
  status: taskStatus,
  artifacts: z.array(artifact).optional().default([]),
  history: z.array(message).optional().default([]),
  metadata,
});

export const statusUpdate = z.object({
  taskId: id,
  contextId: id,
  status: taskStatus,
  metadata,
});

export const artifactUpdate = z.object({
  taskId: id,
  contextId: id,
  artifact,
  append: z.boolean().optional().default(false),
  lastChunk: z.boolean().optional().default(false),
  metadata,
});

export const streamResponse = z.object({
  task: task.optional(),
  message: message.optional(),
  statusUpdate: statusUpdate.optional(),
  artifactUpdate: artifactUpdate.optional(),
});

export const listTasksResponse = z.object({
  tasks: z.array(task).optional().default([]),
  nextPageToken: z.string().optional().default(''),
  pageSize: z.number().optional(),
  totalSize: z.number().optional(),
});

export type WirePart = z.infer<typeof part>;
export type WireMessage = z.infer<typeof message>;
export type WireTaskStatus = z.infer<typeof taskStatus>;
export type WireArtifact = z.infer<typeof artifact>;
export type WireTask = z.infer<typeof task>;
