/**
 * Freshness at Microsoft Teams' limits (issue 48): how far behind the agent's text the text a
 * Teams conversation shows is, while 50 answers stream overlapped — one starting every second,
 * as people ask — rather than all at once.
 *
 * The broker runs as production composes it, with Teams' settings (teams-rig-child.ts, in a
 * child process), against the test kit's fake Entra and Bot Connector with Teams' documented
 * rules on (testkit/teams: per bot per conversation 7 calls a second, 8 in 2 s, 60 in 30 s,
 * 1,800 an hour, edits counted with sends; streaming one update a second, two minutes; past a
 * limit, 429 with Retry-After). Each answer is the paced agent's: 600 tokens at 30 a second, 20 s.
 * Two runs, side by side on fakes of their own: answers in channel threads (ten channels, one
 * thread per question; the broker edits one message), and answers in personal chats (fifty
 * people, Teams' own streaming).
 *
 * Lag as the Slack freshness bench reads it (lag.ts): at t, t − E(|V(t)|), V(t) what the
 * answer's message shows after the last call Teams accepted by t. The floor is the least time
 * between two updates of one conversation the limits allow: in a channel thread, 2 s (1,800 an
 * hour is one every 2 s sustained, and each thread is a conversation of its own); in a personal
 * chat, 1 s (a stream takes one update a second). Goals per run: p99 lag ≤ 1.25 × floor + 1 s;
 * no call refused for rate; every answer exact at its end; the slowest thread's mean lag ≤ 1.5 ×
 * the fastest's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type ConnectorCall, FakeBotConnector, type FakeConversation } from '../testkit/teams/connector.js';
import { startFakeEntra } from '../testkit/teams/entra.js';
import { runChild } from './engine-children.js';
import { type FreshnessResult, reportFreshness } from './freshness-report.js';
import { quantile, type Shown, threadLag } from './lag.js';
import { type PacedAgent, pacedText, pacedToken, startPacedAgent } from './paced-agent.js';

const ANSWERS = 50;
const STAGGER_MS = 1_000;
const TOKENS = 600;
const RATE = 30;
const CHANNELS = Array.from({ length: 10 }, (_, i) => `19:fresh${i}channel@thread.tacv2`);
const APP_ID = '11111111-2222-4333-8444-555555555555';
const SECRET = 'bench-app-secret';
const TOKEN_TEXTS = Array.from({ length: TOKENS }, (_, i) => pacedToken(i));
/** A Teams answer ends exactly as the agent wrote it (no trim). */
const WHOLE = pacedText(TOKENS);

type Where = 'channel' | 'personal';

interface Thread {
  conversation: FakeConversation;
  /** The conversation id the answer is in (a channel's thread, or the chat). */
  conversationId: string;
  tag: string;
}

/** What the answer's message showed after each accepted call, in order. */
function shownOf(calls: readonly ConnectorCall[], messageId: string): Shown[] {
  return calls
    .filter((c) => c.messageId === messageId && c.status < 300 && c.shows !== undefined)
    .map((c) => ({ at: c.at, text: c.shows as string }));
}

async function run(agent: PacedAgent, where: Where): Promise<FreshnessResult> {
  const entra = await startFakeEntra();
  entra.register({ clientId: APP_ID, secret: SECRET, resources: ['https://api.botframework.com'] });
  const connector = await new FakeBotConnector({ entra, botId: APP_ID }).start();
  try {
    const child = runChild(
      [
        agent.endpoint,
        entra.url,
        entra.tenantId,
        APP_ID,
        SECRET,
        '127.0.0.1',
        CHANNELS.join(','),
        String(ANSWERS),
      ],
      () => undefined,
      [],
      'teams-rig-child.ts',
    );
    const { message: ready } = await child.next('ready', 120_000);
    const url = ready.url as string;
    const threads: Thread[] = [];
    const deliveries: Array<Promise<number>> = [];
    for (let i = 0; i < ANSWERS; i++) {
      const person = {
        id: `29:person-${i}`,
        name: `Person ${i}`,
        aadObjectId: `aaaaaaaa-0000-4000-8000-${String(i).padStart(12, '0')}`,
        email: `person${i}@example.com`,
        userPrincipalName: `person${i}@example.com`,
      };
      const conversation =
        where === 'channel'
          ? connector.conversation({
              id: CHANNELS[i % CHANNELS.length] as string,
              type: 'channel',
              tenantId: entra.tenantId,
              teamId: '19:team@thread.tacv2',
              members: [person],
            })
          : connector.conversation({
              id: `a:chat-${i}`,
              type: 'personal',
              tenantId: entra.tenantId,
              members: [person],
            });
      const tag = `${where}-${i}`;
      const activity = connector.message({
        conversation,
        from: person,
        text: `[tag:${tag}][tokens:${TOKENS}][rate:${RATE}]`,
        id: `${Date.now()}${i}`,
      });
      threads.push({ conversation, conversationId: (activity.conversation as { id: string }).id, tag });
      deliveries.push(connector.deliver(url, activity).then((r) => r.status));
      await sleep(STAGGER_MS);
    }
    const statuses = await Promise.all(deliveries);
    const { message: done } = await child.next('done', 600_000);
    await child.exited;
    const all: number[] = [];
    const means: number[] = [];
    let wrong = 0;
    for (const t of threads) {
      const answers = connector
        .messages(t.conversation.id)
        .filter((m) => m.from === 'bot' && m.conversationId === t.conversationId);
      const answer = answers[0];
      const times = agent.timeline(t.tag)?.emittedAt;
      if (answers.length !== 1 || answer === undefined || answer.text !== WHOLE || times === undefined) {
        wrong++;
        if (answer === undefined || times === undefined) continue;
      }
      const lag = threadLag(TOKEN_TEXTS, times, shownOf(connector.calls, answer.id), WHOLE);
      all.push(...lag.samples);
      means.push(lag.mean);
    }
    const fastest = Math.min(...means);
    const sends = connector.calls.filter((c) => c.status < 300 && c.kind !== 'member').length;
    const notOk = statuses.filter((s) => s !== 200).length;
    return {
      p50: quantile(all, 0.5),
      p99: quantile(all, 0.99),
      refused: connector.throttled,
      wrong,
      fairness: fastest > 0 ? Math.max(...means) / fastest : Number.NaN,
      detail:
        `calls accepted ${sends}; turns accepted ${done.accepted}, twice ${done.acceptedTwice}` +
        (notOk > 0 ? `; activities refused ${notOk}` : '') +
        `; thread mean lag ${Math.min(...means).toFixed(2)}–${Math.max(...means).toFixed(2)} s`,
    };
  } finally {
    await connector.close();
    await entra.close();
  }
}

function report(where: Where, r: FreshnessResult): void {
  const floor = where === 'channel' ? 2 : 1;
  const how = where === 'channel' ? 'channel threads (edits)' : 'personal chats (streaming)';
  reportFreshness(`teams-freshness.${where}.${ANSWERS}`, `${ANSWERS} answers one a second, ${how}`, floor, r);
}

export async function benchTeamsFreshness(): Promise<void> {
  console.log(
    `\nFreshness at Teams' limits: ${ANSWERS} answers, one starting every second, ${TOKENS} tokens at ${RATE}/s each (20 s);` +
      ' lag = how far behind the agent the conversation shows its text',
  );
  const agent = await startPacedAgent();
  try {
    const [channel, personal] = await Promise.all([run(agent, 'channel'), run(agent, 'personal')]);
    report('channel', channel);
    report('personal', personal);
  } finally {
    await agent.close();
  }
}

if (import.meta.main) await benchTeamsFreshness();
