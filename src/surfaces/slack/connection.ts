// Just over our ~450-line rule as one piece: the one place that builds Bolt's App and receiver,
// and wires every Slack part to the engine's ports (connect, listen, stop share its fields).
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { App, ErrorCode, HTTPReceiver, type Receiver, SocketModeReceiver } from '@slack/bolt';
import type { Logger } from 'pino';
import type { SlackConfig } from '../../config/slack.js';
import type { ApprovalAuditSink } from '../../core/approval-audit.js';
import { type Clock, systemClock } from '../../core/clock.js';
import { InvalidConfigError } from '../../core/errors.js';
import type { FeedbackRows } from '../../core/feedback-store.js';
import type { ChatInbound } from '../../core/inbound.js';
import type { InstallationRows } from '../../core/installation-store.js';
import type { SignOut } from '../../core/ports.js';
import type { ChannelDirectory } from '../../core/registry.js';
import type { ActivityOptions } from './agent-app/activity.js';
import { type FeedbackCounter, FeedbackDesk } from './agent-app/feedback.js';
import { FeedbackNotes, type FeedbackNotesDeps } from './agent-app/feedback-notes.js';
import type { SessionStatusOptions } from './agent-app/session-status.js';
import { AgentStops } from './agent-app/stop.js';
import { type DescribeAgent, SuggestedPrompts } from './agent-app/suggested-prompts.js';
import type { AnswerSettings } from './answer/slack-answer.js';
import { SlackSurface } from './answer/surface.js';
import { SlackTriggerThreads } from './answer/trigger-threads.js';
import { Departures, type PersonErasure } from './inbound/departures.js';
import { InboundRouter } from './inbound/events.js';
import { People, type PeopleOptions } from './inbound/people.js';
import { refusingFutureRequests } from './inbound/request-time.js';
import { Workspaces } from './installations/workspaces.js';
import { ackBound, type SlackListeners } from './listeners.js';
import {
  type ApprovalBindings,
  type ApprovalCounters,
  ApproverGroups,
  type ApproverOptions,
} from './prompts/access.js';
import { PromptTokens } from './prompts/payloads.js';
import { PromptPresses } from './prompts/presses.js';
import { PromptShelf } from './prompts/shelf.js';
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
 * and builds the surface, complete (give it to the engine), `listen` builds the parts that take
 * Slack's events, complete with the engine, each registering its own listeners on the Bolt app,
 * and starts receiving.
 *
 *   const slack = await SlackConnection.connect({ config, logger, bindings: registry });
 *   const engine = new SessionEngine({ surface: slack.surface, events: slack.surface.activity, … });
 *   await slack.listen({ inbound: engine, port: 8080 });
 */

export interface ConnectOptions {
  config: SlackConfig;
  logger: Logger;
  /** Which Binding owns a channel, its tool-approval and feedback settings. `LiveRegistry` is one. */
  bindings: SlackBindings;
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

/** What the surface reads of the Bindings: the channels' owners and their settings. */
export type SlackBindings = ChannelDirectory & ApprovalBindings & FeedbackNotesDeps['bindings'];

export interface ListenOptions {
  /**
   * The engine's inbound port (`SessionEngine`): messages, stops, hand-overs and what the
   * surface reads of a session. The surface never reaches the store.
   */
  inbound: ChatInbound;
  /**
   * Where each person's latest feedback press is kept (the session store's database,
   * store/open.ts feedbackRowsOf). Unset: presses are logged, never counted nor told.
   */
  feedbackRows?: FeedbackRows;
  /**
   * Erases a person Slack deactivated (`user_change`, inbound/departures.ts). Unset: a
   * deactivation changes nothing here; retention forgets their threads in time.
   */
  erasure?: PersonErasure;
  /** The "sign out" command: ends a person's sign-in links at identity providers. */
  signOut?: SignOut;
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
  readonly #bindings: SlackBindings;
  /** Structured questions as prompts with buttons: shown by the surface, pressed in listen's parts. */
  readonly #shelf: PromptShelf;
  readonly #botId: string | undefined;
  readonly #feedback: FeedbackCounter | undefined;
  readonly #audit: ApprovalAuditSink | undefined;
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
    this.#bindings = options.bindings;
    this.api = init.api;
    this.botUserId = init.botUserId;
    this.teamId = init.teamId;
    this.#botId = init.botId;
    this.#feedback = options.feedback;
    this.#audit = options.approvals?.audit;
    this.#socketStart = new SocketModeStart({
      clock: this.#clock,
      backoff: options.connectRetry ?? DEFAULT_CONNECT_RETRY,
      logger: this.#logger,
      apiUrl: this.#config.apiUrl,
    });
    this.workspaces = init.workspaces;
    this.#people = new People(init.api, this.#clock, options.logger, options.people);
    this.#shelf = new PromptShelf({
      api: init.api,
      ...(options.approvals?.counters === undefined ? {} : { counters: options.approvals.counters }),
      clock: this.#clock,
      logger: options.logger,
      // Every replica has the bot token, or in OAuth mode the client secret.
      tokens: new PromptTokens(
        options.approvals?.secret ?? options.config.botToken ?? options.config.oauth?.clientSecret ?? '',
      ),
      approvers: new ApproverGroups(init.api, this.#clock, options.logger, options.approvals?.approvers),
      bindings: options.bindings,
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
      prompts: this.#shelf,
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

  /** Starts receiving events: each part registers its own listeners. Returns the port in HTTP mode when it listens itself. */
  async listen(options: ListenOptions): Promise<{ port?: number }> {
    if (this.#app !== undefined) throw new Error('the Slack app is already listening');
    const app = this.#bolt(this.#receiverFor(options));
    const bounded = ackBound(this.#clock, this.#logger, options.ackWithinMs ?? 2_000);
    for (const part of this.#parts(options)) part.register(app, bounded);
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
    if (this.#config.connection.kind === 'socket') {
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
   * The parts that take Slack's events, each complete: messages and the agent picker, the stop
   * button, the DM's suggested prompts, feedback, the prompts' buttons and modals, and in OAuth
   * mode the installations.
   */
  #parts(options: ListenOptions): SlackListeners[] {
    const { inbound, feedbackRows, describeAgent, signOut } = options;
    const common = { clock: this.#clock, logger: this.#logger };
    const team = this.teamId === undefined ? {} : { teamId: this.teamId };
    const bindings = this.#bindings;
    const router = new InboundRouter({
      ...common,
      inbound,
      bindings,
      people: this.#people,
      api: this.api,
      ...(this.botUserId === undefined ? {} : { botUserId: this.botUserId }),
      ...team,
      titles: this.surface.statuses,
      ...(feedbackRows === undefined
        ? {}
        : { feedbackNotes: new FeedbackNotes({ rows: feedbackRows, bindings, logger: this.#logger }) }),
      ...(describeAgent === undefined ? {} : { describe: describeAgent }),
      ...(signOut === undefined ? {} : { signOut }),
    });
    const parts: SlackListeners[] = [
      router,
      new AgentStops({ ...common, inbound, surface: this.surface, api: this.api, ...team }),
      new SuggestedPrompts({
        ...common,
        agents: this.surface.agents,
        bindings,
        describe: describeAgent,
        ...team,
      }),
      new FeedbackDesk({
        ...common,
        inbound,
        ...(feedbackRows === undefined ? {} : { rows: feedbackRows }),
        ...team,
        ...(this.#feedback === undefined ? {} : { counter: this.#feedback }),
      }),
      new PromptPresses({
        ...common,
        shelf: this.#shelf,
        inbound,
        people: this.#people,
        api: this.api,
        ...(this.#audit === undefined ? {} : { audit: this.#audit }),
      }),
    ];
    if (this.workspaces !== undefined) parts.push(this.workspaces);
    if (options.erasure !== undefined)
      parts.push(new Departures({ erasure: options.erasure, clock: this.#clock, logger: this.#logger }));
    return parts;
  }

  /** Events over HTTP (Bolt's receiver, mounted on the broker's server or its own) or Socket Mode. */
  #receiverFor(options: ListenOptions): Receiver {
    const logger = slackLogger(this.#logger, 'slack-bolt');
    const { connection } = this.#config;
    if (connection.kind === 'http') {
      this.#receiver = new HTTPReceiver({
        signingSecret: connection.signingSecret,
        endpoints: connection.path,
        // The response waits for the handler (bounded by `ackWithin`), so an event is stored
        // before Slack hears it was received; a crash before that makes Slack deliver it again.
        processBeforeResponse: true,
        logger,
        // OAuth mode: the install page and the redirect (GET), served beside the events.
        ...(this.workspaces === undefined ? {} : this.workspaces.receiverOptions()),
      });
      // Bolt's own server (a port given) and the broker's (requestListener) both call it.
      this.#receiver.requestListener = refusingFutureRequests(
        this.#receiver.requestListener,
        this.#clock,
        this.#logger,
      );
      return this.#receiver;
    }
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
    return socket;
  }

  /**
   * The Bolt app. Single-workspace mode gives Bolt the token; OAuth mode leaves it to the
   * receiver's installer, which looks each event's up by workspace (Bolt refuses both at once).
   */
  #bolt(receiver: Receiver): App {
    return new App({
      receiver,
      ...(this.#config.botToken === undefined ? {} : { token: this.#config.botToken }),
      ...(this.botUserId === undefined ? {} : { botUserId: this.botUserId }),
      ...(this.#botId === undefined ? {} : { botId: this.#botId }),
      tokenVerificationEnabled: false,
      socketMode: this.#config.connection.kind === 'socket',
      convoStore: false,
      logger: slackLogger(this.#logger, 'slack-bolt'),
      clientOptions: { slackApiUrl: this.#config.apiUrl },
    });
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
    this.surface.close();
    this.#budgets.close();
  }
}
