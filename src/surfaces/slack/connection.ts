// Over our ~400-line rule on purpose, as one piece: the one place the Bolt app is assembled, in
// both modes (one token, or OAuth with its installer), with every listener (messages, the stop
// button, App Home, uninstall, prompt and picker buttons, modals, feedback) wired to its desk. Each
// desk lives in its own module; splitting this file would scatter one list of wiring.
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { App, ErrorCode, HTTPReceiver, type Receiver, SocketModeReceiver } from '@slack/bolt';
import type { Logger } from 'pino';
import type { SlackConfig } from '../../config/slack.js';
import type { ApprovalAuditSink } from '../../core/approval-audit.js';
import { type Clock, systemClock, WAIT_OVER } from '../../core/clock.js';
import { InvalidConfigError } from '../../core/errors.js';
import type { FeedbackRows } from '../../core/feedback-store.js';
import type { ChatInbound } from '../../core/inbound.js';
import type { InstallationRows } from '../../core/installation-store.js';
import type { ChannelDirectory } from '../../core/registry.js';
import type { ActivityOptions } from './agent-app/activity.js';
import { FEEDBACK_ACTION, type FeedbackCounter, FeedbackDesk } from './agent-app/feedback.js';
import { FeedbackNotes, type FeedbackNotesDeps } from './agent-app/feedback-notes.js';
import type { SessionStatusOptions } from './agent-app/session-status.js';
import { AgentStops } from './agent-app/stop.js';
import { type DescribeAgent, SuggestedPrompts } from './agent-app/suggested-prompts.js';
import type { AnswerSettings } from './answer/slack-answer.js';
import { SlackSurface } from './answer/surface.js';
import { SlackTriggerThreads } from './answer/trigger-threads.js';
import { InboundRouter } from './inbound/events.js';
import { People, type PeopleOptions } from './inbound/people.js';
import { refusingFutureRequests } from './inbound/request-time.js';
import { Workspaces } from './installations/workspaces.js';
import type { ApprovalBindings, ApprovalCounters } from './prompts/access.js';
import { ApproverGroups, type ApproverOptions } from './prompts/access.js';
import { PromptDesk } from './prompts/desk.js';
import { ANSWER_CALLBACK, DENY_CALLBACK } from './prompts/modals.js';
import { PromptTokens } from './prompts/payloads.js';
import { BudgetBook, type MethodBudget } from './web-api/budget.js';
import { createWebApiCaller, SlackApi, type SlackTelemetry } from './web-api/client.js';
import type { SlackRateLimitedError, SlackUnavailableError } from './web-api/errors.js';
import { slackLogger } from './web-api/logger.js';
import { authTestWhenReachable, DEFAULT_CONNECT_RETRY, SocketModeStart } from './web-api/slack-wait.js';

/**
 * Slack, wired: the Web API client and its budgets, the surface the engine shows things
 * through, and the Bolt app that receives events — over HTTP (events and interactivity at
 * POST /slack/events on the broker's port) or Socket Mode, as configured.
 *
 * Two steps, because the engine and the surface need each other: `connect` checks the token
 * and builds the surface (give it to the engine), `listen` starts receiving events (give it
 * the engine).
 *
 *   const slack = await SlackConnection.connect({ config, logger });
 *   const engine = new SessionEngine({ surface: slack.surface, events: slack.surface.activity, … });
 *   await slack.listen({ engine, answerStructured, store, bindings: registry, port: 8080 });
 */

export interface ConnectOptions {
  config: SlackConfig;
  logger: Logger;
  clock?: Clock;
  /**
   * While Slack cannot be reached at start (no answer, 5xx, 429), auth.test is tried again
   * with this backoff, for as long as it takes; a refused token fails at once. Socket Mode's
   * apps.connections.open waits the same way, at start and whenever the connection is reopened.
   */
  connectRetry?: { baseMs: number; maxMs: number };
  /**
   * Ends the wait for an unreachable Slack (SIGTERM during the start): connect rejects with the
   * signal's reason.
   */
  signal?: AbortSignal;
  /** Told each time auth.test could not reach Slack and another try is due (readiness says so). */
  onUnreachable?: (error: SlackUnavailableError | SlackRateLimitedError) => void;
  /** Per-method budgets overriding Slack's tiers (tests shrink them). */
  budgets?: Readonly<Record<string, MethodBudget>>;
  answers?: Partial<AnswerSettings>;
  activity?: Partial<ActivityOptions>;
  /** The agent sessions' statuses (grace before `active`, title length). */
  statuses?: Partial<SessionStatusOptions>;
  people?: Partial<PeopleOptions>;
  /** Tool approvals and kagent's questions as buttons. */
  approvals?: {
    /**
     * The secret the buttons' opaque tokens are signed with; every replica must have the same.
     * Default: derived from the bot token (which every replica has).
     */
    secret?: string;
    /** How long a user group's member list is trusted (default 5 minutes). */
    approvers?: Partial<ApproverOptions>;
    /** Where every decision sent to an agent is audited (the broker's approval audit). */
    audit?: ApprovalAuditSink;
    /** Where decisions and refused presses are counted. */
    counters?: ApprovalCounters;
  };
  /** Metrics and spans of Web API calls. */
  telemetry?: SlackTelemetry;
  /** Where feedback presses are counted (agentkourier_feedback_total). */
  feedback?: FeedbackCounter;
  /** OAuth mode: where installations are kept (the session store's database, store/open.ts). */
  installations?: InstallationRows;
}

export interface ListenOptions {
  /**
   * The engine's inbound port (`SessionEngine`): messages, stops, hand-overs and what the
   * surface reads of a session. The surface never reaches the store.
   */
  inbound: ChatInbound;
  /** Which Binding owns a channel, its tool-approval and feedback settings. `LiveRegistry` is one. */
  bindings: ChannelDirectory & ApprovalBindings & FeedbackNotesDeps['bindings'];
  /**
   * Where each person's latest feedback press is kept (the session store's database,
   * store/open.ts feedbackRowsOf). Unset: presses are logged, never counted nor told.
   */
  feedbackRows?: FeedbackRows;
  /**
   * HTTP mode: the port to listen on (0 picks one). Leave it out to mount `requestListener` on
   * the broker's own HTTP server instead.
   */
  port?: number;
  host?: string;
  /** How long an event handler may run before Slack is answered anyway (Slack allows 3 s). */
  ackWithinMs?: number;
  /** A Binding's agent as its card describes it: the DM's suggested prompts (suggested-prompts.ts). */
  describeAgent?: DescribeAgent;
  /**
   * Socket Mode: ends the wait for an unreachable Slack at start (SIGTERM during the start):
   * listen rejects with the signal's reason. Once it aborts, a lost connection is not reopened.
   */
  signal?: AbortSignal;
  /**
   * Socket Mode: told each time apps.connections.open could not reach Slack during the start
   * and another try is due (later reconnections only log theirs).
   */
  onUnreachable?: (error: SlackUnavailableError | SlackRateLimitedError) => void;
}

export class SlackConnection {
  readonly surface: SlackSurface;
  /** Threads that triggers (alerts, schedules) start in Slack. */
  readonly triggers: SlackTriggerThreads;
  /** kagent's prompts as buttons. */
  readonly approvals: PromptDesk;
  readonly api: SlackApi;
  /** Single-workspace mode: the bot and its workspace (OAuth mode: each event's own, from Bolt). */
  readonly botUserId: string | undefined;
  readonly teamId: string | undefined;
  /** OAuth mode: the installed workspaces (undefined with a token from the environment). */
  readonly workspaces: Workspaces | undefined;
  readonly #config: SlackConfig;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #budgets: BudgetBook;
  readonly #people: People;
  readonly #botId: string | undefined;
  readonly #feedback: FeedbackCounter | undefined;
  #app: App | undefined;
  #receiver: HTTPReceiver | undefined;
  #server: Server | undefined;
  /** Socket Mode: the start's wait for the first connection, and its end on a stop. */
  readonly #socketStart: SocketModeStart;

  private constructor(
    init: {
      api: SlackApi;
      budgets: BudgetBook;
      botUserId: string | undefined;
      teamId: string | undefined;
      botId: string | undefined;
      workspaces?: Workspaces;
    },
    options: ConnectOptions,
  ) {
    this.#config = options.config;
    this.#logger = options.logger;
    this.#clock = options.clock ?? systemClock;
    this.#budgets = init.budgets;
    this.api = init.api;
    this.botUserId = init.botUserId;
    this.teamId = init.teamId;
    this.#botId = init.botId;
    this.#feedback = options.feedback;
    this.#socketStart = new SocketModeStart({
      clock: this.#clock,
      backoff: options.connectRetry ?? DEFAULT_CONNECT_RETRY,
      logger: this.#logger,
      apiUrl: this.#config.apiUrl,
    });
    this.workspaces = init.workspaces;
    this.#people = new People(init.api, this.#clock, options.logger, options.people);
    this.approvals = new PromptDesk({
      api: init.api,
      ...(options.approvals?.counters === undefined ? {} : { counters: options.approvals.counters }),
      clock: this.#clock,
      logger: options.logger,
      // Every replica has the bot token, or in OAuth mode the client secret.
      tokens: new PromptTokens(
        options.approvals?.secret ?? options.config.botToken ?? options.config.oauth?.clientSecret ?? '',
      ),
      approvers: new ApproverGroups(init.api, this.#clock, options.logger, options.approvals?.approvers),
      ...(options.approvals?.audit === undefined ? {} : { audit: options.approvals.audit }),
    });
    this.triggers = new SlackTriggerThreads({
      api: init.api,
      clock: this.#clock,
      logger: options.logger,
      ...(init.teamId === undefined ? {} : { teamId: init.teamId }),
    });
    this.surface = new SlackSurface({
      api: init.api,
      clock: this.#clock,
      logger: options.logger,
      prompts: this.approvals,
      people: this.#people,
      ...(options.answers === undefined ? {} : { answers: options.answers }),
      ...(options.activity === undefined ? {} : { activity: options.activity }),
      ...(options.statuses === undefined ? {} : { statuses: options.statuses }),
    });
  }

  /** Checks the bot token with auth.test (a refused token fails here, at start) and builds the surface. */
  static async connect(options: ConnectOptions): Promise<SlackConnection> {
    const clock = options.clock ?? systemClock;
    const { oauth } = options.config;
    if (oauth !== undefined) {
      // OAuth mode: no token to check at start; each workspace's comes from its installation.
      if (options.installations === undefined)
        throw new InvalidConfigError('Slack with several workspaces needs a store that keeps installations');
      const workspaces = await Workspaces.open({
        config: oauth,
        apiUrl: options.config.apiUrl,
        rows: options.installations,
        clock,
        logger: options.logger,
      });
      const caller = createWebApiCaller({
        token: undefined,
        apiUrl: options.config.apiUrl,
        logger: options.logger,
      });
      const budgets = new BudgetBook(clock, options.budgets);
      const api = new SlackApi(caller, budgets, options.telemetry, workspaces.tokens);
      return new SlackConnection(
        { api, budgets, botUserId: undefined, teamId: undefined, botId: undefined, workspaces },
        options,
      );
    }
    const caller = createWebApiCaller({
      token: options.config.botToken,
      apiUrl: options.config.apiUrl,
      logger: options.logger,
    });
    const budgets = new BudgetBook(clock, options.budgets);
    const api = new SlackApi(caller, budgets, options.telemetry);
    const who = await authTestWhenReachable(api, clock, options);
    options.logger.info({ team: who.teamId, botUserId: who.botUserId }, 'connected to Slack');
    return new SlackConnection(
      { api, budgets, botUserId: who.botUserId, teamId: who.teamId, botId: who.botId },
      options,
    );
  }

  /** HTTP mode: the handler for POST /slack/events, to mount on the broker's own server. */
  get requestListener(): RequestListener | undefined {
    return this.#receiver?.requestListener;
  }

  /** Starts receiving events. Returns the port in HTTP mode when it listens itself. */
  async listen(options: ListenOptions): Promise<{ port?: number }> {
    if (this.#app !== undefined) throw new Error('the Slack app is already listening');
    const router = new InboundRouter({
      inbound: options.inbound,
      bindings: options.bindings,
      people: this.#people,
      api: this.api,
      clock: this.#clock,
      logger: this.#logger,
      ...(this.botUserId === undefined ? {} : { botUserId: this.botUserId }),
      ...(this.teamId === undefined ? {} : { teamId: this.teamId }),
      titles: this.surface.statuses,
      ...(options.feedbackRows === undefined
        ? {}
        : {
            feedbackNotes: new FeedbackNotes({
              rows: options.feedbackRows,
              bindings: options.bindings,
              logger: this.#logger,
            }),
          }),
      ...(options.describeAgent === undefined ? {} : { describe: options.describeAgent }),
    });
    const team = this.teamId === undefined ? {} : { teamId: this.teamId };
    const stops = new AgentStops({
      inbound: options.inbound,
      surface: this.surface,
      api: this.api,
      clock: this.#clock,
      logger: this.#logger,
      ...team,
    });
    const prompts = new SuggestedPrompts({
      agents: this.surface.agents,
      bindings: options.bindings,
      describe: options.describeAgent,
      clock: this.#clock,
      logger: this.#logger,
      ...team,
    });
    const feedback = new FeedbackDesk({
      inbound: options.inbound,
      ...(options.feedbackRows === undefined ? {} : { rows: options.feedbackRows }),
      clock: this.#clock,
      logger: this.#logger,
      ...team,
      ...(this.#feedback === undefined ? {} : { counter: this.#feedback }),
    });
    this.approvals.wire({
      inbound: options.inbound,
      bindings: options.bindings,
      people: this.#people,
    });
    const ackWithin = options.ackWithinMs ?? 2_000;
    const logger = slackLogger(this.#logger, 'slack-bolt');
    const { connection } = this.#config;
    let receiver: Receiver;
    const workspaces = this.workspaces;
    if (connection.kind === 'http') {
      this.#receiver = new HTTPReceiver({
        signingSecret: connection.signingSecret,
        endpoints: connection.path,
        // The response waits for the handler (bounded by `ackWithin`), so an event is stored
        // before Slack hears it was received; a crash before that makes Slack deliver it again.
        processBeforeResponse: true,
        logger,
        // OAuth mode: the install page and the redirect (GET), served beside the events.
        ...(workspaces === undefined ? {} : workspaces.receiverOptions()),
      });
      // Bolt's own server (a port given) and the broker's (requestListener) both call it.
      this.#receiver.requestListener = refusingFutureRequests(
        this.#receiver.requestListener,
        this.#clock,
        this.#logger,
      );
      receiver = this.#receiver;
    } else {
      const socket = new SocketModeReceiver({
        appToken: connection.appToken,
        logger,
        installerOptions: { clientOptions: this.#socketStart.clientOptions(options) },
      });
      // The client reconnects by itself (a refresh Slack asks for, a dropped network); these
      // lines are how an operator sees that happen, Bolt's own being debug lines.
      socket.client.on('connected', () => this.#logger.info('Slack Socket Mode connection open'));
      socket.client.on('reconnecting', () =>
        this.#logger.warn('Slack Socket Mode connection lost; opening a new one'),
      );
      receiver = socket;
    }
    // Single-workspace mode gives Bolt the token; OAuth mode leaves it to the receiver's
    // installer, which looks each event's up by workspace (Bolt refuses both at once).
    const app = new App({
      receiver,
      ...(this.#config.botToken === undefined ? {} : { token: this.#config.botToken }),
      ...(this.botUserId === undefined ? {} : { botUserId: this.botUserId }),
      ...(this.#botId === undefined ? {} : { botId: this.#botId }),
      tokenVerificationEnabled: false,
      socketMode: connection.kind === 'socket',
      convoStore: false,
      logger,
      clientOptions: { slackApiUrl: this.#config.apiUrl },
    });
    // Slack wants its answer within 3 seconds; the turn itself never waits for the agent,
    // and whatever is still going on after `ackWithin` finishes after the answer.
    const bounded = async (work: Promise<void>): Promise<void> => {
      const caught = work.catch((error: unknown) => {
        this.#logger.error(
          { err: error instanceof Error ? error.name : typeof error },
          'a Slack event failed',
        );
      });
      const deadline = new AbortController();
      await Promise.race([caught, this.#clock.sleep(ackWithin, deadline.signal).catch(() => undefined)]);
      deadline.abort(WAIT_OVER);
    };
    const handle = async ({
      body,
      context,
    }: {
      body: unknown;
      context: { botUserId?: string };
    }): Promise<void> => bounded(router.handle(body, context.botUserId));
    app.event('app_mention', handle);
    app.event('message', handle);
    // The agent session's stop button (Bolt 5.1 has no helper: a plain event listener).
    app.event('agent_session_stopped', async ({ body }) => bounded(stops.handle(body)));
    // A person opened the app's Messages tab: the DM's suggested prompts, from the agent card.
    app.event('app_home_opened', async ({ body }) => bounded(prompts.opened(body)));
    if (workspaces !== undefined) {
      // Bolt looks up no token for these two (the installation may be gone): context has the team.
      app.event('app_uninstalled', async ({ context }) => {
        if (context.teamId !== undefined) await bounded(workspaces.removed(context.teamId));
      });
      app.event('tokens_revoked', async ({ event, context }) => {
        if (context.teamId !== undefined)
          await bounded(workspaces.removed(context.teamId, event.tokens.bot ?? []));
      });
    }
    // Buttons of kagent's prompts, and the modals they open (prompts/desk.ts). The press is
    // acknowledged at once; the work runs within the same bound as events.
    app.action({ type: 'block_actions', action_id: /^agentkourier\.prompt\./ }, async ({ ack, body }) => {
      await ack();
      await bounded(this.approvals.press(body));
    });
    // Feedback buttons under an answer: recorded, never a turn.
    app.action({ type: 'block_actions', action_id: FEEDBACK_ACTION }, async ({ ack, body }) => {
      await ack();
      await bounded(feedback.press(body));
    });
    // The agent picker of a shared channel (inbound/agent-picker.ts).
    app.action(
      { type: 'block_actions', action_id: /^agentkourier\.pick\./ },
      async ({ ack, body, context, respond }) => {
        await ack();
        await bounded(router.pick(body, context.botUserId, respond));
      },
    );
    app.view({ type: 'view_submission', callback_id: DENY_CALLBACK }, async ({ ack, body }) => {
      await ack();
      await bounded(this.approvals.submitted(body));
    });
    app.view({ type: 'view_submission', callback_id: ANSWER_CALLBACK }, async ({ ack, body }) => {
      const errors = await this.approvals.checkSubmission(body).catch(() => undefined);
      if (errors !== undefined) {
        await ack({ response_action: 'errors', errors });
        return;
      }
      await ack();
      await bounded(this.approvals.submitted(body));
    });
    app.error(async (error) => {
      // An event from a workspace without an installation (one that uninstalled the app, whose
      // events may still be on their way) is expected traffic: it is dropped, and said so.
      if (error.code === ErrorCode.AuthorizationError) {
        this.#logger.warn(
          { code: error.code },
          'an event came from a Slack workspace the app is not installed in (or no longer); it was dropped',
        );
        return;
      }
      this.#logger.error({ code: error.code }, 'the Slack app failed to handle a request');
    });
    this.#app = app;
    if (connection.kind === 'socket') {
      await this.#socketStart.start(app, options.signal);
      return {};
    }
    if (options.port === undefined) return {};
    const server = (await app.start({
      port: options.port,
      ...(options.host === undefined ? {} : { host: options.host }),
    })) as Server;
    this.#server = server;
    return { port: (server.address() as AddressInfo).port };
  }

  /**
   * Gives up the Slack work still waiting for its rate budget (tool cards, edits queued behind a
   * channel's limit): each waiting call, and every later one, fails at once. The broker's stop
   * calls it right after the engine has aborted its drivers, so none of them waits minutes for
   * a call that no longer matters; what the next process resumes is in the store.
   */
  abandonPending(): void {
    this.#budgets.close();
  }

  /** Stops receiving events, pending budget waits and timers. */
  async stop(): Promise<void> {
    // First: a wait for Slack must not open a connection once the stop has begun.
    this.#socketStart.halt();
    const app = this.#app;
    this.#app = undefined;
    if (app !== undefined && (this.#server !== undefined || this.#config.connection.kind === 'socket')) {
      await app.stop().catch(() => undefined);
    }
    this.#server = undefined;
    this.approvals.close();
    this.surface.close();
    this.#budgets.close();
  }
}
