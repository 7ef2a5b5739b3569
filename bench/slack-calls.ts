/**
 * Slack calls per streamed turn against the number of agent events. Slack allows about 50
 * chat.update calls a minute for a whole workspace, so the calls one answer makes must grow with
 * how long the turn lasts, not with how many events the agent sends: 100 events or 10,000 over
 * the same two seconds should cost the same handful of calls.
 *
 * Each turn shows the same 2,400-character answer growing evenly over the turn's duration; only
 * the number of events that carry it changes (each event replaces the answer with a longer
 * prefix, so the text grows alike whatever the count). The surface is driven exactly as the
 * engine drives it (AnswerSink.update per event, finish at the end), against the fake Slack Web
 * API through the WebClient, with the production coalescing interval and budgets.
 */
import { pino } from 'pino';
import { AnswerBuffer } from '../src/core/answer.js';
import { systemClock } from '../src/core/clock.js';
import { SlackSurface } from '../src/surfaces/slack/answer/surface.js';
import { BudgetBook } from '../src/surfaces/slack/web-api/budget.js';
import { createWebApiCaller, SlackApi } from '../src/surfaces/slack/web-api/client.js';
import { startFakeSlack } from '../testkit/slack/index.js';
import { figure } from './figures.js';

const ANSWER = Array.from({ length: 48 }, (_, i) => `Sentence ${i} of the answer, about fifty chars. `).join(
  '',
);
const logger = pino({ level: 'silent' });

async function turnCalls(options: {
  streaming: boolean;
  events: number;
  durationMs: number;
}): Promise<number> {
  const fake = await startFakeSlack({ streaming: options.streaming });
  const budgets = new BudgetBook(systemClock);
  try {
    const api = new SlackApi(createWebApiCaller({ token: fake.botToken, apiUrl: fake.url, logger }), budgets);
    const surface = new SlackSurface({ api, clock: systemClock, logger });
    const root = fake.postUserMessage({ channel: 'C0BENCH', user: 'U0ADA', text: 'go' });
    const sink = surface.openAnswer(
      {
        sessionId: `slack:T0001:C0BENCH:${root.ts}`,
        key: { surface: 'slack', workspaceId: 'T0001', channelId: 'C0BENCH', threadId: root.ts },
      },
      'turn',
      null,
      () => undefined,
      { actorId: 'U0ADA', fresh: true },
    );
    fake.clearCalls();
    const buffer = new AnswerBuffer();
    const started = performance.now();
    const tickMs = 10;
    const ticks = Math.max(1, Math.round(options.durationMs / tickMs));
    let sent = 0;
    for (let tick = 1; tick <= ticks; tick++) {
      const due = Math.round((options.events * tick) / ticks);
      for (; sent < due; sent++) {
        const length = Math.ceil((ANSWER.length * (sent + 1)) / options.events);
        buffer.apply({
          kind: 'artifact-update',
          taskId: 'task',
          contextId: 'ctx',
          artifact: { artifactId: 'answer', parts: [{ kind: 'text', text: ANSWER.slice(0, length) }] },
          append: false,
          lastChunk: false,
        });
        sink.update(buffer);
      }
      const wait = started + tick * tickMs - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    await sink.finish(buffer);
    surface.close();
    const shown = fake.messages('C0BENCH', root.ts).filter((m) => m.botId !== undefined);
    if (shown.length !== 1) throw new Error(`expected one answer message, saw ${shown.length}`);
    return fake.calls.filter((c) => c.method.startsWith('chat.')).length;
  } finally {
    budgets.close();
    await fake.close();
  }
}

export async function benchSlack(): Promise<void> {
  const durationMs = 2_000;
  const counts = [100, 1_000, 10_000];
  console.log(
    `\nSlack calls per streamed turn (one ${durationMs / 1000} s turn, the same answer, more or fewer events)`,
  );
  for (const streaming of [false, true]) {
    const calls: number[] = [];
    for (const events of counts) calls.push(await turnCalls({ streaming, events, durationMs }));
    const label = streaming ? 'native streams' : 'edits (chat.update)';
    const key = streaming ? 'streams' : 'edits';
    console.log(
      `  ${label}: ${counts.map((n, i) => `${n.toLocaleString('en')} events → ${calls[i]} calls`).join('; ')}`,
    );
    const ratio = (calls[2] ?? 0) / Math.max(1, calls[0] ?? 1);
    // ≈ 1: the calls follow the turn's duration, not its event count.
    const verdict = figure(
      `slack.${key}.events-ratio`,
      `Slack calls, 10,000 events against 100, ${label}`,
      ratio,
      'ratio',
      {
        op: '<=',
        value: 1.5,
      },
    );
    console.log(`  ${label}: ratio calls(10,000 events)/calls(100 events): ${ratio.toFixed(2)} ${verdict}`);
  }
  const durations = [1_000, 2_000, 4_000];
  const byDuration: number[] = [];
  for (const ms of durations)
    byDuration.push(await turnCalls({ streaming: false, events: 1_000, durationMs: ms }));
  console.log(
    `  by duration (edits, 1,000 events): ${durations.map((ms, i) => `${ms / 1000} s → ${byDuration[i]} calls`).join('; ')}`,
  );
  console.log(
    `  ratio calls(4 s)/calls(1 s): ${((byDuration[2] ?? 0) / Math.max(1, byDuration[0] ?? 1)).toFixed(2)} (grows with the turn's duration, about one call a second)`,
  );
}

if (import.meta.main) await benchSlack();
