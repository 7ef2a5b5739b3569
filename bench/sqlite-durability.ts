import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionStore, TurnRecord } from '../src/core/store.js';
import { SqliteStore, type SqliteStoreOptions } from '../src/store/sqlite/sqlite-store.js';

/**
 * What durable guarding writes cost: the writes of one turn as the engine makes them (store the
 * message, mark it sending, record the task, settle it) against a SQLite file with
 * synchronous=FULL (the default: each commit fsynced) and with NORMAL, in the same run and on
 * the same disk (under ./.agentkourier, not a tmpfs where an fsync costs nothing). Once with
 * one session at a time (every write pays its own fsync), once with many sessions at once
 * (writes of the same moment share one fsync: the store's group commit).
 */

const TURNS = 400;

async function oneTurn(store: SessionStore, i: number): Promise<void> {
  const now = Date.now();
  const session = await store.openSession({
    key: { surface: 'bench', workspaceId: 'local', channelId: 'c', threadId: `t${i}` },
    binding: 'bench/agent',
    now,
  });
  const { turn } = await store.addTurn(
    {
      id: `turn-${i}`,
      sessionId: session.id,
      kind: 'message',
      chatMessageId: `m${i}`,
      text: 'hello',
      label: null,
      metadata: null,
      taskId: null,
      state: 'queued',
      outcome: null,
      attempts: 0,
      firstSentAt: null,
      busyNoticeAt: null,
      answerRef: null,
      traceContext: null,
      now,
    },
    { inboundEvent: `bench:${i}` },
  );
  const sending: TurnRecord = { ...turn, state: 'sending', attempts: 1, firstSentAt: now };
  const s1 = await store.commit({ session, turns: [sending], now });
  const task = {
    taskId: `task-${i}`,
    turnId: turn.id,
    state: 'working',
    lastActivityAt: now,
    streamLostAt: null,
  };
  const s2 = await store.commit({
    session: { ...(s1 ?? session), contextId: `ctx-${i}`, task },
    turns: [{ ...sending, state: 'accepted', taskId: task.taskId }],
    now,
  });
  await store.commit({
    session: { ...(s2 ?? session), task: null },
    turns: [{ ...sending, state: 'settled', outcome: 'completed', taskId: task.taskId }],
    now,
  });
}

async function turnsPerSecond(options: SqliteStoreOptions, dir: string, parallel: number): Promise<number> {
  const store: SessionStore = new SqliteStore(join(dir, `${options.synchronous}-${parallel}.db`), options);
  await store.migrate();
  try {
    const started = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < TURNS; i = next++) await oneTurn(store, i);
    };
    await Promise.all(Array.from({ length: parallel }, worker));
    return (TURNS / (performance.now() - started)) * 1000;
  } finally {
    await store.close();
  }
}

export async function benchSqliteDurability(): Promise<void> {
  const base = join(process.cwd(), '.agentkourier');
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, 'bench-sqlite-'));
  try {
    console.log(
      `\nSQLite durability: the writes of ${TURNS} turns (store, sending, accepted, settled), same disk`,
    );
    for (const parallel of [1, 50]) {
      // Interleaved, best of three each, so a busy moment of the machine does not pick the winner.
      let full = 0;
      let normal = 0;
      for (let run = 0; run < 3; run++) {
        full = Math.max(full, await turnsPerSecond({ synchronous: 'full' }, dir, parallel));
        normal = Math.max(normal, await turnsPerSecond({ synchronous: 'normal' }, dir, parallel));
      }
      const rate = (n: number): string => Math.round(n).toLocaleString('en');
      console.log(`  ${parallel === 1 ? 'one session at a time' : `${parallel} sessions at once`}:`);
      console.log(`    synchronous=NORMAL: ${rate(normal)} turns/s`);
      console.log(`    synchronous=FULL (the default): ${rate(full)} turns/s`);
      console.log(
        `    ratio full/normal: ${(full / normal).toFixed(2)} (the price of surviving a power cut)`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
