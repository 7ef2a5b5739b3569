import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type ChatServer, startChatServer } from '../crash/chat-server.js';
import { crashTurnId, killChild, startEngineChild } from '../crash/children.js';
import type { ChildConfig } from '../crash/engine-child.js';
import { answer, type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

/**
 * Fault matrix: the SQLite disk fills up under a running broker. The "disk" is the broker
 * process's file-size limit (RLIMIT_FSIZE, set with prlimit on the child: no mount, no
 * privilege): once lowered to the files' current sizes, no file the store writes can grow.
 * What must hold: a message that cannot be stored is refused (the surface says so; here the
 * child answers REFUSED), the process stays up, the file is not corrupt, and when the limit is
 * raised again (space returns) the broker takes the redelivered message and finishes every
 * turn, without a restart.
 */

const HAS_PRLIMIT = (() => {
  try {
    execFileSync('prlimit', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!HAS_PRLIMIT)('SQLite disk full (skipped only without prlimit, from util-linux)', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  it('refuses what it cannot store, stays up and intact, and recovers when space returns', async () => {
    const agent: ContractAgent = await startContractAgent({ version: '1.0', workOn: true });
    cleanups.push(() => agent.close());
    const chat: ChatServer = await startChatServer();
    cleanups.push(() => chat.close());
    const dir = await mkdtemp(join(tmpdir(), 'ak-disk-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'store.db');
    const config: ChildConfig = {
      store: { kind: 'sqlite', path },
      agentEndpoint: agent.endpoint,
      chatUrl: chat.url,
      owner: 'disk-replica',
      binding: 'team-a/disk',
      messages: [],
      timings: { settleDelayMs: 30, retryBaseMs: 20, retryMaxMs: 200, scanIntervalMs: 100 },
      stdin: true,
    };
    // The soft limit starts unlimited; the hard one too, so it can be raised again later.
    const child: ChildProcess = startEngineChild(config, {
      under: ['prlimit', '--fsize=unlimited:unlimited'],
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    cleanups.push(() => killChild(child));
    const replies: string[] = [];
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (l) => replies.push(l));
    const say = async (m: { thread: string; ts: string; text: string }): Promise<string> => {
      const before = replies.length;
      child.stdin?.write(`${JSON.stringify(m)}\n`);
      const until = Date.now() + 15_000;
      while (replies.length === before) {
        if (Date.now() > until) throw new Error(`no answer from the broker to ${m.ts}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return replies[before] as string;
    };
    const reader = new SqliteStore(path);
    cleanups.push(() => reader.close());
    const settled = async (id: string, timeoutMs = 20_000) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const turn = await reader.getTurn(id).catch(() => undefined);
        if (turn?.state === 'settled') return turn;
        if (Date.now() > until) throw new Error(`turn ${id} did not settle: ${turn?.state ?? 'missing'}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };

    // A healthy start.
    expect(await say({ thread: 'a', ts: '1.0', text: 'first' })).toBe('TAKEN 1.0');
    expect((await settled(crashTurnId({ thread: 'a', ts: '1.0' }))).outcome).toBe('completed');

    // A turn in flight when the disk fills: its answer streams for a second and a half.
    agent.enqueueFor(
      'SendStreamingMessage',
      answer({ chunks: ['slow ', 'answer ', 'ends'], chunkDelayMs: 500 }),
    );
    expect(await say({ thread: 'b', ts: '1.0', text: 'in flight' })).toBe('TAKEN 1.0');

    // The disk is full: no file may grow past its size now.
    const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
    const cap = Math.max(size(path), size(`${path}-wal`), 4096);
    execFileSync('prlimit', ['--pid', String(child.pid), `--fsize=${cap}:unlimited`]);
    const big = 'x'.repeat(cap * 2);
    const refused = await say({ thread: 'c', ts: '1.0', text: big });
    expect(refused).toMatch(/^REFUSED 1\.0 /);
    expect(child.exitCode).toBeNull();
    // Nothing corrupt: the file checks out, read by another connection while the broker runs.
    const check = new DatabaseSync(path, { readOnly: true });
    try {
      expect(check.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    } finally {
      check.close();
    }
    expect(await reader.getTurn(crashTurnId({ thread: 'c', ts: '1.0' }))).toBeUndefined();

    // Space returns: the chat's redelivery is taken, and every turn finishes, the one that was
    // in flight included, without a restart.
    execFileSync('prlimit', ['--pid', String(child.pid), '--fsize=unlimited:unlimited']);
    expect(await say({ thread: 'c', ts: '1.0', text: big })).toBe('TAKEN 1.0');
    expect((await settled(crashTurnId({ thread: 'c', ts: '1.0' }))).outcome).toBe('completed');
    expect((await settled(crashTurnId({ thread: 'b', ts: '1.0' }))).outcome).toBe('completed');
    expect(child.exitCode).toBeNull();
    const shownB = [...chat.answers.values()].filter(
      (a) => a.turnId === crashTurnId({ thread: 'b', ts: '1.0' }),
    );
    expect(shownB).toHaveLength(1);
    expect(shownB[0]?.text).toBe('slow answer ends');
  });
});
