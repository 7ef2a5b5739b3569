import type {
  StoredTranscript,
  TranscriptLimits,
  TranscriptMessage,
  TranscriptScope,
  TranscriptStore,
  TranscriptThread,
  TranscriptWrite,
} from '../core/transcript-store.js';
import { integer, q, type Row, type Steps, type StepsRunner, text } from './sql-steps.js';

/**
 * The transcript store (core/transcript-store.ts) over statements both databases share, run by
 * the trigger store's runners (one transaction per call). Upserts are INSERT … ON CONFLICT,
 * which SQLite and PostgreSQL read alike.
 */

export function* saveTranscript(write: TranscriptWrite): Steps<void> {
  const { surface, workspaceId } = write.scope;
  for (const t of write.threads) {
    yield q(
      `INSERT INTO @tthreads (surface, workspace_id, thread_id, binding, title, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (surface, workspace_id, thread_id)
       DO UPDATE SET title = excluded.title, updated_at = excluded.updated_at`,
      surface,
      workspaceId,
      t.threadId,
      t.binding,
      t.title,
      t.createdAt,
      t.updatedAt,
    );
  }
  const newest = new Map<string, number>();
  for (const m of write.messages) {
    yield q(
      `INSERT INTO @tmessages (surface, workspace_id, thread_id, seq, body, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (surface, workspace_id, thread_id, seq)
       DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`,
      surface,
      workspaceId,
      m.threadId,
      m.seq,
      m.body,
      m.updatedAt,
    );
    newest.set(m.threadId, Math.max(newest.get(m.threadId) ?? 0, m.seq));
  }
  // A thread keeps its newest messages only: the table stays bounded however long it runs.
  for (const [threadId, seq] of newest) {
    if (seq <= write.keepPerThread) continue;
    yield q(
      'DELETE FROM @tmessages WHERE surface = $1 AND workspace_id = $2 AND thread_id = $3 AND seq <= $4',
      surface,
      workspaceId,
      threadId,
      seq - write.keepPerThread,
    );
  }
}

export function* loadTranscripts(
  scope: TranscriptScope,
  limits: TranscriptLimits,
): Steps<StoredTranscript[]> {
  const threads = yield q(
    `SELECT * FROM @tthreads WHERE surface = $1 AND workspace_id = $2
     ORDER BY updated_at DESC, thread_id LIMIT $3`,
    scope.surface,
    scope.workspaceId,
    limits.threads,
  );
  const out: StoredTranscript[] = [];
  for (const row of threads) {
    const thread = threadFromRow(row);
    const rows = yield q(
      `SELECT * FROM @tmessages WHERE surface = $1 AND workspace_id = $2 AND thread_id = $3
       ORDER BY seq DESC LIMIT $4`,
      scope.surface,
      scope.workspaceId,
      thread.threadId,
      limits.messagesPerThread,
    );
    out.push({ thread, messages: rows.map(messageFromRow).reverse() });
  }
  return out;
}

function threadFromRow(row: Row): TranscriptThread {
  return {
    threadId: text(row, 'thread_id'),
    binding: text(row, 'binding'),
    title: text(row, 'title'),
    createdAt: integer(row, 'created_at'),
    updatedAt: integer(row, 'updated_at'),
  };
}

function messageFromRow(row: Row): TranscriptMessage {
  return {
    threadId: text(row, 'thread_id'),
    seq: integer(row, 'seq'),
    body: text(row, 'body'),
    updatedAt: integer(row, 'updated_at'),
  };
}

export class StepsTranscriptStore implements TranscriptStore {
  readonly #runner: StepsRunner;

  constructor(runner: StepsRunner) {
    this.#runner = runner;
  }

  saveTranscript(write: TranscriptWrite): Promise<void> {
    return this.#runner.run('saveTranscript', saveTranscript(write), { write: true });
  }

  loadTranscripts(scope: TranscriptScope, limits: TranscriptLimits): Promise<StoredTranscript[]> {
    return this.#runner.run('loadTranscripts', loadTranscripts(scope, limits), { write: false });
  }
}
