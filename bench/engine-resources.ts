/**
 * The engine benchmarks' resource figures, run from engine.ts: resident memory per streaming
 * session (5) and resume after SIGKILL (6), each against its baseline in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentServer } from './agent-server.js';
import { fmt, kib, RESUME_TURNS, runChild, SESSIONS } from './engine-children.js';
import { figure } from './figures.js';

// ---- 5. memory ----------------------------------------------------------------------------------

interface Mem {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  newSpace: number;
  /** From /proc/self/status: 0 where the kernel does not give them. */
  RssAnon: number;
  RssFile: number;
  RssShmem: number;
}

interface MemoryResult {
  sessions: number;
  /** How many sessions were held at the first reading (`halfway`). */
  half: number;
  before: Mem;
  halfway: Mem;
  during: Mem;
  after: Mem;
  outcomes?: Record<string, number>;
}

/**
 * The young generation at a fixed size in the memory children (16 MiB semi-spaces): left to V8,
 * it grew from 32 to 128 MiB as a thousand streams started at once, and its pages, resident once
 * allocation had touched them, were read as the sessions' memory (about 40 KiB of the bare
 * client's 70 per stream). It is a cost of a busy process, bounded, not one per session.
 */
const MEMORY_V8_FLAGS = ['--min-semi-space-size=16', '--max-semi-space-size=16'];

async function memoryRun(
  server: AgentServer,
  kind: 'bare' | 'engine',
  chunks: number,
  holdAfter: number,
): Promise<MemoryResult> {
  const child = runChild(
    ['memory', server.endpoint, kind, String(SESSIONS), String(chunks), String(holdAfter)],
    (m) => {
      if (m.type === 'release') server.release();
    },
    MEMORY_V8_FLAGS,
  );
  const { message } = await child.next('result');
  await child.exited;
  return message as unknown as MemoryResult;
}

/**
 * Runs of the memory children, bare and engine alternated. One run's resident figure moved by
 * a factor of two and more between runs of the same code (its heap part did not; see the
 * eighth round in docs/performance.md), so one sample would decide met or missed by chance:
 * the figure is the median engine run, and every run is printed.
 */
const MEMORY_RUNS = 3;

export async function benchMemory(server: AgentServer): Promise<void> {
  const chunks = 50;
  const holdAfter = 20;
  const bares: MemoryResult[] = [];
  const engines: MemoryResult[] = [];
  for (let i = 0; i < MEMORY_RUNS; i++) {
    bares.push(await memoryRun(server, 'bare', chunks, holdAfter));
    engines.push(await memoryRun(server, 'engine', chunks, holdAfter));
  }
  // What each session added between the two readings under load (see memoryEngine in
  // engine-child.ts); and, for comparison, against the process before any session started.
  const per = (r: MemoryResult, k: keyof Mem): number => (r.during[k] - r.halfway[k]) / (r.sessions - r.half);
  const fromStart = (r: MemoryResult, k: keyof Mem): number => (r.during[k] - r.before[k]) / r.sessions;
  const retained = (r: MemoryResult, k: keyof Mem): number => (r.after[k] - r.before[k]) / r.sessions;
  const middle = (runs: MemoryResult[]): MemoryResult => {
    const sorted = [...runs].sort((x, y) => per(x, 'rss') - per(y, 'rss'));
    return sorted[Math.floor(sorted.length / 2)] as MemoryResult;
  };
  const bare = middle(bares);
  const engine = middle(engines);
  const list = (runs: MemoryResult[], k: keyof Mem): string => runs.map((r) => kib(per(r, k))).join(', ');
  console.log(
    `\nResident memory per streaming session: sessions held open after ${holdAfter} of ${chunks} chunks,` +
      ` read after gc with ${fmt(bare.half)} held and with ${fmt(SESSIONS)}; per session, the difference` +
      ` over the ${fmt(SESSIONS - bare.half)} added (young generation fixed at 16 MiB semi-spaces);` +
      ` ${MEMORY_RUNS} runs each, bare and engine alternated, the median run shown`,
  );
  console.log(
    `  bare A2AClient, per stream: rss ${kib(per(bare, 'rss'))} KiB, heapUsed ${kib(per(bare, 'heapUsed'))} KiB,` +
      ` external ${kib(per(bare, 'external'))} KiB (against the start: rss ${kib(fromStart(bare, 'rss'))} KiB)`,
  );
  const rssPer = per(engine, 'rss');
  const memVerdict = figure(
    'memory.per-session',
    'resident memory per streaming session',
    rssPer / 1024,
    'KiB',
    {
      op: '<=',
      value: 64,
    },
  );
  console.log(
    `  SessionEngine on SQLite, per session: rss ${kib(rssPer)} KiB ${memVerdict},` +
      ` heapUsed ${kib(per(engine, 'heapUsed'))} KiB, external ${kib(per(engine, 'external'))} KiB` +
      ` (against the start: rss ${kib(fromStart(engine, 'rss'))} KiB, heapUsed ${kib(fromStart(engine, 'heapUsed'))} KiB)`,
  );
  console.log(
    `  every run, per session: engine rss ${list(engines, 'rss')} KiB, heapUsed ${list(engines, 'heapUsed')} KiB;` +
      ` bare rss ${list(bares, 'rss')} KiB, heapUsed ${list(bares, 'heapUsed')} KiB`,
  );
  console.log(
    `  engine process: rss ${(engine.before.rss / 2 ** 20).toFixed(0)} MiB before, ` +
      `${(engine.during.rss / 2 ** 20).toFixed(0)} MiB with ${fmt(SESSIONS)} streaming (young generation` +
      ` ${(engine.during.newSpace / 2 ** 20).toFixed(0)} MiB); after all settled: ` +
      `heapUsed +${kib(retained(engine, 'heapUsed'))} KiB per session, rss +${kib(retained(engine, 'rss'))} KiB ` +
      '(rss keeps its high-water mark)',
  );
  const outcomes = Object.entries(engine.outcomes ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  console.log(`  outcomes after release: ${outcomes}`);
  // What the heap and ArrayBuffers leave out of the engine's figure: memory the allocator holds
  // for native code (SQLite, Node's sockets and streams, V8's own tables), and mapped files.
  const split = (r: MemoryResult): string =>
    `anonymous ${kib(per(r, 'RssAnon'))} KiB, file-backed ${kib(per(r, 'RssFile'))} KiB, shared ${kib(per(r, 'RssShmem'))} KiB`;
  console.log(`  resident, by the kernel's split, per session: bare ${split(bare)}; engine ${split(engine)}`);
}

// ---- 6. resume after SIGKILL --------------------------------------------------------------------

interface Settled {
  scriptStartedAt: number;
  cpuMs: number;
  startCalledAt: number;
  startReturnedAt: number;
  firstSettledAt: number | null;
  settledAt: number;
  answerChars: number;
  outcomes: Record<string, number>;
  events: Record<string, number>;
  storeCalls: Record<string, number>;
  /** The open turns the crash left, and how many of them had no answer ref saved. */
  left: { open?: number; withoutAnswerRef?: number };
}

async function recoverRun(
  server: AgentServer,
  db: string,
  expect: number,
  owner?: string,
): Promise<{ wallMs: number; s: Settled }> {
  const child = runChild([
    'recover',
    server.endpoint,
    db,
    String(expect),
    ...(owner === undefined ? [] : [owner]),
  ]);
  const { message, at } = await child.next('settled', 150_000);
  await child.exited;
  return { wallMs: at - child.spawnedAt, s: message as unknown as Settled };
}

/** The length of the answer the agent server gives for a 50-chunk turn. */
const ANSWER_CHARS = Array.from({ length: 50 }, (_, i) => `token ${i} of the answer, with some words. `).join(
  '',
).length;

/**
 * One crash: a child takes SESSIONS turns until each is accepted (streams hanging after a few
 * chunks) and is SIGKILLed; the agent finishes every task; a new child on the same file recovers.
 */
async function crashAndRecover(server: AgentServer, db: string, turns: number, owner?: string) {
  const ownerArg = owner === undefined ? [] : [owner];
  const loader = runChild(['load', server.endpoint, db, String(turns), '5', ...ownerArg]);
  const accepted = await loader.next('accepted', 120_000);
  loader.proc.kill('SIGKILL');
  const gone = await loader.exited;
  // The agent finished every task while the broker was down.
  server.completeAll();
  const before = { ...server.calls };
  const recovered = await recoverRun(server, db, turns, owner);
  const calls = Object.entries(server.calls)
    .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${fmt(v)}`)
    .join(', ');
  return {
    acceptedMs: accepted.message.ms as number,
    signal: gone.signal,
    ...recovered,
    calls,
  };
}

function describe(s: Settled, calls: string, turns: number): string[] {
  const outcomes = Object.entries(s.outcomes)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const complete = s.outcomes.completed === turns && s.answerChars === turns * ANSWER_CHARS;
  const refused = s.storeCalls['acquireLease:refused'] ?? 0;
  return [
    `    the crash left ${fmt(s.left.open ?? 0)} open turns, ${fmt(s.left.withoutAnswerRef ?? 0)} of them` +
      ' without a saved answer ref (killed before their first update was recorded)',
    `    in the new child (ms since it started): script running ${fmt(s.scriptStartedAt)}, engine.start() ` +
      `${fmt(s.startCalledAt)}→${fmt(s.startReturnedAt)}, first turn settled ` +
      `${s.firstSettledAt === null ? '-' : fmt(s.firstSettledAt)}, all settled ${fmt(s.settledAt)};` +
      ` its CPU time ${fmt(s.cpuMs)} ms`,
    `    outcomes: ${outcomes}${complete ? ' (every answer complete)' : ' (NOT every answer complete)'};` +
      ` agent calls: ${calls}`,
    `    store: acquireLease ${fmt(s.storeCalls.acquireLease ?? 0)} (refused ${fmt(refused)}),` +
      ` sessionsWithWork (scans) ${fmt(s.storeCalls.sessionsWithWork ?? 0)}, commit ${fmt(s.storeCalls.commit ?? 0)}` +
      Object.entries(s.storeCalls)
        .filter(([k]) => k.includes(':threw:'))
        .map(([k, v]) => `, ${k} ${fmt(v)}`)
        .join(''),
    `    engine events: ${Object.entries(s.events)
      .map(([k, v]) => `${k} ${fmt(v)}`)
      .join(', ')}`,
  ];
}

export async function benchResume(server: AgentServer): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ak-bench-resume-'));
  try {
    const baseline = await recoverRun(server, join(dir, 'empty.db'), 0);
    const turns = RESUME_TURNS;
    const crash = await crashAndRecover(server, join(dir, 'sessions.db'), turns);
    console.log(
      `\nResume after SIGKILL: ${fmt(turns)} turns accepted with their streams hanging ` +
        `(accepted in ${fmt(crash.acceptedMs)} ms), the process killed (${crash.signal}), the agent finishing ` +
        'meanwhile; a new process (default engine options) on the same SQLite file',
    );
    console.log(
      `  baseline, the same child starting and settling 0 sessions: ${fmt(baseline.wallMs)} ms` +
        ` (script running after ${fmt(baseline.s.scriptStartedAt)} ms; CPU time ${fmt(baseline.s.cpuMs)} ms)`,
    );
    const resumeVerdict = figure(
      'resume.ms',
      `resume after SIGKILL, ${fmt(turns)} turns: start → all settled`,
      crash.wallMs,
      'ms',
      { op: '<', value: 10_000 },
    );
    console.log(
      `  start → all ${fmt(turns)} turns settled: ${fmt(crash.wallMs)} ms ${resumeVerdict};` +
        ` ${fmt(crash.wallMs - baseline.wallMs)} ms more than the baseline`,
    );
    for (const line of describe(crash.s, crash.calls, turns)) console.log(line);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
