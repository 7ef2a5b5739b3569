import { StoreError } from '../core/errors.js';
import type { SessionKey } from '../core/store.js';
import type { TriggerGroup, TriggerWork, TriggerWorkKind } from '../core/trigger-store.js';

import { integer, type Row, text, textOrNull } from './sql-steps.js';

/** The trigger store's rows, read from what its statements (trigger-queries.ts) return. */

// ---- rows ---------------------------------------------------------------------------------------

export function groupFromRow(row: Row): TriggerGroup {
  const thread = textOrNull(row, 'thread');
  return {
    id: text(row, 'id'),
    scope: {
      workspaceId: text(row, 'workspace_id'),
      binding: text(row, 'binding'),
      trigger: text(row, 'trigger_name'),
    },
    groupKey: text(row, 'group_key'),
    episode: integer(row, 'episode'),
    storm: integer(row, 'storm') === 1,
    thread: thread === null ? null : sessionKey(parseJson(thread, 'thread')),
    createdAt: integer(row, 'created_at'),
  };
}

export function workFromRow(row: Row): TriggerWork {
  const identities = parseJson(text(row, 'identities'), 'identities');
  if (!Array.isArray(identities) || !identities.every((i) => typeof i === 'string'))
    throw new StoreError('trigger work row has invalid identities');
  const kind = text(row, 'kind');
  if (!WORK_KINDS.has(kind)) throw new StoreError(`trigger work row has an invalid kind (${kind})`);
  return {
    id: text(row, 'id'),
    groupId: text(row, 'group_id'),
    seq: integer(row, 'seq'),
    kind: kind as TriggerWorkKind,
    sourceGroupId: text(row, 'source_group_id'),
    identities,
    allResolved: integer(row, 'all_resolved') === 1,
    payload: parseJson(text(row, 'payload'), 'payload'),
    attempts: integer(row, 'attempts'),
    nextAt: integer(row, 'next_at'),
    createdAt: integer(row, 'created_at'),
  };
}

const WORK_KINDS: ReadonlySet<string> = new Set<TriggerWorkKind>(['open', 'turn', 'resolved', 'note']);

function sessionKey(value: unknown): SessionKey {
  const v = value as Partial<Record<keyof SessionKey, unknown>> | null;
  if (
    v === null ||
    typeof v !== 'object' ||
    typeof v.surface !== 'string' ||
    typeof v.workspaceId !== 'string' ||
    typeof v.channelId !== 'string' ||
    typeof v.threadId !== 'string'
  )
    throw new StoreError('trigger group row has an invalid thread');
  return { surface: v.surface, workspaceId: v.workspaceId, channelId: v.channelId, threadId: v.threadId };
}

function parseJson(value: string, column: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (cause) {
    throw new StoreError(`trigger row has invalid JSON in ${column}`, { cause });
  }
}
