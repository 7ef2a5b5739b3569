import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { SessionStore } from '../../src/core/store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startContractAgent, type WireVersion } from '../peers/contract-agent/contract-agent.js';
import { startChatServer } from './chat-server.js';
import { CRASH_TIMINGS, crashMessages, crashTurnId, killChild, prng, startEngineChild } from './children.js';
import type { ChildConfig } from './engine-child.js';

/**
 * One seeded run of "kill the broker with SIGKILL at random points": broker processes
 * (test/crash/engine-child.ts) on a durable store, the contract agent and a chat that outlive
 * them, a few threads of messages, kills at random moments (start-up, mid-stream, between a
 * record and its effect), then a last start and a wait until every turn settles. On SQLite one
 * replica; on PostgreSQL two, either of which is killed, each started again after its kill.
 *
 * It returns the figures instead of asserting, so the fault matrix (a few seeds) and the soak
 * (hundreds) read the same run: a turn is lost when it did not complete, duplicated when the
 * agent ran it more than once (1.0 drops a repeated messageId) or the chat shows its answer
 * in more than one message.
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function killRun(o: KillRunOptions): Promise<KillFigures> {
  const started = Date.now();
  const random = prng(o.seed);
  const threads = o.threads ?? 3;
  const perThread = o.messagesPerThread ?? 2;
  const chunks = Array.from({ length: 6 }, (_, i) => `part ${i} `);
  const agent = await startContractAgent({
    version: o.version,
    // 1.0 agents drop a repeated messageId; this 0.3 agent runs it again, as many do.
    dedupe: o.version === '1.0',
    defaultAnswer: { chunks, chunkDelayMs: 15 },
    workOn: true,
    ...(o.polling === true ? { card: { streaming: false } } : {}),
  });
  const chat = await startChatServer();
  const cleanups: Array<() => Promise<unknown>> = [() => agent.close(), () => chat.close()];
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
      if (random() < 0.2) {
        await sleep(random() * 1_200);
      } else {
        // After a random number of calls to the agent, a random moment later (inside a stream,
        // between a send and its record, in a follow); sooner if the agent has gone quiet.
        const before = agent.requests.length;
        const calls = 1 + Math.floor(random() * 10);
        const until = Date.now() + 4_000;
        let seen = before;
        let quietSince = Date.now();
        while (agent.requests.length < before + calls && Date.now() < until) {
          if (agent.requests.length !== seen) {
            seen = agent.requests.length;
            quietSince = Date.now();
          } else if (Date.now() - quietSince > 400) break;
          await sleep(2);
        }
        await sleep(random() * 40);
      }
      await killChild(children[victim]);
      children[victim] = startEngineChild(config(replicas[victim] as string));
    }

    const deadline = Date.now() + 60_000;
    for (;;) {
      const turns = await Promise.all(turnIds.map((id) => reader.getTurn(id).catch(() => undefined)));
      const done = turns.every((t) => t?.state === 'settled');
      if (done && (await reader.sessionsWithWork().catch(() => ['?'])).length === 0) break;
      if (Date.now() > deadline) break;
      await sleep(100);
    }
    // Let the last answer flush reach the chat.
    await sleep(200);
    for (const child of children) await killChild(child);

    const lost: string[] = [];
    const duplicated: string[] = [];
    for (const id of turnIds) {
      const turn = await reader.getTurn(id);
      const shown = [...chat.answers.values()].filter((a) => a.turnId === id);
      const complete = shown.length === 1 && shown[0]?.final === true && shown[0].text === chunks.join('');
      if (turn?.outcome !== 'completed' || !complete) lost.push(id);
      const runs = agent.runs.get(id) ?? 0;
      if ((o.version === '1.0' && runs > 1) || shown.length > 1 || (shown[0]?.created ?? 0) > 1)
        duplicated.push(id);
    }
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
