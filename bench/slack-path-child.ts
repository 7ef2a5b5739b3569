/**
 * The broker side of the whole path through Slack (bench/slack-path.ts), run in the engine
 * benchmarks' child process (`engine-child.ts slack …`) so its time is the broker's alone: the
 * agent, the fake Slack Web API and the sender of the signed events stay in the parent.
 *
 * Each Slack round is a broker composed as production composes it (src/app/broker.ts: the
 * measured store, observability, the Slack connection, the workspace gate, the surface router,
 * the running indicator and session statuses as event sinks), on a fresh SQLite file, with the
 * Slack events served by the real Bolt HTTPReceiver mounted on an HTTP server of its own, as the
 * controller mounts it on its events port. The child says `slack-ready-<round>` with the URL; the
 * parent posts the round's signed events at once; the child times from that line to every turn
 * settled (each answer's final text shown in Slack: `finish` resolves before a turn settles),
 * then waits for the running indicators and session statuses to catch up (untimed) and says
 * `slack-done-<round>`. Between Slack rounds it runs the engine throughput round that
 * bench/engine.ts times (the engine alone, the same agent, the same turns) and the floor's
 * round (bench/slack-floor.ts: the same signed events on a bare HTTP server, the engine, and as
 * many bare Web API calls per turn), interleaved.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { A2AClient } from '../src/a2a/client.js';
import { openBroker } from '../src/app/broker.js';
import { loadBrokerConfig } from '../src/config/broker.js';
import type { EngineEvent } from '../src/core/events.js';
import { LiveRegistry } from '../src/core/registry.js';
import { TriggerDirectory } from '../src/core/triggers.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { createLogger } from '../src/observability/logging.js';
import { openStore } from '../src/store/open.js';
import { DEFAULT_ACTIVITY_OPTIONS } from '../src/surfaces/slack/agent-app/activity.js';
import { DEFAULT_SESSION_STATUS_OPTIONS } from '../src/surfaces/slack/agent-app/session-status.js';
import type { MethodBudget } from '../src/surfaces/slack/web-api/budget.js';
import { floorRound } from './slack-floor.js';

export const SLACK_PATH_BINDING = 'bench/slack';
export const SLACK_PATH_CHANNEL = 'C0BENCH';

/**
 * Slack's tiers lifted for every method the path calls: one workspace at Slack's real allowances
 * (chat.startStream ≈ 16 a minute) would take an hour over 1,000 threads, and the bench measures
 * the broker, not Slack's rate limits. The budgets still run (every call takes its token).
 */
const UNLIMITED: MethodBudget = { scope: 'workspace', perMinute: 6_000_000, burst: 100_000 };
const LIFTED = Object.fromEntries(
  [
    'chat.update',
    'chat.postMessage',
    'chat.startStream',
    'chat.appendStream',
    'chat.stopStream',
    'chat.delete',
    'reactions.add',
    'reactions.remove',
    'users.info',
    'conversations.replies',
    'agents.sessions.setStatus',
    'agents.sessions.rename',
  ].map((m) => [m, UNLIMITED]),
);

/** The engine throughput round of engine-child.ts (the engine alone), passed in by its caller. */
export type EngineAloneRound = (
  endpoint: string,
  n: number,
  chunks: number,
  round: string,
) => Promise<{ ms: number; answerChars: number; summary: Record<string, unknown> }>;

export interface SlackPathArgs {
  endpoint: string;
  fakeUrl: string;
  botToken: string;
  signingSecret: string;
  sessions: number;
  chunks: number;
  rounds: number;
  engineRound: EngineAloneRound;
  gc: () => void;
  say: (message: Record<string, unknown>) => void;
}

/** Counts settled turns and wakes the round when all are in. */
class Settled {
  count = 0;
  readonly outcomes = new Map<string, number>();
  #want = Number.POSITIVE_INFINITY;
  #resolve: (() => void) | undefined;

  emit(event: EngineEvent): void {
    if (event.type !== 'turn.settled') return;
    this.count++;
    this.outcomes.set(event.outcome, (this.outcomes.get(event.outcome) ?? 0) + 1);
    if (this.count >= this.#want) this.#resolve?.();
  }

  until(n: number): Promise<void> {
    if (this.count >= n) return Promise.resolve();
    this.#want = n;
    return new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }
}

async function slackRound(
  a: SlackPathArgs,
  round: string,
  n: number,
  dbPath: string,
): Promise<{ ms: number; cpuMs: number; outcomes: Record<string, number> }> {
  const env = {
    SLACK_BOT_TOKEN: a.botToken,
    SLACK_SIGNING_SECRET: a.signingSecret,
    SLACK_API_URL: a.fakeUrl,
    LOG_LEVEL: 'info',
  };
  const config = loadBrokerConfig(env, { store: { kind: 'sqlite', path: dbPath }, httpPort: 0 });
  // The production logger at its default level, writing where the bench does not read.
  const logger = createLogger({
    level: config.logLevel,
    format: 'json',
    destination: pino.destination({ dest: '/dev/null', sync: true }),
  });
  const broker = openBroker({ env, config, logger, slackBudgets: LIFTED });
  let server: Server | undefined;
  try {
    const stores = await openStore(config.store, { logger });
    const client = new A2AClient({ endpoint: a.endpoint, identity: { kind: 'user-id', userId: 'bench' } });
    await client.card();
    const registry = new LiveRegistry();
    registry.upsert({
      ref: SLACK_PATH_BINDING,
      client,
      dialect: a2aDialect,
      settings: { questionTimeoutMs: null },
      routes: { slack: { channels: [SLACK_PATH_CHANNEL], allowDirectMessages: false } },
      toolApprovals: { enabled: false, approverGroups: [] },
    });
    const settled = new Settled();
    const core = await broker.compose({
      stores,
      registry,
      triggerDirectory: new TriggerDirectory(),
      sinks: [settled],
    });
    await broker.serve(core);
    const slack = core.slack;
    const listener = slack?.requestListener;
    if (slack === undefined || listener === undefined) throw new Error('Slack did not start in HTTP mode');
    server = createServer(listener);
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    const cpu = process.cpuUsage();
    const started = performance.now();
    a.say({ type: `slack-ready-${round}`, url: `http://127.0.0.1:${port}/slack/events`, sessions: n });
    await settled.until(n);
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    // Untimed: the indicators come off and the statuses go to active after their grace.
    const grace = Math.max(
      DEFAULT_ACTIVITY_OPTIONS.settleGraceMs,
      DEFAULT_SESSION_STATUS_OPTIONS.settleGraceMs,
    );
    await new Promise((resolve) => setTimeout(resolve, grace + 300));
    await slack.surface.activity.idle();
    await slack.surface.statuses.idle();
    const outcomes = Object.fromEntries(settled.outcomes);
    if (settled.outcomes.get('completed') !== n)
      throw new Error(`slack round ${round}: outcomes ${JSON.stringify(outcomes)}`);
    return { ms, cpuMs: (used.user + used.system) / 1000, outcomes };
  } finally {
    await broker.stop();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  }
}

/** Warm-up, then `rounds` of the engine alone and the Slack path, interleaved; one result line. */
export async function slackPath(a: SlackPathArgs, tempDb: () => { path: string; remove: () => void }) {
  /** One round of `run` on a fresh SQLite file, its result said as `slack-done-<round>`. */
  const onFreshDb =
    <R extends Record<string, unknown>>(
      run: (a: SlackPathArgs, round: string, n: number, path: string) => Promise<R>,
    ) =>
    async (round: string, n: number): Promise<R> => {
      const db = tempDb();
      try {
        const r = await run(a, round, n, db.path);
        a.say({ type: `slack-done-${round}`, ...r });
        return r;
      } finally {
        db.remove();
      }
    };
  const runSlack = onFreshDb(slackRound);
  const runFloor = onFreshDb(floorRound);
  const warm = Math.min(a.sessions, 200);
  await a.engineRound(a.endpoint, warm, a.chunks, 'warm');
  await runSlack('warm', warm);
  await runFloor('floor-warm', warm);
  const engine: number[] = [];
  const slack: number[] = [];
  const slackCpu: number[] = [];
  const engineCpu: number[] = [];
  const floor: number[] = [];
  const floorCpu: number[] = [];
  const floorCalls: number[] = [];
  for (let i = 0; i < a.rounds; i++) {
    a.gc();
    const cpu = process.cpuUsage();
    const e = await a.engineRound(a.endpoint, a.sessions, a.chunks, `alone${i}`);
    const used = process.cpuUsage(cpu);
    engine.push(e.ms);
    engineCpu.push((used.user + used.system) / 1000);
    a.gc();
    const f = await runFloor(`floor${i}`, a.sessions);
    floor.push(f.ms);
    floorCpu.push(f.cpuMs);
    floorCalls.push(f.calls);
    a.gc();
    const s = await runSlack(String(i), a.sessions);
    slack.push(s.ms);
    slackCpu.push(s.cpuMs);
  }
  a.say({
    type: 'result',
    mode: 'slack',
    sessions: a.sessions,
    chunks: a.chunks,
    engine,
    engineCpu,
    slack,
    slackCpu,
    floor,
    floorCpu,
    floorCalls,
  });
}
