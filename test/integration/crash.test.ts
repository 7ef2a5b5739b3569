import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type ChatServer, startChatServer } from '../crash/chat-server.js';
import {
  CRASH_TIMINGS,
  crashMessages,
  crashTurnId,
  killChild as kill,
  prng,
  startEngineChild as startChild,
} from '../crash/children.js';
import type { ChildConfig } from '../crash/engine-child.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

const SEEDS = Array.from({ length: Number(process.env.CRASH_SEEDS ?? 4) }, (_, i) => 1000 + i);
const THREADS = 4;
const MESSAGES_PER_THREAD = 3;
const BINDING = 'team-a/crash';

describe.each(['1.0', '0.3'] as const)(
  'crash recovery at %s: the engine killed with SIGKILL at random points',
  (version) => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    it.each(SEEDS)(
      `[R-8][R-7][S-2] every message runs ${version === '1.0' ? 'exactly once' : 'at least once'} and every answer shows once, complete (seed %i)`,
      async (seed) => {
        const random = prng(seed);
        const chunks = Array.from({ length: 6 }, (_, i) => `part ${i} `);
        // 1.0 agents drop a repeated messageId; this 0.3 agent runs it again, as many do.
        const agent: ContractAgent = await startContractAgent({
          version,
          dedupe: version === '1.0',
          defaultAnswer: { chunks, chunkDelayMs: 8 },
          workOn: true,
        });
        cleanups.push(() => agent.close());
        const chat: ChatServer = await startChatServer();
        cleanups.push(() => chat.close());
        const dir = await mkdtemp(join(tmpdir(), 'ak-crash-'));
        cleanups.push(() => rm(dir, { recursive: true, force: true }));
        const path = join(dir, 'store.db');

        const messages = crashMessages(THREADS, MESSAGES_PER_THREAD);
        const turnIds = messages.map(crashTurnId);
        const config: ChildConfig = {
          store: { kind: 'sqlite', path },
          agentEndpoint: agent.endpoint,
          chatUrl: chat.url,
          owner: 'crash-replica',
          binding: BINDING,
          messages,
          timings: CRASH_TIMINGS,
        };

        const kills = 3 + Math.floor(random() * 4);
        for (let k = 0; k < kills; k++) {
          const child = startChild(config);
          cleanups.push(() => kill(child));
          if (random() < 0.2) {
            // Somewhere in start-up: migrations, recovery, receiving the messages again.
            await new Promise((resolve) => setTimeout(resolve, random() * 1_200));
          } else {
            // In the middle of the work: after a random number of calls to the agent, a random
            // moment later (inside a stream, between a send and its record, in a follow).
            const before = agent.requests.length;
            const calls = 1 + Math.floor(random() * 10);
            const until = Date.now() + 8_000;
            while (agent.requests.length < before + calls && Date.now() < until && child.exitCode === null) {
              await new Promise((resolve) => setTimeout(resolve, 2));
            }
            await new Promise((resolve) => setTimeout(resolve, random() * 40));
          }
          await kill(child);
        }
        const last = startChild(config);
        cleanups.push(() => kill(last));

        const reader = new SqliteStore(path);
        cleanups.push(() => reader.close());
        const deadline = Date.now() + 45_000;
        for (;;) {
          const turns = await Promise.all(turnIds.map((id) => reader.getTurn(id).catch(() => undefined)));
          if (turns.every((t) => t?.state === 'settled') && (await reader.sessionsWithWork()).length === 0)
            break;
          if (Date.now() > deadline)
            throw new Error(`not settled: ${JSON.stringify(turns.map((t) => t?.state ?? 'missing'))}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        // Let the last answer flush reach the chat.
        await new Promise((resolve) => setTimeout(resolve, 200));
        await kill(last);

        for (const id of turnIds) {
          const turn = await reader.getTurn(id);
          expect(turn?.outcome, `turn ${id}`).toBe('completed');
          const runs = agent.runs.get(id) ?? 0;
          if (version === '1.0') expect(runs, `runs of ${id}`).toBe(1);
          else expect(runs, `runs of ${id}`).toBeGreaterThanOrEqual(1);
          const shown = [...chat.answers.values()].filter((a) => a.turnId === id);
          expect(shown, `answers of ${id}`).toHaveLength(1);
          expect(shown[0]?.created).toBe(1);
          expect(shown[0]?.final).toBe(true);
          const tasks = [...agent.tasks.values()].filter((t) => t.history.some((m) => m.messageId === id));
          const texts = tasks.map((t) =>
            t.artifacts.flatMap((a) => a.parts.map((p) => ('text' in p ? p.text : ''))).join(''),
          );
          expect(texts, `the answer of ${id} is one of its tasks' artifacts`).toContain(shown[0]?.text);
          expect(shown[0]?.text).toBe(chunks.join(''));
        }
        if (process.env.CRASH_STATS) {
          const methods = new Map<string, number>();
          for (const r of agent.requests)
            methods.set(r.rpcMethod ?? r.httpMethod, (methods.get(r.rpcMethod ?? r.httpMethod) ?? 0) + 1);
          const relinked = [...chat.answers.values()].reduce((n, a) => n + a.relinked, 0);
          console.log(`seed ${seed} kills ${kills}:`, Object.fromEntries(methods), `relinked ${relinked}`);
        }
        // no message was sent into a context while another message's task ran there.
        expect(agent.overlaps).toEqual([]);
        expect(chat.notices).toEqual([]);
      },
    );
  },
);
