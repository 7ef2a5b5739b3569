import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { chatAddressContract } from '../../../test/store/chat-address-contract.js';
import { feedbackContract } from '../../../test/store/feedback-contract.js';
import { installationContract } from '../../../test/store/installation-contract.js';
import { identityLinkContract, retentionContract } from '../../../test/store/retention-contract.js';
import { storeContract } from '../../../test/store/session-contract.js';
import { transcriptStoreContract } from '../../../test/store/transcript-contract.js';
import { triggerStoreContract } from '../../../test/store/trigger-contract.js';
import { queuedTurn } from '../../../testkit/turns.js';
import { StoreError } from '../../core/errors.js';
import { sessionIdOf } from '../../core/store.js';
import { migrations } from '../migrations.js';
import { SqliteStore } from './sqlite-store.js';

const dirs: string[] = [];
function freshPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kourier-sqlite-'));
  dirs.push(dir);
  return join(dir, 'kourier.db');
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

storeContract('sqlite file', async () => new SqliteStore(freshPath()));
storeContract('sqlite :memory:', async () => new SqliteStore(':memory:'));
triggerStoreContract('sqlite file', async () => {
  const sessions = new SqliteStore(freshPath());
  return { sessions, triggers: sessions.triggers() };
});

retentionContract('sqlite file', async () => {
  const sessions = new SqliteStore(freshPath());
  return {
    sessions,
    retention: sessions.retention(),
    feedback: sessions.feedback(),
    transcripts: sessions.transcripts(),
    links: sessions.identityLinks(),
  };
});

identityLinkContract('sqlite file', async () => {
  const sessions = new SqliteStore(freshPath());
  return {
    sessions,
    retention: sessions.retention(),
    feedback: sessions.feedback(),
    transcripts: sessions.transcripts(),
    links: sessions.identityLinks(),
  };
});

transcriptStoreContract('sqlite file', async () => {
  const sessions = new SqliteStore(freshPath());
  return { sessions, transcripts: sessions.transcripts() };
});

describe('SqliteStore', () => {
  const open: SqliteStore[] = [];
  const T0 = 1_700_000_000_000;
  const key = { surface: 'slack', workspaceId: 'T01', channelId: 'C01', threadId: '1.2' };

  afterEach(async () => {
    for (const store of open.splice(0)) await store.close();
  });

  async function migrated(path: string): Promise<SqliteStore> {
    const store = new SqliteStore(path);
    open.push(store);
    await store.migrate();
    return store;
  }

  it('opens the session of a known thread with a read, answered before any group commit runs', async () => {
    const store = await migrated(freshPath());
    const first = await store.openSession({ key, binding: 'ns/a', now: T0 });
    let answered: unknown;
    const again = store.openSession({ key, binding: 'ns/b', now: T0 + 1 }).then((s) => {
      answered = s;
    });
    // Microtasks only: a write waits for the next group commit (a setImmediate) and its fsync.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(answered).toEqual(first);
    await again;
  });

  it('makes every commit durable against a power cut (WAL with synchronous=FULL)', async () => {
    // Each write guards an effect that follows it; NORMAL could lose the last ones to a power cut.
    const store = await migrated(freshPath());
    expect(store.durability).toEqual({ journalMode: 'wal', synchronous: 'full' });
  });

  it('commits writes asked for at the same moment together, each standing or falling on its own', async () => {
    const store = await migrated(freshPath());
    const s = await store.openSession({ key, binding: 'team-a/support', now: T0 });
    // One batch: a good commit, a stale one (same version), a turn of no session, a new session.
    const results = await Promise.allSettled([
      store.commit({ session: { ...s, contextId: 'first' }, now: T0 + 1 }),
      store.commit({ session: { ...s, contextId: 'stale' }, now: T0 + 2 }),
      store.addTurn(
        queuedTurn({ id: 'orphan', sessionId: 'no-such-session', chatMessageId: 'c1', text: 'x', now: T0 }),
      ),
      store.openSession({ key: { ...key, threadId: '9.9' }, binding: 'team-a/support', now: T0 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'stale_write' });
    expect((await store.getSession(s.id))?.contextId).toBe('first');
    expect(await store.getSession(sessionIdOf({ ...key, threadId: '9.9' }))).toBeDefined();
  });

  /** A second connection to the file, to look at what the store wrote. */
  function inspect<T>(path: string, look: (db: DatabaseSync) => T): T {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      return look(db);
    } finally {
      db.close();
    }
  }

  it('keeps everything across a restart: close, then a new store on the same file', async () => {
    const path = freshPath();
    const first = await migrated(path);
    const session = await first.openSession({ key, binding: 'ns/b', now: T0 });
    await first.addTurn(
      queuedTurn({
        id: 'm1',
        sessionId: session.id,
        chatMessageId: '1.3',
        text: 'hello',
        label: '[Slack: Ada (U1)]',
        now: T0,
      }),
    );
    const written = await first.commit({ session: { ...session, contextId: 'ctx' }, now: T0 + 1 });
    expect(await first.acquireLease(session.id, 'me', T0, 60_000)).toBe('first');
    expect(await first.claimInboundEvent('Ev1', T0)).toBe(true);
    const turn = await first.getTurn('m1');
    await first.close();

    const second = await migrated(path);
    expect(await second.getSession(sessionIdOf(key))).toStrictEqual(written);
    expect(await second.getTurn('m1')).toStrictEqual(turn);
    expect(await second.openTurns(session.id)).toStrictEqual([turn]);
    expect(await second.claimInboundEvent('Ev1', T0 + 1)).toBe(false);
    expect(await second.acquireLease(session.id, 'other', T0 + 1, 60_000)).toBe(false);
  });

  it('keeps the label line in front of the text column, where a build before migration 4 reads it', async () => {
    const path = freshPath();
    const store = await migrated(path);
    const session = await store.openSession({ key, binding: 'ns/b', now: T0 });
    const turn = {
      id: 'm1',
      sessionId: session.id,
      kind: 'message' as const,
      chatMessageId: '1.3',
      text: 'hello',
      label: '[Slack: Ada (U1)]',
      metadata: null,
      taskId: null,
      state: 'queued' as const,
      outcome: null,
      attempts: 0,
      firstSentAt: null,
      busyNoticeAt: null,
      answerRef: null,
      traceContext: null,
      now: T0,
    };
    await store.addTurn(turn);
    await store.addTurn({ ...turn, id: 'm2', chatMessageId: '1.4', label: null, text: 'a trigger' });
    const raw = () =>
      inspect(path, (db) => db.prepare('SELECT id, text, label FROM turns ORDER BY seq').all());
    expect(raw()).toEqual([
      { id: 'm1', text: '[Slack: Ada (U1)]\nhello', label: '[Slack: Ada (U1)]' },
      { id: 'm2', text: 'a trigger', label: null },
    ]);
    // An older build sends it and writes the text it sent (the line in front, replies after).
    const older = new DatabaseSync(path);
    older
      .prepare("UPDATE turns SET text = :text, state = 'sending' WHERE id = 'm1'")
      .run({ text: '[Slack: Ada (U1)]\nhello\n\nreplies' });
    // A row an older build stored: no label, the line in its text.
    older.prepare("UPDATE turns SET text = '[Slack: Eve (U6)]\nhi', label = NULL WHERE id = 'm2'").run();
    older.close();
    expect(await store.getTurn('m1')).toMatchObject({ text: 'hello\n\nreplies', label: '[Slack: Ada (U1)]' });
    expect(await store.getTurn('m2')).toMatchObject({ text: '[Slack: Eve (U6)]\nhi', label: null });
  });

  it('puts a session opened before migration 8 on record as driven: its next lease take is no first', async () => {
    const path = freshPath();
    const store = await migrated(path);
    const before = await store.openSession({ key, binding: 'ns/b', now: T0 });
    await store.close();
    // The file as migration 7 left it (8 and 9 undone), the session's lease released (deleted)
    // by that build.
    const older = new DatabaseSync(path);
    older.exec(`DELETE FROM leases; ALTER TABLE leases DROP COLUMN takes;
      DROP TABLE forgotten_threads; DROP INDEX sessions_updated_at;
      DROP INDEX transcript_threads_updated_at; DROP INDEX answer_feedback_session; DROP INDEX turns_words;
      DELETE FROM schema_migrations WHERE version IN (8, 9);`);
    older.close();
    const again = await migrated(path);
    expect(await again.acquireLease(before.id, 'me', T0, 60_000)).toBe('taken');
    const after = await again.openSession({ key: { ...key, threadId: '9.9' }, binding: 'ns/b', now: T0 });
    expect(await again.acquireLease(after.id, 'me', T0, 60_000)).toBe('first');
    await again.close();
  });

  it('puts the file in WAL mode and records each migration once', async () => {
    const path = freshPath();
    const store = await migrated(path);
    await store.migrate();
    inspect(path, (db) => {
      expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
      expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual(
        migrations.map((m) => ({ version: m.version, name: m.name })),
      );
    });
  });

  it('answers sessionsWithWork and openTurns from the partial indexes', async () => {
    const path = freshPath();
    await migrated(path);
    inspect(path, (db) => {
      const plan = (sql: string) =>
        db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all()
          .map((row) => String(row.detail))
          .join('\n');
      const work = plan(
        `SELECT s.id, s.version, s.turn_seq FROM sessions s WHERE s.id IN (
           SELECT id FROM sessions WHERE task IS NOT NULL OR question IS NOT NULL
           UNION SELECT session_id FROM turns WHERE state <> 'settled')`,
      );
      // Each side walks only its partial index (idle sessions and settled turns are not in it).
      expect(work).toMatch(/SCAN sessions USING (COVERING )?INDEX sessions_with_work/);
      expect(work).toMatch(/SCAN turns USING (COVERING )?INDEX turns_open/);
      const open = plan(`SELECT * FROM turns WHERE session_id = 'x' AND state <> 'settled' ORDER BY seq`);
      expect(open).toContain('USING INDEX turns_open');
      expect(open).not.toContain('TEMP B-TREE');
    });
  });

  it('prunes event keys older than 24 hours on one claim in a thousand', async () => {
    const path = freshPath();
    const store = await migrated(path);
    const later = T0 + 24 * 60 * 60 * 1000 + 1;
    const rows = () =>
      inspect(path, (db) =>
        db.prepare(`SELECT count(*) AS n, sum(event_key = 'old') AS old FROM inbound_events`).get(),
      );
    // The first claim of a store prunes (nothing yet), the next prune is 1000 claims later.
    expect(await store.claimInboundEvent('old', T0)).toBe(true);
    for (let i = 0; i < 999; i += 1) expect(await store.claimInboundEvent(`new-${i}`, later)).toBe(true);
    expect(rows()).toEqual({ n: 1000, old: 1 });
    expect(await store.claimInboundEvent('new-999', later)).toBe(true);
    expect(rows()).toEqual({ n: 1000, old: 0 });
  });

  it('reports a broken database as StoreError', async () => {
    const store = new SqliteStore(':memory:');
    open.push(store);
    // Not migrated: the tables are missing.
    const failed = store.getSession('x');
    await expect(failed).rejects.toBeInstanceOf(StoreError);
    await expect(failed).rejects.toMatchObject({
      code: 'store_error',
      message: expect.stringContaining('no such table'),
    });
  });

  it('reports a file it cannot open as StoreError', () => {
    expect(() => new SqliteStore(join(freshPath(), 'missing-dir', 'x.db'))).toThrow(StoreError);
  });
});

chatAddressContract('sqlite file', async () => {
  const store = new SqliteStore(freshPath());
  await store.migrate();
  return { rows: store.addresses(), close: () => store.close() };
});

installationContract('sqlite file', async () => {
  const store = new SqliteStore(freshPath());
  await store.migrate();
  return { rows: store.installations(), close: () => store.close() };
});

feedbackContract('sqlite file', async () => {
  const store = new SqliteStore(freshPath());
  await store.migrate();
  return { rows: store.feedback(), sessions: store, close: () => store.close() };
});
