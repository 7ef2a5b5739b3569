// Over our ~450-line rule as one piece: the one harness every Slack end-to-end test starts (a fake
// Slack, the real Bolt and WebClient, an engine and its agents, and the helpers that read a
// thread back); its options and its wiring are read together.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { A2AClient } from '../../../src/a2a/client.js';
import { loadSlackConfig } from '../../../src/config/slack.js';
import type { Clock } from '../../../src/core/clock.js';
import type { EngineEvent } from '../../../src/core/events.js';
import type { BindingSettings, EventSink, SignOut } from '../../../src/core/ports.js';
import { LiveRegistry, type ToolApprovalSettings } from '../../../src/core/registry.js';
import { SessionEngine } from '../../../src/core/session/engine.js';
import type { EngineTimings } from '../../../src/core/session/timings.js';
import type { SessionStore } from '../../../src/core/store.js';
import { a2aDialect } from '../../../src/dialects/a2a.js';
import { dialectSpec } from '../../../src/dialects/index.js';
import { ApprovalAuditLog } from '../../../src/observability/approval-audit.js';
import { bundleOf } from '../../../src/store/open.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import type { FeedbackCounter } from '../../../src/surfaces/slack/agent-app/feedback.js';
import type { AnswerSettings } from '../../../src/surfaces/slack/answer/slack-answer.js';
import { type ConnectOptions, SlackConnection } from '../../../src/surfaces/slack/connection.js';
import type { MethodBudget } from '../../../src/surfaces/slack/web-api/budget.js';
import {
  type FakeMessage,
  type FakeSlack,
  type FakeSlackOptions,
  startFakeSlack,
} from '../../../testkit/slack/index.js';
import { FAST_TIMINGS } from '../../helpers/engine-harness.js';
import {
  type ContractAgent,
  type ContractAgentOptions,
  startContractAgent,
  type WireVersion,
} from '../../peers/contract-agent/contract-agent.js';
import {
  blockActionsPayload,
  mentionEvent,
  messageEvent,
  type SendEventOptions,
  sendSlackEvent,
  sendSlackInteraction,
  viewSubmissionPayload,
} from '../../slack/events.js';

/**
 * Everything real but Slack's Web API: the real Bolt app in HTTP mode on port 0 with signature
 * checks on (or, with `mode: 'socket'`, in Socket Mode over the fake's WebSocket), the real
 * session engine on SQLite in memory, a LiveRegistry Binding whose client is an A2AClient to the
 * contract test agent — and the fake Slack for the Web API.
 *
 * Events and presses reach the app the way the mode has Slack send them: signed POSTs in HTTP
 * mode, envelopes over the WebSocket in Socket Mode; either way a send resolves once Slack would
 * have its answer (the HTTP response, the envelope's ack), as `{status: 200, body}` on success.
 */

export const SECRET = 'e2e-signing-secret-0123';
export const BINDING = 'team-a/support';
export const CHANNEL = 'C0SUPPORT';
export const OTHER_CHANNEL = 'C0NOBIND';
export const DM = 'D0ADA';
export const ADA = 'U0ADA';

export interface SlackHarnessOptions {
  /** How Slack reaches the app: signed HTTP requests (default) or Socket Mode. */
  mode?: 'http' | 'socket';
  version?: WireVersion;
  fake?: FakeSlackOptions;
  answers?: Partial<AnswerSettings>;
  budgets?: Record<string, MethodBudget>;
  timings?: Partial<EngineTimings>;
  settings?: Partial<BindingSettings>;
  /** Channels the Binding lists (default CHANNEL). */
  channels?: string[];
  agentOptions?: Partial<ContractAgentOptions>;
  store?: SessionStore;
  /** Another harness's agent (a restart keeps the agent). */
  agent?: ContractAgent;
  fakeSlack?: FakeSlack;
  clock?: Clock;
  /** The Binding's dialect (default a2a). kagent-v1: the agent's card lists kagent's HITL extension. */
  dialect?: 'a2a' | 'kagent-v1';
  /** The Binding's interactions.toolApprovals (default disabled, no groups). */
  toolApprovals?: ToolApprovalSettings;
  approvals?: ConnectOptions['approvals'];
  /** Another sink of the engine's events (BrokerMetrics counts decisions from them). */
  events?: EventSink;
  /** Where feedback presses are counted. */
  feedback?: FeedbackCounter;
  /** The Binding's spec.slack.feedback.toAgent (default off). */
  feedbackToAgent?: boolean;
  /** How people are looked up with users.info (People). */
  people?: ConnectOptions['people'];
  /** The "sign out" command's port (default: none). */
  signOut?: SignOut;
}

/** What Slack got back: the HTTP response, or in Socket Mode the ack (its payload as the body). */
export interface Delivered {
  status: number;
  body: string;
  elapsedMs: number;
}

/** How long the harness waits for an envelope's ack: generous, the harness does not test Slack's 3 s. */
const SOCKET_ACK_WAIT_MS = 10_000;

/** A button of a message's blocks, as a press needs it. */
export interface FoundButton {
  actionId: string;
  blockId: string;
  value: string;
  text: string;
}

export interface SlackHarness {
  fake: FakeSlack;
  agent: ContractAgent;
  store: SessionStore;
  registry: LiveRegistry;
  engine: SessionEngine;
  slack: SlackConnection;
  events: EngineEvent[];
  /** HTTP mode: where signed events go ('' in Socket Mode, where nothing listens on a port). */
  appUrl: string;
  mode: 'http' | 'socket';
  logs: Array<Record<string, unknown>>;
  /** The approval audit the app writes to: its lines are in `logs`; tests may listen too. */
  approvalAudit: ApprovalAuditLog;
  /** Sends an Events API event as the mode has Slack send it (signed POST, or an envelope). */
  deliver(event: Record<string, unknown>, o?: SendEventOptions): Promise<Delivered>;
  /** Sends an interactivity payload as the mode has Slack send it. */
  interact(payload: Record<string, unknown>): Promise<Delivered>;
  /** Posts a person's message mentioning the app in `channel` (or a thread of it) and sends its event. */
  mention(
    text: string,
    o?: { channel?: string; threadTs?: string; user?: string; event?: SendEventOptions },
  ): Promise<{ ts: string; status: number; elapsedMs: number }>;
  /** A thread reply that does not mention the app. */
  reply(threadTs: string, text: string, o?: { channel?: string; user?: string }): Promise<{ ts: string }>;
  /** A direct message to the app. */
  direct(text: string, o?: { user?: string; threadTs?: string }): Promise<{ ts: string }>;
  settled(turnCount: number, timeoutMs?: number): Promise<void>;
  /** The buttons of a message (in block order). */
  buttons(channel: string, ts: string): FoundButton[];
  /** The feedback buttons' values under a bot message (positive, negative), if it has them. */
  feedback(channel: string, ts: string): { positive: string; negative: string } | undefined;
  /** Presses a feedback button as `user`. */
  pressFeedback(
    message: { channel?: string; ts: string },
    value: string,
    user: string,
  ): Promise<{ status: number }>;
  /** Presses a button of a bot message, as `user`, the way Slack sends the press. */
  press(
    message: { channel?: string; ts: string },
    button: FoundButton,
    user: string,
  ): Promise<{ status: number; body: string }>;
  /**
   * Presses a button of an ephemeral message (the ephemeral as the fake recorded it) as `user`,
   * the way Slack sends it: no `message`, and a response_url the fake serves for that ephemeral.
   */
  pressEphemeral(
    ephemeral: FakeSlack['ephemerals'][number],
    button: FoundButton,
    user: string,
  ): Promise<{ status: number; body: string }>;
  /** Submits a modal the broker opened, with input values by block id and action id. */
  submitView(
    view: Record<string, unknown>,
    user: string,
    values: Record<string, Record<string, unknown>>,
  ): Promise<{ status: number; body: string }>;
  waitFor(what: string, predicate: () => boolean, timeoutMs?: number): Promise<void>;
  thread(threadTs: string, channel?: string): FakeMessage[];
  /** The bot's messages in a thread (the root excluded). */
  botMessages(threadTs: string, channel?: string): FakeMessage[];
  close(options?: { keepAgent?: boolean; keepStore?: boolean; keepFake?: boolean }): Promise<void>;
}

export async function startSlackHarness(options: SlackHarnessOptions = {}): Promise<SlackHarness> {
  const fake = options.fakeSlack ?? (await startFakeSlack(options.fake));
  fake.addUser({ id: ADA, name: 'ada', realName: 'Ada Lovelace', email: 'ada@example.com' });
  const kagent = options.dialect === 'kagent-v1';
  const agent =
    options.agent ??
    (await startContractAgent({
      version: options.version ?? '1.0',
      ...(kagent ? { card: { extensions: [{ uri: dialectSpec('kagent-v1').extensions[0] ?? '' }] } } : {}),
      ...options.agentOptions,
    }));
  const client = new A2AClient({
    endpoint: agent.endpoint,
    identity: { kind: 'bearer', token: 'binding-token' },
    timeouts: { headersMs: 10_000, streamIdleMs: 10_000 },
    ...(kagent ? { extensions: [...dialectSpec('kagent-v1').extensions] } : {}),
  });
  const store = options.store ?? new SqliteStore(':memory:');
  await store.migrate();
  const registry = new LiveRegistry();
  const toolApprovals = options.toolApprovals ?? { enabled: false, approverGroups: [], approvers: [] };
  registry.upsert({
    ref: BINDING,
    client,
    dialect: kagent ? dialectSpec('kagent-v1').dialect : a2aDialect,
    settings: { questionTimeoutMs: null, ...options.settings },
    routes: {
      slack: {
        channels: options.channels ?? [CHANNEL],
        allowDirectMessages: true,
        ...(options.feedbackToAgent === true ? { feedbackToAgent: true } : {}),
      },
    },
    toolApprovals,
  });
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') logs.push(JSON.parse(line));
        done();
      },
    }),
  );
  const mode = options.mode ?? 'http';
  const config = loadSlackConfig(
    mode === 'socket'
      ? {
          SLACK_BOT_TOKEN: fake.botToken,
          SLACK_APP_TOKEN: fake.appToken,
          SLACK_MODE: 'socket',
          SLACK_API_URL: fake.url,
        }
      : { SLACK_BOT_TOKEN: fake.botToken, SLACK_SIGNING_SECRET: SECRET, SLACK_API_URL: fake.url },
  );
  // The broker's audit of approvals, on the harness's logger (tests read its lines in `logs`).
  const approvalAudit = new ApprovalAuditLog(logger);
  const slack = await SlackConnection.connect({
    config,
    logger,
    bindings: registry,
    answers: { intervalMs: 250, ...options.answers },
    activity: { settleGraceMs: 50 },
    statuses: { settleGraceMs: 50 },
    approvals: { audit: approvalAudit, ...options.approvals },
    ...(options.budgets === undefined ? {} : { budgets: options.budgets }),
    ...(options.feedback === undefined ? {} : { feedback: options.feedback }),
    ...(options.people === undefined ? {} : { people: options.people }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const events: EngineEvent[] = [];
  const engine = new SessionEngine({
    store,
    registry,
    surface: slack.surface,
    events: {
      emit: (e) => {
        events.push(e);
        slack.surface.activity.emit(e);
        slack.surface.statuses.emit(e);
        options.events?.emit(e);
      },
    },
    timings: { ...FAST_TIMINGS, ...options.timings },
    // A store of the broker's own remembers the threads its retention forgot.
    ...(store instanceof SqliteStore ? { forgotten: store.retention() } : {}),
  });
  await engine.start();
  // A store of the broker's own keeps feedback on the same database; a test's wrapper keeps none.
  const feedbackRows = store instanceof SqliteStore ? bundleOf(store).feedback : undefined;
  const { port } = await slack.listen({
    inbound: engine,
    ...(feedbackRows === undefined ? {} : { feedbackRows }),
    ...(store instanceof SqliteStore ? { erasure: store.retention() } : {}),
    describeAgent: async (ref) => registry.get(ref)?.client.describe?.(),
    ...(options.signOut === undefined ? {} : { signOut: options.signOut }),
    ...(mode === 'http' ? { port: 0, host: '127.0.0.1' } : {}),
  });
  const appUrl = mode === 'http' ? `http://127.0.0.1:${port ?? 0}/slack/events` : '';

  const deliver = async (event: Record<string, unknown>, o: SendEventOptions = {}): Promise<Delivered> => {
    if (mode === 'http') return sendSlackEvent(appUrl, SECRET, event, o);
    if (o.badSignature !== undefined || o.timestampSeconds !== undefined)
      throw new Error(
        'Socket Mode events are not signed: badSignature and timestampSeconds mean nothing there',
      );
    const started = performance.now();
    const ack = await fake.socketMode.sendEvent(event, {
      timeoutMs: SOCKET_ACK_WAIT_MS,
      ...(o.teamId === undefined ? {} : { teamId: o.teamId }),
      ...(o.eventId === undefined ? {} : { eventId: o.eventId }),
      ...(o.eventTime === undefined ? {} : { eventTime: o.eventTime }),
      ...(o.retryNum === undefined ? {} : { retryAttempt: o.retryNum }),
      ...(o.retryReason === undefined ? {} : { retryReason: o.retryReason }),
    });
    return { status: 200, body: ackBody(ack.payload), elapsedMs: performance.now() - started };
  };
  const interact = async (payload: Record<string, unknown>): Promise<Delivered> => {
    if (mode === 'http') return sendSlackInteraction(appUrl, SECRET, payload);
    const started = performance.now();
    const ack = await fake.socketMode.sendInteraction(payload, { timeoutMs: SOCKET_ACK_WAIT_MS });
    return { status: 200, body: ackBody(ack.payload), elapsedMs: performance.now() - started };
  };

  const waitFor = async (what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  const harness: SlackHarness = {
    fake,
    agent,
    store,
    registry,
    engine,
    slack,
    events,
    appUrl,
    mode,
    logs,
    approvalAudit,
    deliver,
    interact,
    async mention(text, o = {}) {
      const channel = o.channel ?? CHANNEL;
      const user = o.user ?? ADA;
      const typed = `<@${fake.botUserId}> ${text}`;
      const message = fake.postUserMessage({
        channel,
        user,
        text: typed,
        ...(o.threadTs === undefined ? {} : { threadTs: o.threadTs }),
      });
      const sent = await deliver(
        mentionEvent({
          channel,
          user,
          text: typed,
          ts: message.ts,
          ...(o.threadTs === undefined ? {} : { threadTs: o.threadTs }),
          botUserId: fake.botUserId,
        }),
        o.event,
      );
      return { ts: message.ts, status: sent.status, elapsedMs: sent.elapsedMs };
    },
    async reply(threadTs, text, o = {}) {
      const channel = o.channel ?? CHANNEL;
      const user = o.user ?? ADA;
      const message = fake.postUserMessage({ channel, user, text, threadTs });
      const sent = await deliver(messageEvent({ channel, user, text, ts: message.ts, threadTs }));
      if (sent.status !== 200) throw new Error(`reply refused: ${sent.status}`);
      return { ts: message.ts };
    },
    async direct(text, o = {}) {
      const user = o.user ?? ADA;
      const message = fake.postUserMessage({
        channel: DM,
        user,
        text,
        ...(o.threadTs === undefined ? {} : { threadTs: o.threadTs }),
      });
      const sent = await deliver(
        messageEvent({
          channel: DM,
          user,
          text,
          ts: message.ts,
          channelType: 'im',
          ...(o.threadTs === undefined ? {} : { threadTs: o.threadTs }),
        }),
      );
      if (sent.status !== 200) throw new Error(`direct message refused: ${sent.status}`);
      return { ts: message.ts };
    },
    async settled(turnCount, timeoutMs = 15_000) {
      await waitFor(
        `${turnCount} settled turns`,
        () => events.filter((e) => e.type === 'turn.settled').length >= turnCount,
        timeoutMs,
      );
      await engine.idle();
    },
    waitFor,
    buttons(channel, ts) {
      const found: FoundButton[] = [];
      for (const block of fake.message(channel, ts)?.blocks ?? []) {
        const b = block as { type?: string; block_id?: string; elements?: unknown[] };
        if (b.type !== 'actions') continue;
        for (const el of b.elements ?? []) {
          const e = el as { type?: string; action_id?: string; value?: string; text?: { text?: string } };
          if (e.type !== 'button') continue;
          found.push({
            actionId: e.action_id ?? '',
            blockId: b.block_id ?? '',
            value: e.value ?? '',
            text: e.text?.text ?? '',
          });
        }
      }
      return found;
    },
    feedback(channel, ts) {
      for (const block of fake.message(channel, ts)?.blocks ?? []) {
        const b = block as { type?: string; elements?: Array<Record<string, { value?: string }>> };
        if (b.type !== 'context_actions') continue;
        const el = b.elements?.[0];
        if (el === undefined) continue;
        return { positive: el.positive_button?.value ?? '', negative: el.negative_button?.value ?? '' };
      }
      return undefined;
    },
    async pressFeedback(message, value, user) {
      const channel = message.channel ?? CHANNEL;
      const stored = fake.message(channel, message.ts);
      const payload = blockActionsPayload({
        user,
        channel,
        messageTs: message.ts,
        ...(stored?.threadTs === undefined ? {} : { threadTs: stored.threadTs }),
        actionId: 'agentkourier.feedback',
        actionType: 'feedback_buttons',
        value,
        messageBlocks: stored?.blocks ?? [],
        messageText: stored?.text ?? '',
        botUserId: fake.botUserId,
      });
      return interact(payload);
    },
    async press(message, button, user) {
      const channel = message.channel ?? CHANNEL;
      const stored = fake.message(channel, message.ts);
      const payload = blockActionsPayload({
        user,
        channel,
        messageTs: message.ts,
        ...(stored?.threadTs === undefined ? {} : { threadTs: stored.threadTs }),
        actionId: button.actionId,
        blockId: button.blockId,
        value: button.value,
        messageBlocks: stored?.blocks ?? [],
        messageText: stored?.text ?? '',
        botUserId: fake.botUserId,
      });
      return interact(payload);
    },
    async pressEphemeral(ephemeral, button, user) {
      if (ephemeral.ts === undefined) throw new Error('the ephemeral has no ts');
      const payload = blockActionsPayload({
        user,
        channel: ephemeral.channel,
        messageTs: ephemeral.ts,
        ...(ephemeral.threadTs === undefined ? {} : { threadTs: ephemeral.threadTs }),
        actionId: button.actionId,
        blockId: button.blockId,
        value: button.value,
        ephemeral: true,
        responseUrl: fake.responseUrl({
          channel: ephemeral.channel,
          user,
          messageTs: ephemeral.ts,
          ephemeral: true,
        }),
      });
      return interact(payload);
    },
    submitView(view, user, values) {
      return interact(viewSubmissionPayload({ user, view, values }));
    },
    thread: (threadTs, channel = CHANNEL) => fake.messages(channel, threadTs),
    botMessages: (threadTs, channel = CHANNEL) =>
      fake.messages(channel, threadTs).filter((m) => m.ts !== threadTs && m.botId !== undefined),
    async close(o = {}) {
      if (process.env.SLACK_E2E_LOGS === '1')
        for (const line of logs) if (Number(line.level) >= 40) console.error(JSON.stringify(line));
      await engine.stop();
      await slack.stop();
      if (o.keepAgent !== true) await agent.close();
      if (o.keepStore !== true) await store.close();
      if (o.keepFake !== true) await fake.close();
    },
  };
  return harness;
}

/** An ack's payload as the HTTP response body would carry it: nothing for an empty ack. */
function ackBody(payload: Record<string, unknown> | undefined): string {
  return payload === undefined || Object.keys(payload).length === 0 ? '' : JSON.stringify(payload);
}
