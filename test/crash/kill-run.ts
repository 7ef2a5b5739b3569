import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { SessionStore } from '../../src/core/store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { WireVersion } from '../peers/contract-agent/contract-agent.js';
import { CRASH_TIMINGS, crashMessages, crashTurnId, killChild, prng, startEngineChild } from './children.js';
import { judgeTurns, startCrashPeers, untilAnswered, untilSettled, untilStrike } from './crash-scenario.js';
import type { ChildConfig } from './engine-child.js';

/**
 * One seeded run of "kill the broker with SIGKILL at random points": broker processes
 * (test/crash/engine-child.ts) on a durable store, the contract agent and a chat that outlive
 * them, a few threads of messages, kills at random moments (start-up, mid-stream, between a
 * record and its effect), then a last start and a wait until every turn settles. On SQLite one
 * replica; on PostgreSQL two, either of which is killed, each started again after its kill.
 *
 * It returns the figures instead of asserting, so the fault matrix (a few seeds) and the soak
 * (hundreds) read the same run; what counts as lost or duplicated is ./crash-scenario.ts's
 * judgeTurns, shared with the power-cut run (./power-run.ts).
 */

export type KillStore = 'sqlite' | 'postgres';

export interface KillRunOptions {
  seed: number;
  store: KillStore;
  version: WireVersion;
  /** PostgreSQL to use (a schema of its own per run); required for 'postgres'. */
  postgresUrl?: string;
  threads?: number;
  messagesPerThread?: number;
  /** P rows: the agent does not stream and the Binding polls it. */
  polling?: boolean;
}

export interface KillFigures {
  seed: number;
  store: KillStore;
  kills: number;
  turns: number;
  lost: string[];
  duplicated: string[];
  /** Messages sent into a context while another message's task ran there. */
  overlaps: number;
  /** Notices the chat was shown: none should appear in a run of healthy agents. */
  notices: number;
  ms: number;
}

export async function killRun(o: KillRunOptions): Promise<KillFigures> {
  const started = Date.now();
  const random = prng(o.seed);
  const threads = o.threads ?? 3;
  const perThread = o.messagesPerThread ?? 2;
  const peers = await startCrashPeers({
    version: o.version,
    ...(o.polling === true ? { polling: true } : {}),
  });
  const { agent, chat } = peers;
  const cleanups: Array<() => Promise<unknown>> = [() => peers.close()];
  const children: Array<ChildProcess | undefined> = [];
  try {
    let store: ChildConfig['store'];
    let reader: SessionStore;
    if (o.store === 'sqlite') {
      const dir = await mkdtemp(join(tmpdir(), 'ak-kill-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      store = { kind: 'sqlite', path: join(dir, 'store.db') };
      reader = new SqliteStore(store.path);
    } else {
      if (o.postgresUrl === undefined) throw new Error('killRun on postgres needs postgresUrl');
      const schema = `kill_${process.pid}_${o.seed}_${Math.floor(random() * 1e6)}`;
      store = { kind: 'postgres', url: o.postgresUrl, schema };
      reader = new PostgresStore({ connectionString: o.postgresUrl, schema });
      const url = o.postgresUrl;
      cleanups.push(() => dropSchema(url, schema));
    }
    cleanups.push(() => reader.close());

    const messages = crashMessages(threads, perThread);
    const turnIds = messages.map(crashTurnId);
    const replicas = o.store === 'sqlite' ? ['crash-replica'] : ['replica-a', 'replica-b'];
    const config = (owner: string): ChildConfig => ({
      store,
      agentEndpoint: agent.endpoint,
      chatUrl: chat.url,
      owner,
      binding: 'team-a/crash',
      messages,
      timings: CRASH_TIMINGS,
      ...(o.polling === true ? { polling: { intervalMs: 20, timeoutMs: 60_000 } } : {}),
    });
    // Every replica runs; kills pick one at random, which starts again at once.
    replicas.forEach((owner, i) => {
      children[i] = startEngineChild(config(owner));
    });
    const kills = 3 + Math.floor(random() * 4);
    for (let k = 0; k < kills; k++) {
      const victim = Math.floor(random() * replicas.length);
      await untilStrike(random, agent);
      await killChild(children[victim]);
      children[victim] = startEngineChild(config(replicas[victim] as string));
    }

    await untilSettled(reader, turnIds, 60_000);
    // The last answer's flush may still be on its way to the chat.
    await untilAnswered(peers, turnIds, 2_000);
    for (const child of children) await killChild(child);

    const { lost, duplicated } = await judgeTurns(reader, turnIds, peers, o.version);
    return {
      seed: o.seed,
      store: o.store,
      kills,
      turns: turnIds.length,
      lost,
      duplicated,
      overlaps: agent.overlaps.length,
      notices: chat.notices.length,
      ms: Date.now() - started,
    };
  } finally {
    for (const child of children) await killChild(child);
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
