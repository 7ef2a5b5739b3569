/**
 * Scale on one replica (issue 38, goal 4): 10,000 threads paused on a question and 1,000
 * answers streaming, in one broker on SQLite. Its resident memory then, and, after a SIGKILL,
 * the time until a new process on the same file has recovered every one of the 11,000.
 *
 * The agent server runs here; the broker runs in a child (bench/scale-child.ts), so its memory
 * is its own and it can be killed. Recovered means, per session: a streaming turn settled
 * completed with the whole answer (followed as the engine follows a recorded task on start), and
 * a paused session driven by the new process, its question read back naming the agent's paused
 * task with nothing waiting behind it (so its timeout is armed again and a reply goes to the
 * task as its answer). The check is per session against the agent's own record; then, not
 * timed, every question is answered and each task must complete.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AgentServer, startAgentServer } from './agent-server.js';
import { type Child, fmt, runChild } from './engine-children.js';
import { figure } from './figures.js';

const PAUSED = 10_000;
const STREAMING = 1_000;
/** One chunk a second per stream: all 1,000 are still streaming when measured and at the kill. */
const TRICKLE_MS = 1_000;

const MIB = 2 ** 20;
const mib = (bytes: number): string => (bytes / MIB).toFixed(0);

/** The readings engine-memory.ts's memory() takes, as the child sends them. */
type Mem = Record<
  'rss' | 'heapUsed' | 'heapTotal' | 'newSpace' | 'oldSpace' | 'external' | 'RssAnon' | 'RssFile',
  number
>;

/** V8's heap as committed: its young and old generations' sizes (most of it empty after a collection). */
const spaces = (m: Mem): string => `young ${mib(m.newSpace)} MiB, old ${mib(m.oldSpace)} MiB`;

class ScaleCheckError extends Error {
  override readonly name = 'ScaleCheckError';
}

/** The children of this run: any still alive when it ends (a check failed) is killed with it. */
const children: Child[] = [];

function scaleChild(args: string[]): Child {
  const child = runChild(args, () => undefined, [], 'scale-child.ts');
  children.push(child);
  return child;
}

/** The agent's task per thread, for the threads whose first message asked for a question. */
function askedTasks(server: AgentServer): Map<string, string> {
  const byThread = new Map<string, string>();
  for (const task of server.tasks()) {
    const thread = /\[ask\].*<(q-\d+)>/s.exec(task.text)?.[1];
    if (thread !== undefined) byThread.set(thread, task.id);
  }
  return byThread;
}

/** Every paused thread read back once, naming its own task; throws on the first that is not. */
function checkQuestions(questions: Array<[string, string]>, asked: Map<string, string>): void {
  if (asked.size !== PAUSED) throw new ScaleCheckError(`the agent holds ${asked.size} asked tasks`);
  const seen = new Map<string, string>();
  for (const [sessionId, taskId] of questions) {
    const thread = sessionId.slice(sessionId.lastIndexOf(':') + 1);
    if (seen.has(thread)) throw new ScaleCheckError(`${thread} recovered twice`);
    seen.set(thread, taskId);
  }
  for (const [thread, taskId] of asked) {
    const read = seen.get(thread);
    if (read !== taskId)
      throw new ScaleCheckError(
        `${thread}: recovered with question ${read ?? 'none'}, the agent paused ${taskId}`,
      );
  }
}

export async function benchScale(): Promise<void> {
  const server = await startAgentServer();
  const dir = mkdtempSync(join(tmpdir(), 'ak-bench-scale-'));
  const db = join(dir, 'sessions.db');
  const began = performance.now();
  try {
    const loader = scaleChild([
      'load',
      server.endpoint,
      db,
      String(PAUSED),
      String(STREAMING),
      String(TRICKLE_MS),
    ]);
    const { message: loaded } = await loader.next('loaded', 600_000);
    // Still streaming at the kill: every stream open, its task working.
    const working = server.tasks().filter((t) => t.state === 'working').length;
    const held = server.held();
    loader.proc.kill('SIGKILL');
    const gone = await loader.exited;
    if (held !== STREAMING || working !== STREAMING)
      throw new ScaleCheckError(`at the kill ${held} streams were open and ${working} tasks working`);
    // The agent finishes the streaming turns while the broker is down; the questions wait.
    server.completeAll();
    const before = { ...server.calls };

    const recoverer = scaleChild(['recover', server.endpoint, db, String(PAUSED), String(STREAMING)]);
    const { at } = await recoverer.next('recovered', 300_000);
    const recoveryMs = at - recoverer.spawnedAt;
    const { message: r } = await recoverer.next('report', 120_000);
    const calls = Object.entries(server.calls)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k} ${fmt(v)}`)
      .join(', ');
    const wrong = r.wrongStreams as string[];
    if (wrong.length > 0)
      throw new ScaleCheckError(`streams not completed whole: ${wrong.slice(0, 5).join(', ')}`);
    checkQuestions(r.questions as Array<[string, string]>, askedTasks(server));
    const { message: answered } = await recoverer.next('answered', 600_000);
    await recoverer.exited;
    const stillAsked = server.tasks().filter((t) => t.state === 'input-required').length;
    if (stillAsked > 0) throw new ScaleCheckError(`${stillAsked} questions not answered after the restart`);

    const now = loaded.now as Mem;
    const collected = loaded.collected as Mem;
    const base = loaded.before as Mem;
    const idle = r.idle as Mem;
    console.log(
      `\nScale on one replica: ${fmt(PAUSED)} threads paused on a question and ${fmt(STREAMING)} answers` +
        ` streaming (a chunk every ${fmt(TRICKLE_MS)} ms each), one broker on SQLite; questions time out after a day`,
    );
    console.log(
      `  loaded in ${fmt(loaded.totalMs as number)} ms (the ${fmt(PAUSED)} questions in ${fmt(loaded.pausedMs as number)} ms,` +
        ` ${fmt(loaded.slice as number)} threads at a time); ${fmt(loaded.activeSessions as number)} sessions driven`,
    );
    const rssVerdict = figure(
      'scale.rss',
      `resident memory, ${fmt(PAUSED)} sessions paused and ${fmt(STREAMING)} streaming`,
      now.rss / MIB,
      'MiB',
      { op: '<=', value: 512 },
    );
    console.log(
      `  broker rss ${mib(now.rss)} MiB ${rssVerdict}; V8 heap used ${mib(now.heapUsed)} of ${mib(now.heapTotal)} MiB,` +
        ` external ${mib(now.external)} MiB; anonymous ${mib(now.RssAnon)} MiB, file-backed ${mib(now.RssFile)} MiB`,
    );
    console.log(
      `  after a full collection: rss ${mib(collected.rss)} MiB, heap used ${mib(collected.heapUsed)} of ${mib(collected.heapTotal)} MiB` +
        ` (${spaces(collected)});` +
        ` the same process before any session: rss ${mib(base.rss)} MiB, heap used ${mib(base.heapUsed)} MiB`,
    );
    const recoveryVerdict = figure(
      'scale.recovery.ms',
      `after SIGKILL, spawn → all ${fmt(PAUSED + STREAMING)} sessions recovered`,
      recoveryMs,
      'ms',
      { op: '<', value: 15_000 },
    );
    console.log(
      `  killed (${gone.signal}); the agent finished the streams meanwhile; a new process on the same file:` +
        ` spawn → every one recovered ${fmt(recoveryMs)} ms ${recoveryVerdict}`,
    );
    console.log(
      `    in it (ms since it started): script running ${fmt(r.scriptStartedAt as number)}, engine.start() ` +
        `${fmt(r.startCalledAt as number)}→${fmt(r.startReturnedAt as number)}, all recovered ${fmt(r.recoveredAt as number)},` +
        ` every driver idle ${fmt(r.idleAt as number)}; CPU ${fmt(r.cpuMs as number)} ms; rss ${mib(r.rss as number)} MiB`,
    );
    // Held as a restarted broker holds them: the paused sessions, every stream settled (its
    // keep-alive connection to the agent still open, counted here too).
    const perPaused = (idle.heapUsed - base.heapUsed) / PAUSED / 1024;
    console.log(
      `    then, the ${fmt(PAUSED)} paused sessions and the settled streams' connections, after a full collection: rss ${mib(idle.rss)} MiB,` +
        ` heap used ${mib(idle.heapUsed)} of ${mib(idle.heapTotal)} MiB (${spaces(idle)}): ${perPaused.toFixed(2)} KiB of heap per paused session`,
    );
    console.log(`    agent calls while recovering: ${calls}`);
    console.log(
      `  checked per session: ${fmt(STREAMING)} streams settled completed with the whole answer, ${fmt(PAUSED)} questions` +
        ` read back naming the agent's paused task; then each answered (${fmt(answered.answered as number)} in` +
        ` ${fmt(answered.ms as number)} ms, every task completed). Run time ${fmt((performance.now() - began) / 1000)} s`,
    );
  } finally {
    for (const child of children.splice(0)) {
      if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
      await child.exited;
    }
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
