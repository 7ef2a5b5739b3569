import type { ChildProcess } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { WireVersion } from '../peers/contract-agent/contract-agent.js';
import { mountPowerCutFs } from '../peers/power-cut-fs/power-cut-fs.js';
import {
  type ChatMessage,
  CRASH_TIMINGS,
  crashMessages,
  crashTurnId,
  killChild,
  prng,
  startEngineChild,
} from './children.js';
import {
  type CrashPeers,
  judgeTurns,
  sleep,
  startCrashPeers,
  untilAnswered,
  untilSettled,
  untilStrike,
} from './crash-scenario.js';

/**
 * One seeded run of "cut the power under the broker": the SIGKILL scenario (./kill-run.ts, its
 * pieces in ./crash-scenario.ts) with the broker on SQLite and its state directory on the
 * power-cut file system (test/peers/power-cut-fs/), where file data reaches the disk only when
 * fsynced. At random points the power is cut (every unsynced write dropped, or, in half the
 * cuts, a random part of them written first, as a disk's cache may; every later write
 * failing), the broker is killed with SIGKILL a moment later, the disk is checked, the power
 * comes back and the broker starts again on what remains.
 *
 * A SIGKILL loses nothing the process wrote, so the kill run can let the chat deliver every
 * message again at each start. Here a message is delivered again only until the broker took
 * it (engine-child's stdin mode answers TAKEN once the turn is stored), as Slack stops after
 * its ack; a taken message whose turn the cut rolled back is lost for good, and counted:
 * after every cut, each acknowledged turn must be on the disk and the file must pass
 * integrity_check. At the end every turn must have completed once, as in the kill run.
 */

export interface PowerRunOptions {
  seed: number;
  version?: WireVersion;
  threads?: number;
  messagesPerThread?: number;
  /** How long each fsync of the disk takes (default 3 ms). */
  fsyncMs?: number;
  /** How long the last broker gets to settle every turn (default a minute). */
  settleMs?: number;
  /** A scheme that must fail (the negative control): 'lying-disk' makes the file system's fsync sync nothing. */
  unsafe?: 'lying-disk';
}

export interface PowerFigures {
  seed: number;
  cuts: number;
  turns: number;
  /** Messages the broker acknowledged (TAKEN) over the run. */
  acknowledged: number;
  /** Acknowledged turns missing from the disk after a cut (each counted once). */
  lostAcknowledged: string[];
  /** Where they went missing: "cut 2: 3 of 5 acknowledged". */
  lossesAt: string[];
  /** integrity_check answers other than ok, after a cut or at the end. */
  damaged: string[];
  lost: string[];
  duplicated: string[];
  overlaps: number;
  notices: number;
  /** Unsynced pages the cuts dropped (a cut that dropped nothing tested little), and wrote first. */
  pagesDropped: number;
  pagesKept: number;
  ms: number;
}

interface Broker {
  child: ChildProcess;
  /** Settles once the broker answered its first message (at once when it was fed none). */
  started: Promise<void>;
  /** Feeds it those of `messages` it was not fed yet and no broker acknowledged, in order. */
  feed(messages: ChatMessage[]): void;
  /** Settles at its next TAKEN, or after `ms`. */
  nextAck(ms: number): Promise<void>;
}

/** A broker taking messages over stdin: engine-child answers each, in order, TAKEN or REFUSED. */
function startBroker(config: Parameters<typeof startEngineChild>[0], acked: Set<string>): Broker {
  const child = startEngineChild(config, { stdio: ['pipe', 'pipe', 'inherit'] });
  const fed: ChatMessage[] = [];
  let answered = 0;
  let firstAnswer = () => {};
  const onAck: Array<() => void> = [];
  const started = new Promise<void>((resolve) => {
    firstAnswer = resolve;
  });
  child.once('exit', () => firstAnswer());
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const m = fed[answered];
    if (!/^(TAKEN|REFUSED) /.test(line) || m === undefined) return;
    answered++;
    if (line.startsWith('TAKEN ')) {
      acked.add(crashTurnId(m));
      for (const tell of onAck.splice(0)) tell();
    }
    firstAnswer();
  });
  child.stdin?.on('error', () => undefined);
  return {
    child,
    started,
    feed(messages) {
      const more = messages.filter((m) => !acked.has(crashTurnId(m)) && !fed.includes(m));
      if (fed.length === 0 && more.length === 0) firstAnswer();
      for (const m of more) child.stdin?.write(`${JSON.stringify(m)}\n`);
      fed.push(...more);
    },
    nextAck: (ms) =>
      new Promise<void>((resolve) => {
        onAck.push(resolve);
        setTimeout(resolve, ms);
      }),
  };
}

/** Waits for the last broker to settle every turn, then judges them (all lost: a file it cannot open). */
async function judgeRun(
  path: string,
  turnIds: string[],
  peers: CrashPeers,
  version: WireVersion,
  settleMs: number,
): Promise<{ lost: string[]; duplicated: string[] }> {
  let reader: SqliteStore;
  try {
    reader = new SqliteStore(path);
  } catch {
    return { lost: [...turnIds], duplicated: [] };
  }
  try {
    await untilSettled(reader, turnIds, settleMs);
    // The last answer's flush may still be on its way to the chat.
    await untilAnswered(peers, turnIds, 2_000);
    return await judgeTurns(reader, turnIds, peers, version);
  } finally {
    await reader.close().catch(() => undefined);
  }
}

/** What the disk holds now, read from a copy (SQLite's recovery must not touch the original). */
async function checkDisk(
  backing: string,
  acked: Set<string>,
): Promise<{ integrity: string; missing: string[] }> {
  const copy = await mkdtemp(join(tmpdir(), 'ak-power-check-'));
  try {
    await cp(backing, copy, { recursive: true });
    const path = join(copy, 'store.db');
    const db = new DatabaseSync(path);
    let integrity: string;
    try {
      const rows = db.prepare('PRAGMA integrity_check').all();
      integrity = rows.map((r) => String(r.integrity_check)).join('; ');
    } catch (error) {
      integrity = `integrity_check failed: ${(error as Error).message}`;
    } finally {
      db.close();
    }
    let store: SqliteStore;
    try {
      store = new SqliteStore(path);
    } catch (error) {
      // A file the store cannot open holds none of them.
      return {
        integrity: `${integrity}; the store cannot open it: ${(error as Error).message}`,
        missing: [...acked],
      };
    }
    try {
      const missing: string[] = [];
      for (const id of acked)
        if ((await store.getTurn(id).catch(() => undefined)) === undefined) missing.push(id);
      return { integrity, missing };
    } finally {
      await store.close().catch(() => undefined);
    }
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

export async function powerRun(o: PowerRunOptions): Promise<PowerFigures> {
  const started = Date.now();
  const random = prng(o.seed);
  const version = o.version ?? '1.0';
  const peers = await startCrashPeers({ version });
  const cleanups: Array<() => Promise<unknown>> = [() => peers.close()];
  let broker: Broker | undefined;
  try {
    const backing = await mkdtemp(join(tmpdir(), 'ak-power-disk-'));
    const mountpoint = await mkdtemp(join(tmpdir(), 'ak-power-mnt-'));
    cleanups.push(() => rm(backing, { recursive: true, force: true }));
    cleanups.push(() => rm(mountpoint, { recursive: true, force: true }));
    // Each fsync takes a few ms, as on a disk: a write acknowledged before its fsync returned
    // is then on no disk for long enough that cuts catch it.
    const fs = await mountPowerCutFs({
      backing,
      mountpoint,
      fsyncMs: o.fsyncMs ?? 3,
      ignoreFsync: o.unsafe === 'lying-disk',
    });
    cleanups.push(() => fs.unmount());

    const threads = o.threads ?? 3;
    const messages = crashMessages(threads, o.messagesPerThread ?? 3);
    const turnIds = messages.map(crashTurnId);
    const acked = new Set<string>();
    const config = {
      store: { kind: 'sqlite' as const, path: join(mountpoint, 'store.db') },
      agentEndpoint: peers.agent.endpoint,
      chatUrl: peers.chat.url,
      owner: 'power-replica',
      binding: 'team-a/crash',
      messages: [],
      timings: CRASH_TIMINGS,
      stdin: true,
    };
    const lostAcknowledged = new Set<string>();
    const lossesAt: string[] = [];
    const damaged: string[] = [];
    let pagesDropped = 0;
    let pagesKept = 0;
    // Half the cuts drop every unsynced page; the others write a random part of them first.
    const cut = async () => {
      const torn = random() < 0.5 ? undefined : { keep: random(), seed: random() * 2 ** 31 };
      const pages = await fs.cut(torn);
      pagesDropped += pages.dropped;
      pagesKept += pages.kept;
    };
    const check = async (when: string) => {
      const disk = await checkDisk(backing, acked);
      if (disk.integrity !== 'ok') damaged.push(`${when}: ${disk.integrity}`);
      if (disk.missing.length > 0)
        lossesAt.push(`${when}: ${disk.missing.length} of ${acked.size} acknowledged`);
      for (const id of disk.missing) lostAcknowledged.add(id);
    };

    // The chat sends the threads' messages in waves (every thread's first, then second, …), one
    // before each strike, so cuts also come while the broker takes messages; the rest at the end.
    const released: ChatMessage[] = [];
    const release = () => {
      const wave = messages.filter((m) => m.ts === `${released.length / threads + 1}.0`);
      released.push(...wave);
    };
    release();
    broker = startBroker(config, acked);
    const cuts = 2 + Math.floor(random() * 3);
    for (let k = 0; k < cuts; k++) {
      if (k > 0) release();
      broker.feed(released);
      // Some cuts during start-up (migrations, recovery); the others once the broker is taking
      // messages (the process takes a second to start: cut before, most would hit nothing).
      if (random() >= 0.15) await Promise.race([broker.started, sleep(20_000)]);
      // A third of the strikes come the moment the broker acknowledges a message: a write it
      // acknowledged before its fsync returned is lost then.
      if (random() < 1 / 3) await broker.nextAck(2_000);
      else await untilStrike(random, peers.agent);
      await cut();
      // The broker runs on for a moment without power: its writes must fail, not land.
      await sleep(random() * 30);
      await killChild(broker.child);
      await check(`cut ${k + 1}`);
      await fs.restore();
      broker = startBroker(config, acked);
      broker.feed(released);
    }
    broker.feed(messages);

    const allTaken = Date.now() + 30_000;
    while (acked.size < turnIds.length && Date.now() < allTaken) await sleep(50);
    const judged = await judgeRun(config.store.path, turnIds, peers, version, o.settleMs ?? 60_000);
    // A last cut with the broker running: what it acknowledged must still be there.
    await cut();
    await killChild(broker.child);
    await check('end');

    return {
      seed: o.seed,
      cuts,
      turns: turnIds.length,
      acknowledged: acked.size,
      lostAcknowledged: [...lostAcknowledged],
      lossesAt,
      damaged,
      ...judged,
      overlaps: peers.agent.overlaps.length,
      notices: peers.chat.notices.length,
      pagesDropped,
      pagesKept,
      ms: Date.now() - started,
    };
  } finally {
    await killChild(broker?.child);
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}
