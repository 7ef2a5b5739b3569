import { SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type BackoffPolicy, backoffDelay } from '../../../core/backoff.js';
import type { BudgetBook } from './budget.js';
import {
  SlackAuthError,
  SlackMalformedResponseError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackUnavailableError,
} from './errors.js';
import { mapError, type WebApiCaller, WebClientCaller } from './web-client.js';

/**
 * The Web API methods the surface uses, each behind its workspace's rate budget, with Slack's
 * answers checked with zod and its failures turned into our typed errors. The calls go through
 * `@slack/web-api`'s WebClient (web-client.ts), which neither retries nor waits out a 429: a
 * retry of an edit must carry the latest text, not the one that was refused, so callers decide.
 * Bolt keeps its own WebClient for what Bolt itself calls.
 */

/** Builds the one caller the surface calls Slack with. */

/**
 * Which bot token a call to a workspace is made with. One token from the environment
 * (single-workspace mode), or each workspace's own from its installation (OAuth mode:
 * installations/tokens.ts).
 */
export interface WorkspaceTokens {
  /** Throws WorkspaceNotInstalledError for a workspace the app is not (or no longer) in. */
  tokenFor(team: string): Promise<string>;
}
export function createWebApiCaller(options: {
  token: string | undefined;
  apiUrl: string;
  logger: Logger;
  timeoutMs?: number;
}): WebApiCaller {
  return new WebClientCaller(options);
}

export interface CallContext {
  /** The workspace (team id) whose budget the call spends. */
  team: string;
  /** For methods budgeted per channel (chat.postMessage). */
  channel?: string;
  /** Who waits for the token: an answer's turn id keeps the budget fair between threads. */
  requester?: string;
  urgent?: boolean;
  signal?: AbortSignal;
  /** The token was already taken with `reserve`. */
  prepaid?: boolean;
}

export interface AnswerMetadata {
  event_type: string;
  event_payload: Record<string, string | number>;
}

export interface MessageArgs {
  channel: string;
  text: string;
  thread_ts?: string;
  blocks?: unknown[];
  metadata?: AnswerMetadata;
}

const okTs = z.object({ ts: z.string() });
const anyOk = z.object({});

const authTest = z.object({ user_id: z.string(), team_id: z.string(), bot_id: z.string().optional() });

const userInfo = z.object({
  user: z.object({
    id: z.string(),
    name: z.string().optional(),
    real_name: z.string().optional(),
    deleted: z.boolean().optional(),
    is_bot: z.boolean().optional(),
    profile: z
      .object({
        display_name: z.string().optional(),
        real_name: z.string().optional(),
        email: z.string().optional(),
      })
      .optional(),
  }),
});
export type SlackUser = z.infer<typeof userInfo>['user'];

const groupMembers = z.object({ users: z.array(z.string()) });

const replies = z.object({
  messages: z.array(
    z.object({
      ts: z.string(),
      bot_id: z.string().optional(),
      user: z.string().optional(),
      text: z.string().optional(),
      streaming_state: z.string().optional(),
      metadata: z
        .object({ event_type: z.string(), event_payload: z.record(z.string(), z.unknown()).optional() })
        .optional(),
    }),
  ),
  has_more: z.boolean().optional(),
  response_metadata: z.object({ next_cursor: z.string().optional() }).optional(),
});
export type RepliesPage = z.infer<typeof replies>;

/** What Slack calls report, for metrics (observability's BrokerMetrics implements it). */
export interface SlackApiObserver {
  /** `result`: ok, rate_limited, refused, unavailable or malformed. */
  slackCall(method: string, result: string, seconds: number): void;
  /** A 429, and the Retry-After it asked for. */
  slackThrottled(method: string, retryAfterMs: number): void;
  /** How long a call waited for its rate budget. */
  slackWaited(method: string, seconds: number): void;
}

export interface SlackTelemetry {
  observer?: SlackApiObserver;
  /** Spans of calls (CLIENT kind); default: the global tracer (a no-op without an SDK). */
  tracer?: Tracer;
}

/** A call's result as a bounded label. */
function resultOf(error: unknown): string {
  if (error instanceof SlackRateLimitedError) return 'rate_limited';
  if (error instanceof SlackPlatformError) return 'refused';
  if (error instanceof SlackMalformedResponseError) return 'malformed';
  return 'unavailable';
}

export class SlackApi {
  readonly #caller: WebApiCaller;
  readonly #budgets: BudgetBook;
  readonly #observer: SlackApiObserver | undefined;
  readonly #tracer: Tracer;
  readonly #host: string;
  readonly #tokens: WorkspaceTokens | undefined;

  /**
   * `tokens`: each workspace's own bot token (OAuth mode); without it every call goes with the
   * caller's one token (single-workspace mode).
   */
  constructor(
    caller: WebApiCaller,
    budgets: BudgetBook,
    telemetry: SlackTelemetry = {},
    tokens?: WorkspaceTokens,
  ) {
    this.#caller = caller;
    this.#tokens = tokens;
    this.#budgets = budgets;
    this.#observer = telemetry.observer;
    this.#tracer = telemetry.tracer ?? trace.getTracer('agentkourier.slack');
    this.#host = hostOf(caller.apiUrl);
  }

  /** Takes a token of a method's budget only if one is free now (for calls with a fallback). */
  reserve(method: string, team: string, channel?: string): boolean {
    return this.#budgets.for(method, team, channel).tryTake();
  }

  /**
   * Waits for a token of a method's budget, for a call made later with `prepaid`: a caller
   * that waited long can then send the state of now, not the state of when it started waiting.
   */
  async acquire(method: string, ctx: CallContext): Promise<void> {
    await this.#budgets.for(method, ctx.team, ctx.channel).take(ctx.requester ?? method, {
      ...(ctx.urgent === undefined ? {} : { urgent: ctx.urgent }),
      ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
    });
  }

  /** Gives back a token acquired for a call that was not made. */
  refund(method: string, team: string, channel?: string): void {
    this.#budgets.for(method, team, channel).refund();
  }

  /** The requester's waiting takes go ahead of the others (its answer is final). */
  promote(requester: string): void {
    this.#budgets.promote(requester);
  }

  /** Checks the bot token and names the bot and its workspace. */
  async authTest(): Promise<{ botUserId: string; teamId: string; botId: string | undefined }> {
    try {
      const parsed = await this.#measured('auth.test', {}, authTest);
      return { botUserId: parsed.user_id, teamId: parsed.team_id, botId: parsed.bot_id };
    } catch (error) {
      const mapped = mapError('auth.test', error);
      if (mapped instanceof SlackPlatformError) throw new SlackAuthError(mapped.slackError);
      throw mapped;
    }
  }

  postMessage(ctx: CallContext, args: MessageArgs): Promise<{ ts: string }> {
    return this.#call('chat.postMessage', { ...ctx, channel: args.channel }, toArgs(args), okTs);
  }

  async update(ctx: CallContext, args: MessageArgs & { ts: string }): Promise<void> {
    await this.#call('chat.update', ctx, toArgs(args), anyOk);
  }

  async delete(ctx: CallContext, args: { channel: string; ts: string }): Promise<void> {
    await this.#call('chat.delete', ctx, args, anyOk);
  }

  async postEphemeral(
    ctx: CallContext,
    args: { channel: string; user: string; text: string; thread_ts?: string; blocks?: unknown[] },
  ): Promise<void> {
    await this.#call('chat.postEphemeral', ctx, args, anyOk);
  }

  startStream(
    ctx: CallContext,
    args: {
      channel: string;
      thread_ts: string;
      markdown_text: string;
      recipient_user_id?: string;
      recipient_team_id?: string;
    },
  ): Promise<{ ts: string }> {
    return this.#call('chat.startStream', ctx, args, okTs);
  }

  async appendStream(
    ctx: CallContext,
    args: { channel: string; ts: string; markdown_text: string },
  ): Promise<void> {
    await this.#call('chat.appendStream', ctx, args, anyOk);
  }

  async stopStream(
    ctx: CallContext,
    args: {
      channel: string;
      ts: string;
      markdown_text?: string;
      metadata?: AnswerMetadata;
      blocks?: unknown[];
      session_status?: string;
    },
  ): Promise<void> {
    await this.#call('chat.stopStream', ctx, args, anyOk);
  }

  async addReaction(
    ctx: CallContext,
    args: { channel: string; timestamp: string; name: string },
  ): Promise<void> {
    await this.#call('reactions.add', ctx, args, anyOk);
  }

  async removeReaction(
    ctx: CallContext,
    args: { channel: string; timestamp: string; name: string },
  ): Promise<void> {
    await this.#call('reactions.remove', ctx, args, anyOk);
  }

  async userInfo(ctx: CallContext, user: string): Promise<SlackUser> {
    const result = await this.#call('users.info', ctx, { user }, userInfo);
    return result.user;
  }

  /** The member ids of a user group (approverGroups, Q-5). */
  async userGroupMembers(ctx: CallContext, usergroup: string): Promise<string[]> {
    const result = await this.#call('usergroups.users.list', ctx, { usergroup }, groupMembers);
    return result.users;
  }

  /** Opens a modal in answer to a person's press (`trigger_id` lives 3 seconds). */
  async openView(
    ctx: CallContext,
    args: { trigger_id: string; view: Record<string, unknown> },
  ): Promise<void> {
    await this.#call('views.open', ctx, args, anyOk);
  }

  replies(
    ctx: CallContext,
    args: { channel: string; ts: string; cursor?: string; limit: number },
  ): Promise<RepliesPage> {
    return this.#call('conversations.replies', ctx, { ...args, include_all_metadata: true }, replies);
  }

  /** A channel's messages since `oldest` (a Slack ts), newest first, with their metadata. */
  history(
    ctx: CallContext,
    args: { channel: string; oldest: string; cursor?: string; limit: number },
  ): Promise<RepliesPage> {
    return this.#call('conversations.history', ctx, { ...args, include_all_metadata: true }, replies);
  }

  /** A method without a wrapper here (agent-api.ts): the same budget, schema check and span. */
  call<T>(method: string, ctx: CallContext, args: Record<string, unknown>, schema: z.ZodType<T>): Promise<T> {
    return this.#call(method, ctx, args, schema);
  }

  async #call<T>(
    method: string,
    ctx: CallContext,
    args: Record<string, unknown>,
    schema: z.ZodType<T>,
  ): Promise<T> {
    // Looked up before the budget is spent: a workspace without an installation spends none.
    const token = this.#tokens === undefined ? undefined : await this.#tokens.tokenFor(ctx.team);
    const budget = this.#budgets.for(method, ctx.team, ctx.channel);
    if (ctx.prepaid !== true) {
      const waitStarted = performance.now();
      await budget.take(ctx.requester ?? method, {
        ...(ctx.urgent === undefined ? {} : { urgent: ctx.urgent }),
        ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
      });
      this.#observer?.slackWaited(method, (performance.now() - waitStarted) / 1000);
    }
    try {
      return await this.#measured(method, args, schema, token);
    } catch (error) {
      if (error instanceof SlackRateLimitedError) budget.pause(error.retryAfterMs);
      throw error;
    }
  }

  /** One Web API call as a span and a count, its answer checked, its failure ours. */
  async #measured<T>(
    method: string,
    args: Record<string, unknown>,
    schema: z.ZodType<T>,
    token?: string,
  ): Promise<T> {
    const span = this.#tracer.startSpan(method, {
      kind: SpanKind.CLIENT,
      attributes: { 'rpc.system.name': 'slack', 'rpc.method': method, 'server.address': this.#host },
    });
    const started = performance.now();
    let result = 'ok';
    try {
      const answer = await this.#caller.call(method, args, token);
      const parsed = schema.safeParse(answer);
      if (!parsed.success) throw new SlackMalformedResponseError(method);
      return parsed.data;
    } catch (error) {
      result = resultOf(error);
      if (error instanceof SlackRateLimitedError) this.#observer?.slackThrottled(method, error.retryAfterMs);
      span.setAttribute('error.type', result);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
      this.#observer?.slackCall(method, result, (performance.now() - started) / 1000);
    }
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return 'slack';
  }
}

function toArgs(args: MessageArgs & { ts?: string }): Record<string, unknown> {
  const out: Record<string, unknown> = { channel: args.channel, text: args.text };
  if (args.ts !== undefined) out.ts = args.ts;
  if (args.thread_ts !== undefined) out.thread_ts = args.thread_ts;
  // The WebClient sends objects as JSON strings in the form body, as Slack expects.
  if (args.blocks !== undefined) out.blocks = args.blocks;
  if (args.metadata !== undefined) out.metadata = args.metadata;
  return out;
}

/** A call Slack did not answer waits 500 ms · 2ⁿ before its n-th retry (1 s, 2 s, …), at most 30 s. */
export const UNAVAILABLE_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };

/**
 * Runs a call that has no later state to catch up with (a notice, a question, a reaction) a
 * few times: after a 429 the budget has been paused, so trying again simply waits its turn;
 * after no answer from Slack it waits a little. Slack's refusals are final.
 */
export async function retrying<T>(
  clock: { sleep(ms: number, signal?: AbortSignal): Promise<void> },
  call: () => Promise<T>,
  options: { attempts?: number; only?: 'rate-limited' } = {},
): Promise<T> {
  const attempts = options.attempts ?? 4;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      // 'rate-limited': a call that must not be made twice (Slack may have done one that went unanswered).
      const transient =
        error instanceof SlackRateLimitedError ||
        (options.only === undefined && error instanceof SlackUnavailableError);
      if (!transient || attempt >= attempts) throw error;
      if (error instanceof SlackUnavailableError)
        await clock.sleep(backoffDelay(attempt, UNAVAILABLE_BACKOFF));
    }
  }
}
