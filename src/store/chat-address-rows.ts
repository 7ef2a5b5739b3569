import type { ChatAddressRow, ChatAddressRows } from '../core/chat-address-store.js';
import { q, ROW_TABLES, type Steps, type StepsRunner } from './sql-steps.js';

/**
 * The chat address store (src/core/chat-address-store.ts) over statements both databases share,
 * run by the same SQL runner as the installations. A put is an upsert that keeps the thread,
 * so a replica writing the address of an activity never undoes another's "new" command.
 */

export const CHAT_ADDRESS_TABLE = ROW_TABLES.addresses;

function* put(row: Omit<ChatAddressRow, 'threadId'>): Steps<void> {
  yield q(
    `INSERT INTO @addresses (surface, workspace_id, conversation_id, group_id, address, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (surface, workspace_id, conversation_id) DO UPDATE SET group_id = excluded.group_id,
       address = excluded.address, updated_at = excluded.updated_at`,
    row.surface,
    row.workspaceId,
    row.conversationId,
    row.groupId,
    row.address,
    row.updatedAt,
  );
}

const KEY = 'surface = $1 AND workspace_id = $2 AND conversation_id = $3';

function* get(
  surface: string,
  workspaceId: string,
  conversationId: string,
): Steps<ChatAddressRow | undefined> {
  const [row] = yield q(`SELECT * FROM @addresses WHERE ${KEY}`, surface, workspaceId, conversationId);
  return row === undefined ? undefined : addressFromRow(row);
}

function* setThread(
  surface: string,
  workspaceId: string,
  conversationId: string,
  threadId: string,
): Steps<boolean> {
  const rows = yield q(
    `UPDATE @addresses SET thread_id = $4 WHERE ${KEY} RETURNING conversation_id`,
    surface,
    workspaceId,
    conversationId,
    threadId,
  );
  return rows.length > 0;
}

function* remove(surface: string, workspaceId: string, conversationId: string): Steps<boolean> {
  const rows = yield q(
    `DELETE FROM @addresses WHERE ${KEY} RETURNING conversation_id`,
    surface,
    workspaceId,
    conversationId,
  );
  return rows.length > 0;
}

function* removeGroup(surface: string, workspaceId: string, groupId: string): Steps<number> {
  const rows = yield q(
    'DELETE FROM @addresses WHERE surface = $1 AND workspace_id = $2 AND group_id = $3 RETURNING conversation_id',
    surface,
    workspaceId,
    groupId,
  );
  return rows.length;
}

export class StepsChatAddressRows implements ChatAddressRows {
  readonly #runner: StepsRunner;

  constructor(runner: StepsRunner) {
    this.#runner = runner;
  }

  put(row: Omit<ChatAddressRow, 'threadId'>): Promise<void> {
    return this.#runner.run('put', put(row), { write: true });
  }

  get(surface: string, workspaceId: string, conversationId: string): Promise<ChatAddressRow | undefined> {
    return this.#runner.run('get', get(surface, workspaceId, conversationId), { write: false });
  }

  setThread(
    surface: string,
    workspaceId: string,
    conversationId: string,
    threadId: string,
  ): Promise<boolean> {
    return this.#runner.run('setThread', setThread(surface, workspaceId, conversationId, threadId), {
      write: true,
    });
  }

  delete(surface: string, workspaceId: string, conversationId: string): Promise<boolean> {
    return this.#runner.run('delete', remove(surface, workspaceId, conversationId), { write: true });
  }

  deleteGroup(surface: string, workspaceId: string, groupId: string): Promise<number> {
    return this.#runner.run('deleteGroup', removeGroup(surface, workspaceId, groupId), { write: true });
  }
}

function addressFromRow(row: Record<string, unknown>): ChatAddressRow {
  const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
  return {
    surface: String(row.surface),
    workspaceId: String(row.workspace_id),
    conversationId: String(row.conversation_id),
    groupId: text(row.group_id),
    address: String(row.address),
    threadId: text(row.thread_id),
    updatedAt: Number(row.updated_at),
  };
}

/** The migration's table (the integer type and SQLite's STRICT differ). */
export function chatAddressTables(int: string, strict: string): string {
  return `
    CREATE TABLE ${CHAT_ADDRESS_TABLE} (
      surface TEXT NOT NULL,
      workspace_id TEXT NOT NULL,
      conversation_id TEXT NOT NULL,
      group_id TEXT,
      address TEXT NOT NULL,
      thread_id TEXT,
      updated_at ${int} NOT NULL,
      PRIMARY KEY (surface, workspace_id, conversation_id)
    )${strict};
    CREATE INDEX ${CHAT_ADDRESS_TABLE}_group ON ${CHAT_ADDRESS_TABLE} (surface, workspace_id, group_id);
  `;
}
