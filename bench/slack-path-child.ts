/**
 * The broker side of the whole path through Slack (bench/slack-path.ts), run in the engine
 * benchmarks' child process (`engine-child.ts slack …`) so its time is the broker's alone: the
 * agent, the fake Slack Web API and the sender of the signed events stay in the parent.
 *
 * Each Slack round is a broker composed as production composes it, behind the real Bolt
 * HTTPReceiver (bench/slack-rig.ts), on a fresh SQLite file. The child says `slack-ready-<round>` with the URL; the
 * parent posts the round's signed events at once; the child times from that line to every turn
 * settled (each answer's final text shown in Slack: `finish` resolves before a turn settles),
 * then waits for the running indicators and session statuses to catch up (untimed) and says
 * `slack-done-<round>`. Between Slack rounds it runs the engine throughput round that
 * bench/engine.ts times (the engine alone, the same agent, the same turns) and the floor's
 * round (bench/slack-floor.ts: the same signed events on a bare HTTP server, the engine, and as
 * many bare Web API calls per turn), interleaved.
 */
import { DEFAULT_ACTIVITY_OPTIONS } from '../src/surfaces/slack/agent-app/activity.js';
import { DEFAULT_SESSION_STATUS_OPTIONS } from '../src/surfaces/slack/agent-app/session-status.js';
import { floorRound } from './slack-floor.js';
import { LIFTED_BUDGETS, startSlackBroker } from './slack-rig.js';

export const SLACK_PATH_CHANNEL = 'C0BENCH';

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

async function slackRound(
  a: SlackPathArgs,
  round: string,
  n: number,
  dbPath: string,
): Promise<{ ms: number; cpuMs: number; outcomes: Record<string, number> }> {
  // Slack's tiers lifted (slack-rig.ts): one workspace at Slack's real allowances would take an
  // hour over 1,000 threads, and this measures the broker, not Slack's rate limits.
  const broker = await startSlackBroker({
    endpoint: a.endpoint,
    fakeUrl: a.fakeUrl,
    botToken: a.botToken,
    signingSecret: a.signingSecret,
    channels: [SLACK_PATH_CHANNEL],
    dbPath,
    budgets: LIFTED_BUDGETS,
  });
  try {
    const slack = broker.core.slack;
    if (slack === undefined) throw new Error('Slack did not start');
    const cpu = process.cpuUsage();
    const started = performance.now();
    a.say({ type: `slack-ready-${round}`, url: broker.url, sessions: n });
    await broker.turns.until(n);
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
    const outcomes = Object.fromEntries(broker.turns.outcomes);
    if (broker.turns.outcomes.get('completed') !== n)
      throw new Error(`slack round ${round}: outcomes ${JSON.stringify(outcomes)}`);
    return { ms, cpuMs: (used.user + used.system) / 1000, outcomes };
  } finally {
    await broker.stop();
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
