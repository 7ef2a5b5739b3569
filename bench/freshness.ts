/**
 * Freshness at Slack's limits (issue 38, goal 1): how far behind the agent's text the text a
 * thread shows in Slack is, while up to 50 answers stream at once in one workspace.
 *
 * The broker runs as production composes it behind the real Bolt (slack-rig.ts, in a child
 * process: slack-rig-child.ts) with its own budgets, against the fake Slack Web API with
 * Slack's documented tiers on (testkit/slack: chat.startStream Tier 2 = 20 a minute,
 * chat.appendStream Tier 4 = 100, chat.update Tier 3 = 50 for the workspace, chat.postMessage
 * 1 a second per channel; past a tier, 429 with Retry-After). Each answer is the paced agent's
 * (paced-agent.ts): 600 tokens at 30 a second, 20 s, one Slack message. Threads are spread over
 * ten channels. Runs: 1, 10 and 50 answers at once, each both ways the broker shows an answer:
 * native streaming (the workspace has chat.startStream; the answers that find no stream-start
 * token post and edit) and post-and-edit (the fake answers chat.startStream `unknown_method`,
 * as a workspace without streams does). Beside each post-and-edit run, on a fake of its own, the
 * peer's way (peer-edits.ts: every thread edited every 2 s, as kagent's Slack bot does). The
 * three of a size run at once, each on its own fake (its own workspace and rate windows).
 * Then 50 answers overlapped as people ask, one starting every second, both ways (no peer).
 *
 * Lag (lag.ts): at time t, t − E(|V(t)|), where V(t) is what the thread's message shows after
 * the last call Slack accepted by t and E(k) the time the agent had written the first k
 * characters; sampled every 100 ms from the agent's first token until Slack shows the whole
 * answer. p50 and p99 are over every sample of every thread of a run.
 *
 * Goals, per run of N answers: with N answers sharing a budget of B calls a minute, a thread can
 * be updated at best every N·60/B s (the floor). By edits B is chat.update's 50. Natively, at
 * most S = min(N, 20) answers can start a stream within the first minute (Tier 2); they share
 * chat.appendStream's 100, the other N − S share chat.update's 50, and the floor is the worse
 * of S·60/100 and (N − S)·60/50. p99 lag ≤ 1.25 × floor + 1 s; no call refused for rate; every
 * answer exact at its end; the slowest thread's mean lag ≤ 1.5 × the fastest's. Overlapped, the
 * floor is that of the answers under way at once: an answer lasts 20 s, so with one starting
 * every second about 20 share the budgets at a time (and the floor is that of N = 20).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startFakeSlack } from '../testkit/slack/index.js';
import { runChild } from './engine-children.js';
import { type FreshnessResult, reportFreshness } from './freshness-report.js';
import { quantile, shownTimeline, threadLag } from './lag.js';
import { type PacedAgent, pacedText, pacedToken, startPacedAgent } from './paced-agent.js';
import { runPeer } from './peer-edits.js';
import { postEvent, signedMention } from './signed-events.js';

const SIZES = [1, 10, 50];
/** The overlapped run: this many answers, one starting every STAGGER_MS. */
const OVERLAPPED = 50;
const STAGGER_MS = 1_000;
const ID = 'freshness';
const TOKENS = 600;
const RATE = 30;
const CHANNELS = Array.from({ length: 10 }, (_, i) => `C0FRESH${i}`);
const SECRET = 'bench-signing-secret-0123';
const PERSON = 'U0ADA';
/** Slack's tiers, calls a minute: chat.startStream (Tier 2), chat.appendStream (4), chat.update (3). */
const START_TIER = 20;
const APPEND_TIER = 100;
const UPDATE_TIER = 50;
const TOKEN_TEXTS = Array.from({ length: TOKENS }, (_, i) => pacedToken(i));
const WHOLE = pacedText(TOKENS).trimEnd();

type Mode = 'native' | 'edits';

interface Thread {
  channel: string;
  root: string;
  tag: string;
}

/** Lags of a run's threads from the fake's calls and the timelines; `wrong`: not exactly one exact answer. */
function measure(
  fake: Awaited<ReturnType<typeof startFakeSlack>>,
  threads: readonly Thread[],
  emitted: (t: Thread) => number[] | undefined,
): Omit<FreshnessResult, 'detail' | 'refused'> & { means: number[]; garbled: number } {
  const all: number[] = [];
  const means: number[] = [];
  let wrong = 0;
  let garbled = 0;
  for (const t of threads) {
    const answers = fake.messages(t.channel, t.root).filter((m) => m.ts !== t.root && m.botId !== undefined);
    const answer = answers[0];
    const times = emitted(t);
    if (answers.length !== 1 || answer === undefined || answer.text !== WHOLE || times === undefined) {
      wrong++;
      if (answer === undefined || times === undefined) continue;
    }
    const lag = threadLag(TOKEN_TEXTS, times, shownTimeline(fake.calls, t.channel, t.root, answer.ts), WHOLE);
    garbled += lag.notPrefix;
    all.push(...lag.samples);
    means.push(lag.mean);
  }
  const fastest = Math.min(...means);
  return {
    p50: quantile(all, 0.5),
    p99: quantile(all, 0.99),
    wrong,
    garbled,
    means,
    fairness: fastest > 0 ? Math.max(...means) / fastest : Number.NaN,
  };
}

async function ours(agent: PacedAgent, mode: Mode, n: number, staggerMs = 0): Promise<FreshnessResult> {
  const fake = await startFakeSlack({ streaming: mode === 'native' });
  fake.addUser({ id: PERSON, name: 'ada', realName: 'Ada Lovelace', email: 'ada@example.com' });
  try {
    const child = runChild(
      [agent.endpoint, fake.url, fake.botToken, SECRET, CHANNELS.join(','), String(n), 'tiers'],
      () => undefined,
      [],
      'slack-rig-child.ts',
    );
    const { message: ready } = await child.next('ready', 120_000);
    const threads: Thread[] = [];
    const events = Array.from({ length: n }, (_, i) => {
      const tag = `${mode}-${n}${staggerMs > 0 ? '-overlapped' : ''}-${i}`;
      const channel = CHANNELS[i % CHANNELS.length] as string;
      const text = `<@${fake.botUserId}> [tag:${tag}][tokens:${TOKENS}][rate:${RATE}]`;
      const signed = signedMention(fake, SECRET, { channel, user: PERSON, text });
      threads.push({ channel, root: signed.root, tag });
      return signed;
    });
    const statuses =
      staggerMs === 0
        ? await Promise.all(events.map((e) => postEvent(ready.url as string, e)))
        : await staggered(events, staggerMs, (e) => postEvent(ready.url as string, e));
    const { message: done } = await child.next('done', 600_000);
    await child.exited;
    const m = measure(fake, threads, (t) => agent.timeline(t.tag)?.emittedAt);
    const refused = fake.calls.filter((c) => c.status === 429);
    const byMethod = new Map<string, number>();
    for (const c of fake.calls) if (c.ok) byMethod.set(c.method, (byMethod.get(c.method) ?? 0) + 1);
    const streams = fake.calls.filter((c) => c.method === 'chat.startStream' && c.ok).length;
    const notOk = statuses.filter((s) => s !== 200).length;
    return {
      ...m,
      refused: refused.length,
      detail:
        `native streams ${streams}/${n}; calls ${[...byMethod]
          .filter(([k]) => k.startsWith('chat.'))
          .map(([k, v]) => `${k.slice(5)} ${v}`)
          .join(', ')}` +
        `; 429s ${refused.length === 0 ? 'none' : [...new Set(refused.map((c) => c.method))].join(', ')}` +
        `; turns accepted ${done.accepted}, twice ${done.acceptedTwice}` +
        (notOk > 0 ? `; events refused ${notOk}` : '') +
        (m.garbled > 0 ? `; texts not a prefix of the agent's ${m.garbled}` : '') +
        `; thread mean lag ${Math.min(...m.means).toFixed(2)}–${Math.max(...m.means).toFixed(2)} s`,
    };
  } finally {
    await fake.close();
  }
}

/** Sends each event `staggerMs` after the one before, as people ask; the statuses in order. */
async function staggered<E>(events: readonly E[], staggerMs: number, send: (e: E) => Promise<number>) {
  const sent: Array<Promise<number>> = [];
  for (const [i, e] of events.entries()) {
    if (i > 0) await sleep(staggerMs);
    sent.push(send(e));
  }
  return Promise.all(sent);
}

async function peer(n: number): Promise<FreshnessResult> {
  const fake = await startFakeSlack({});
  fake.addUser({ id: PERSON, name: 'ada' });
  try {
    const start = Date.now() + 100;
    const emittedAt = Array.from({ length: TOKENS }, (_, i) => start + Math.round((i * 1000) / RATE));
    const threads = Array.from({ length: n }, (_, i) => {
      const channel = CHANNELS[i % CHANNELS.length] as string;
      const root = fake.postUserMessage({ channel, user: PERSON, text: 'question' }).ts;
      return { channel, root, tag: `peer-${n}-${i}`, emittedAt };
    });
    const run = await runPeer(fake.url, fake.botToken, threads, TOKEN_TEXTS);
    const m = measure(fake, threads, () => emittedAt);
    return {
      ...m,
      refused: run.refused,
      detail: `thread mean lag ${Math.min(...m.means).toFixed(2)}–${Math.max(...m.means).toFixed(2)} s`,
    };
  } finally {
    await fake.close();
  }
}

const s = (x: number): string => x.toFixed(2);

/** The least time between two updates of a thread that Slack's tiers allow (see the header). */
function floorOf(mode: Mode, n: number): number {
  if (mode === 'edits') return (n * 60) / UPDATE_TIER;
  const streams = Math.min(n, START_TIER);
  return Math.max((streams * 60) / APPEND_TIER, ((n - streams) * 60) / UPDATE_TIER);
}

function report(mode: Mode, n: number, r: FreshnessResult, staggerMs = 0): void {
  // Overlapped, the answers under way at once share the budgets (an answer lasts TOKENS/RATE s).
  const atOnce = staggerMs === 0 ? n : Math.min(n, Math.ceil((TOKENS / RATE) * (1000 / staggerMs)));
  const floor = floorOf(mode, atOnce);
  const id = staggerMs === 0 ? `${ID}.${mode}.${n}` : `${ID}.${mode}.${n}-overlapped`;
  const how = mode === 'native' ? 'native streaming' : 'post-and-edit';
  const what =
    staggerMs === 0
      ? `${n} answer${n === 1 ? '' : 's'} at once, ${how}`
      : `${n} answers, one starting every ${staggerMs / 1000} s (${atOnce} under way at once), ${how}`;
  reportFreshness(id, what, floor, r);
}

export async function benchFreshness(): Promise<void> {
  console.log(
    `\nFreshness at Slack's limits: ${TOKENS} tokens at ${RATE}/s per answer (20 s), Slack's tiers on;` +
      ' lag = how far behind the agent the thread shows its text',
  );
  const agent = await startPacedAgent();
  try {
    // BENCH_FRESHNESS=overlapped runs the overlapped answers only.
    const sizes = process.env.BENCH_FRESHNESS === 'overlapped' ? [] : SIZES;
    for (const n of sizes) {
      const [native, edits, peers] = await Promise.all([
        ours(agent, 'native', n),
        ours(agent, 'edits', n),
        peer(n),
      ]);
      report('native', n, native);
      report('edits', n, edits);
      console.log(
        `  the peer beside it (an edit every 2 s per thread, kagent's Slack bot): lag p50 ${s(peers.p50)} s,` +
          ` p99 ${s(peers.p99)} s; refused for rate ${peers.refused}; answers not exact ${peers.wrong}; ${peers.detail}`,
      );
    }
    const [native, edits] = await Promise.all([
      ours(agent, 'native', OVERLAPPED, STAGGER_MS),
      ours(agent, 'edits', OVERLAPPED, STAGGER_MS),
    ]);
    report('native', OVERLAPPED, native, STAGGER_MS);
    report('edits', OVERLAPPED, edits, STAGGER_MS);
  } finally {
    await agent.close();
  }
}

if (import.meta.main) await benchFreshness();
