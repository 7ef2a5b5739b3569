/**
 * The scale benchmark's broker side (bench/scale.ts), in its own process so its resident memory
 * is its own and it can be SIGKILLed. One SessionEngine on SQLite, as the broker runs it; the
 * agent server stays in the parent. JSON lines on stdout, as engine-child.ts speaks them.
 *
 *   load <endpoint> <db> <paused> <streaming> <trickleMs>: `paused` threads whose turn ends on a
 *     question, then `streaming` threads whose answers trickle on; prints `loaded` with memory.
 *   recover <endpoint> <db> <paused> <streaming>: engine.start() on the file; prints `recovered`
 *     once every session is (see Recovery below), then answers every question and prints
 *     `answered`.
 */
import type { EngineEvent } from '../src/core/events.js';
import type { AgentRegistry, AgentRoute, ChatTarget, QuestionPrompt } from '../src/core/ports.js';
import { type Inbound, SessionEngine } from '../src/core/session/engine.js';
import { type SessionRecord, sessionIdOf, type TurnRecord } from '../src/core/store.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { fullText } from './agent-server.js';
import { memory, waitUntil } from './engine-memory.js';
import { BINDING, gc, NullSurface, newClient, say } from './engine-rig.js';

const scriptStartedAt = performance.now();

/**
 * Questions time out after a day: long past the benchmark, but each paused session then has a
 * timer the engine arms when it pauses and again when it takes the session back on start.
 */
const QUESTION_TIMEOUT_MS = 24 * 3600 * 1000;
/** Chunks of a streaming answer, and of the answer to a question. */
const STREAM_CHUNKS = 300;
const REPLY_CHUNKS = 5;
/** Threads are started this many at a time, each slice waited for. */
const SLICE = 1_000;

const pausedThread = (i: number): string => `q-${i}`;
const streamingThread = (i: number): string => `s-${i}`;

function inbound(thread: string, n: number, text: string): Inbound {
  return {
    kind: 'person',
    key: { surface: 'bench', workspaceId: 'T1', channelId: 'C1', threadId: thread },
    binding: BINDING,
    chatMessageId: `${thread}.${n}`,
    actor: { id: 'U1', name: 'Ada', label: '[Bench: Ada (U1)]' },
    // The thread's name in the text: the agent server maps its task to the thread by it.
    text: `${text} <${thread}>`,
    addressed: true,
  };
}

const idOf = (thread: string): string =>
  sessionIdOf({ surface: 'bench', workspaceId: 'T1', channelId: 'C1', threadId: thread });

/** A surface that posts nothing but, like Slack's, reports a ref for the question it showed. */
class QuestionSurface extends NullSurface {
  override async askQuestion(_target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    return `question:${prompt.taskId}`;
  }
}

/** What the engine told, per session: the question asked, the turns settled. */
class Sink {
  readonly asked = new Map<string, string>();
  readonly settled = new Map<string, Array<{ outcome: string; answerLength: number; at: number }>>();
  accepted = 0;
  onSettled: (sessionId: string) => void = () => undefined;

  emit(event: EngineEvent): void {
    if (event.type === 'question.asked') this.asked.set(event.sessionId, event.taskId);
    else if (event.type === 'turn.accepted') this.accepted++;
    else if (event.type === 'turn.settled') {
      const list = this.settled.get(event.sessionId) ?? [];
      list.push({ outcome: event.outcome, answerLength: event.answerLength, at: performance.now() });
      this.settled.set(event.sessionId, list);
      this.onSettled(event.sessionId);
    }
  }
}

/**
 * Recovery, as the engine does it on start for a paused session: its driver reads the session,
 * finds the question, reads its open turns, and with no reply waiting re-arms the question's
 * timeout and goes idle (core/session/paused.ts). This store records, per session, the moment
 * such a read found the question still naming a task and nothing waiting behind it.
 */
class WatchedStore extends SqliteStore {
  readonly questionRead = new Map<string, string>();
  onPausedRead: (sessionId: string, taskId: string) => void = () => undefined;

  override async getSession(id: string): Promise<SessionRecord | undefined> {
    const session = await super.getSession(id);
    if (session?.question != null && session.task?.state === 'input-required')
      this.questionRead.set(id, session.question.taskId);
    else this.questionRead.delete(id);
    return session;
  }

  override async openTurns(sessionId: string): Promise<TurnRecord[]> {
    const open = await super.openTurns(sessionId);
    const taskId = this.questionRead.get(sessionId);
    if (taskId !== undefined && open.length === 0) this.onPausedRead(sessionId, taskId);
    return open;
  }
}

async function build(endpoint: string, dbPath: string) {
  const store = new WatchedStore(dbPath);
  await store.migrate();
  const surface = new QuestionSurface();
  const sink = new Sink();
  const route: AgentRoute = {
    client: newClient(endpoint),
    dialect: a2aDialect,
    settings: { questionTimeoutMs: QUESTION_TIMEOUT_MS },
  };
  const registry: AgentRegistry = { resolve: (binding) => (binding === BINDING ? route : undefined) };
  const engine = new SessionEngine({ store, registry, surface, events: sink });
  return { store, surface, sink, engine };
}

/** Sends one message to each thread, SLICE at a time, each slice waited for by `until`. */
async function inSlices(
  threads: string[],
  send: (thread: string) => Promise<unknown>,
  until: (done: number) => boolean,
  what: string,
): Promise<void> {
  for (let from = 0; from < threads.length; from += SLICE) {
    const slice = threads.slice(from, from + SLICE);
    await Promise.all(slice.map(send));
    const done = from + slice.length;
    await waitUntil(() => until(done), what, 120_000);
  }
}

/** Resident memory as it stands, and after a full collection (the live part of the heap). */
async function readings(): Promise<{ now: Record<string, number>; collected: Record<string, number> }> {
  const now = memory();
  gc();
  await new Promise((resolve) => setTimeout(resolve, 500));
  gc();
  return { now, collected: memory() };
}

async function load(endpoint: string, dbPath: string, paused: number, streaming: number, trickleMs: number) {
  const { surface, sink, engine } = await build(endpoint, dbPath);
  await engine.start();
  // The process with its engine started and no session: what the sessions add is measured from it.
  const before = (await readings()).collected;
  const started = performance.now();
  const asking = Array.from({ length: paused }, (_, i) => pausedThread(i));
  await inSlices(
    asking,
    (t) => engine.receive(inbound(t, 1, '[ask]')),
    (done) => sink.asked.size >= done && engine.activeSessions === 0,
    'the questions',
  );
  const pausedMs = performance.now() - started;
  const streams = Array.from({ length: streaming }, (_, i) => streamingThread(i));
  const text = `[chunks:${STREAM_CHUNKS}][hold-after:5][trickle-ms:${trickleMs}]`;
  await inSlices(
    streams,
    (t) => engine.receive(inbound(t, 1, text)),
    (done) => sink.accepted >= paused + done,
    'the streams accepted',
  );
  // Streaming, not merely open: every stream has shown more of its answer since (on average).
  const updates = surface.updates;
  await waitUntil(() => surface.updates >= updates + streaming, 'the trickled chunks', 120_000);
  const streamsSettled = streams.filter((t) => sink.settled.has(idOf(t))).length;
  const { now, collected } = await readings();
  say({
    type: 'loaded',
    pausedMs,
    totalMs: performance.now() - started,
    asked: sink.asked.size,
    streamsSettled,
    activeSessions: engine.activeSessions,
    slice: SLICE,
    before,
    now,
    collected,
  });
  // Held here, streaming, until the parent kills this process.
  setInterval(() => undefined, 60_000);
}

/** Waits for every session to be recovered; after RECOVERY_LIMIT_MS, names those that were not. */
async function recovery(all: Promise<void>, waitingFor: Set<string>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const some = [...waitingFor].slice(0, 5).join(', ');
      reject(new Error(`${waitingFor.size} sessions not recovered after ${RECOVERY_LIMIT_MS} ms: ${some}`));
    }, RECOVERY_LIMIT_MS);
  });
  try {
    await Promise.race([all, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Far past the goal: a session not recovered by then is reported as such, not waited for. */
const RECOVERY_LIMIT_MS = 120_000;

async function recover(endpoint: string, dbPath: string, paused: number, streaming: number) {
  const keepAlive = setInterval(() => undefined, 60_000);
  const { store, sink, engine } = await build(endpoint, dbPath);
  const waitingFor = new Set<string>();
  for (let i = 0; i < paused; i++) waitingFor.add(idOf(pausedThread(i)));
  const pausedIds = new Set(waitingFor);
  const streamIds = new Set<string>();
  for (let i = 0; i < streaming; i++) streamIds.add(idOf(streamingThread(i)));
  for (const id of streamIds) waitingFor.add(id);
  const questions: Array<[string, string]> = [];
  const wrongStreams: string[] = [];
  let recoveredAt = 0;
  const { promise: allRecovered, resolve } = Promise.withResolvers<void>();
  const done = (id: string): void => {
    if (!waitingFor.delete(id)) return;
    if (waitingFor.size === 0) {
      recoveredAt = performance.now();
      resolve();
    }
  };
  store.onPausedRead = (id, taskId) => {
    if (!pausedIds.has(id) || !waitingFor.has(id)) return;
    questions.push([id, taskId]);
    done(id);
  };
  const answerLength = fullText(STREAM_CHUNKS).length;
  sink.onSettled = (id) => {
    if (!streamIds.has(id) || !waitingFor.has(id)) return;
    const s = sink.settled.get(id)?.[0];
    if (s?.outcome !== 'completed' || s.answerLength !== answerLength) wrongStreams.push(id);
    done(id);
  };
  const startCalledAt = performance.now();
  await engine.start();
  const startReturnedAt = performance.now();
  await recovery(allRecovered, waitingFor);
  // At once: the parent times the recovery to this line.
  say({ type: 'recovered' });
  const cpu = process.cpuUsage();
  await waitUntil(() => engine.activeSessions === 0, 'every driver idle', 60_000);
  const idleAt = performance.now();
  // The 10,000 paused sessions alone, held as a restarted broker holds them.
  const { now: mem, collected: idle } = await readings();
  say({
    type: 'report',
    scriptStartedAt,
    startCalledAt,
    startReturnedAt,
    recoveredAt,
    idleAt,
    cpuMs: (cpu.user + cpu.system) / 1000,
    questions,
    wrongStreams,
    rss: mem.rss,
    idle,
  });

  // Answerable: a reply in each paused thread goes to its task as the answer.
  const answering = performance.now();
  const replyLength = fullText(REPLY_CHUNKS).length;
  const answered = (id: string): boolean =>
    sink.settled.get(id)?.some((s) => s.outcome === 'completed' && s.answerLength === replyLength) === true;
  const asking = Array.from({ length: paused }, (_, i) => pausedThread(i));
  let replied = 0;
  await inSlices(
    asking,
    (t) => engine.receive(inbound(t, 2, `[chunks:${REPLY_CHUNKS}]`)),
    (n) => {
      while (replied < n && answered(idOf(asking[replied] as string))) replied++;
      return replied >= n;
    },
    'the answers',
  );
  say({ type: 'answered', answered: replied, ms: performance.now() - answering });
  clearInterval(keepAlive);
  await engine.stop();
  await store.close();
}

const [mode, endpoint, db, ...rest] = process.argv.slice(2);
const nums = rest.map(Number);
try {
  if (endpoint === undefined || db === undefined)
    throw new Error('usage: scale-child <mode> <endpoint> <db> …');
  if (mode === 'load') await load(endpoint, db, nums[0] ?? 0, nums[1] ?? 0, nums[2] ?? 1000);
  else if (mode === 'recover') await recover(endpoint, db, nums[0] ?? 0, nums[1] ?? 0);
  else throw new Error(`unknown mode ${mode}`);
  if (mode !== 'load') process.exit(0);
} catch (error) {
  process.stderr.write(
    `scale-child ${mode}: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
  );
  process.exit(1);
}
