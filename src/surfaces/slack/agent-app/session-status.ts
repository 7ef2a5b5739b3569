import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { EngineEvent } from '../../../core/events.js';
import type { EventSink } from '../../../core/ports.js';
import type { SessionKey } from '../../../core/store.js';
import { slackKeyOf } from '../inbound/keys.js';
import { BudgetClosedError } from '../web-api/budget.js';
import type { SlackApi } from '../web-api/client.js';
import { SlackRateLimitedError } from '../web-api/errors.js';
import { type AgentApi, meansNoAgentPlatform, type SessionStatus } from './agent-api.js';

/**
 * A thread's agent session tells the truth about its task: `processing` while the task works
 * (Slack shows the stop button then), `suspended` while the agent waits for an answer or an
 * approval, `active` once the turn settles, `closed` when the channel leaves its Binding. The
 * engine's events say when each happens, so this is an EventSink the composition root feeds.
 * The first status of a session carries its title, taken from the thread's first message.
 *
 * Calls spend agents.sessions.setStatus's own budget (Tier 3, per workspace) and only the latest
 * status is sent: a session whose status changes while its call waits sends the newest one, and
 * none when it is back to what Slack already shows. `active` waits a moment first, so a turn
 * that pauses on a question (settled, then asked) or is followed by a queued turn does not blink.
 * A failed call is logged and never fails a turn; a workspace without agent sessions (the app
 * not declared an agent, the feature off) is not asked again.
 *
 * A turn whose task ended and whose answer ends on a native stream needs no call for `active`:
 * the answer's last `chat.stopStream` carries `session_status` (`mayRideOnStop`, `rodeOnStop`),
 * unless another turn of the thread waits to be sent (it would blink) or a call is under way.
 */

export interface SessionStatusOptions {
  /** How long `active` waits for the next turn or question (ms). */
  settleGraceMs: number;
  /** Largest title, in characters (Slack allows 200; ours is shorter to stay readable). */
  maxTitle: number;
}

export const DEFAULT_SESSION_STATUS_OPTIONS: SessionStatusOptions = { settleGraceMs: 500, maxTitle: 80 };

/** How many sessions' titles wait for their first status (bounded: oldest dropped). */
const MAX_PENDING_TITLES = 10_000;

interface Tracked {
  key: SessionKey;
  desired: SessionStatus;
  /** What Slack shows, as far as this process knows. */
  shown: SessionStatus | undefined;
  running: boolean;
  grace: NodeJS.Timeout | undefined;
  done: Promise<void>;
  /** Turns of the thread received while another ran, not sent yet (bounded). */
  queued: Set<string>;
}

/** Queued turns remembered per session; past it the session simply never rides a stop. */
const MAX_QUEUED = 64;

export class SessionStatuses implements EventSink {
  readonly #agents: AgentApi;
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #options: SessionStatusOptions;
  readonly #sessions = new Map<string, Tracked>();
  readonly #titles = new Map<string, string>();
  /** Workspaces whose app has no agent sessions. */
  readonly #absent = new Set<string>();
  #closed = false;

  constructor(
    agents: AgentApi,
    api: SlackApi,
    clock: Clock,
    logger: Logger,
    options: Partial<SessionStatusOptions> = {},
  ) {
    this.#agents = agents;
    this.#api = api;
    this.#clock = clock;
    this.#logger = logger;
    this.#options = { ...DEFAULT_SESSION_STATUS_OPTIONS, ...options };
  }

  emit(event: EngineEvent): void {
    switch (event.type) {
      case 'turn.received': {
        const tracked = this.#sessions.get(event.sessionId);
        if (event.queued && tracked !== undefined && tracked.queued.size < MAX_QUEUED)
          tracked.queued.add(event.turnId);
        return;
      }
      case 'turn.sending':
        this.#sessions.get(event.sessionId)?.queued.delete(event.turnId);
        this.set(event.sessionId, 'processing');
        return;
      case 'turn.accepted':
      case 'task.followed':
      case 'question.answered':
        this.set(event.sessionId, 'processing');
        return;
      case 'question.asked':
        this.set(event.sessionId, 'suspended');
        return;
      case 'turn.settled':
        // A turn that paused (input-required, auth-required) waits for the person.
        this.set(
          event.sessionId,
          event.outcome === 'input-required' || event.outcome === 'auth-required' ? 'suspended' : 'active',
        );
        return;
      default:
        return;
    }
  }

  /** The title a new session gets: the thread's first message, cut to a line. */
  titleFrom(sessionId: string, text: string): void {
    const title = titleOf(text, this.#options.maxTitle);
    if (title === '' || this.#titles.has(sessionId) || this.#sessions.get(sessionId)?.shown !== undefined)
      return;
    this.#titles.set(sessionId, title);
    if (this.#titles.size > MAX_PENDING_TITLES) {
      const oldest = this.#titles.keys().next();
      if (oldest.done !== true) this.#titles.delete(oldest.value);
    }
  }

  /** Sets a session's status (the latest wins); `active` after the grace. */
  set(sessionId: string, status: SessionStatus): void {
    if (this.#closed) return;
    const key = slackKeyOf(sessionId);
    if (key === undefined || this.#absent.has(key.workspaceId)) return;
    let tracked = this.#sessions.get(sessionId);
    if (tracked === undefined) {
      tracked = {
        key,
        desired: status,
        shown: undefined,
        running: false,
        grace: undefined,
        done: Promise.resolve(),
        queued: new Set(),
      };
      this.#sessions.set(sessionId, tracked);
    }
    clearTimeout(tracked.grace);
    tracked.grace = undefined;
    tracked.desired = status;
    if (status === 'active' && tracked.shown === 'active' && !tracked.running) {
      // Slack shows it already (a stream's stop set it): nothing to send, nothing to wait for.
      if (tracked.queued.size === 0) this.#sessions.delete(sessionId);
      return;
    }
    if (status === 'active' && this.#options.settleGraceMs > 0) {
      const entry = tracked;
      entry.grace = setTimeout(() => {
        entry.grace = undefined;
        this.#kick(sessionId, entry);
      }, this.#options.settleGraceMs);
      entry.grace.unref();
      return;
    }
    this.#kick(sessionId, tracked);
  }

  /**
   * Whether the last stop of a turn's answer may set `active` itself: Slack shows `processing`
   * (so the workspace has agent sessions and the session exists), no status call is under way,
   * and no other turn of the thread waits to be sent.
   */
  mayRideOnStop(sessionId: string): boolean {
    const tracked = this.#sessions.get(sessionId);
    return (
      !this.#closed &&
      tracked !== undefined &&
      !tracked.running &&
      tracked.shown === 'processing' &&
      tracked.desired === 'processing' &&
      tracked.queued.size === 0
    );
  }

  /** The stop carried `active` and Slack took it: the turn's settling sends nothing. */
  rodeOnStop(sessionId: string): void {
    const tracked = this.#sessions.get(sessionId);
    if (tracked !== undefined) tracked.shown = 'active';
  }

  /** Slack may show something else than this process thinks (a stop press): send it again. */
  resend(sessionId: string, status: SessionStatus): void {
    const tracked = this.#sessions.get(sessionId);
    if (tracked !== undefined) tracked.shown = undefined;
    this.set(sessionId, status);
  }

  /** Resolves when no status call is pending (tests). */
  async idle(): Promise<void> {
    for (;;) {
      const pending = [...this.#sessions.values()].filter((t) => t.running || t.grace !== undefined);
      if (pending.length === 0) return;
      await Promise.all(pending.map((t) => t.done));
      await this.#clock.sleep(10);
    }
  }

  close(): void {
    this.#closed = true;
    for (const tracked of this.#sessions.values()) clearTimeout(tracked.grace);
    this.#sessions.clear();
  }

  #kick(sessionId: string, tracked: Tracked): void {
    if (tracked.running) return;
    tracked.running = true;
    tracked.done = this.#send(sessionId, tracked).then((settled) => {
      tracked.running = false;
      // The status changed again after the last call went out: send the newest (a run that
      // gave up after a failure waits for the next change instead of retrying for ever).
      if (settled && !this.#closed && tracked.grace === undefined && tracked.shown !== tracked.desired) {
        this.#kick(sessionId, tracked);
        return;
      }
      // Done and settled: forget it (memory stays bounded by the sessions at work).
      if (
        tracked.grace === undefined &&
        tracked.shown === tracked.desired &&
        tracked.desired !== 'processing'
      )
        if (this.#sessions.get(sessionId) === tracked) this.#sessions.delete(sessionId);
    });
  }

  /** Sends the newest status; false when it gave up (a failure, the budget closed). */
  async #send(sessionId: string, tracked: Tracked): Promise<boolean> {
    const { key } = tracked;
    const ctx = { team: key.workspaceId, requester: sessionId };
    for (let attempt = 0; attempt < 5; attempt++) {
      if (this.#closed || tracked.shown === tracked.desired || tracked.grace !== undefined) return true;
      try {
        await this.#api.acquire('agents.sessions.setStatus', ctx);
      } catch {
        return false; // the budget closed: shutting down
      }
      // The wait may have been long: send the status of now.
      const status = tracked.desired;
      if (tracked.shown === status || tracked.grace !== undefined) {
        this.#api.refund('agents.sessions.setStatus', key.workspaceId);
        return true;
      }
      const title = tracked.shown === undefined ? this.#titles.get(sessionId) : undefined;
      try {
        const answer = await this.#agents.setStatus(
          { ...ctx, prepaid: true },
          {
            channel: key.channelId,
            threadTs: key.threadId,
            status,
            ...(title === undefined ? {} : { title }),
          },
        );
        tracked.shown = status;
        if (title !== undefined) {
          this.#titles.delete(sessionId);
          // The session existed before (a stream opened it): its title is Slack's placeholder.
          if (answer.title !== title) await this.#rename(key, title);
        }
      } catch (error) {
        if (error instanceof SlackRateLimitedError) continue; // the budget waits Retry-After out
        if (error instanceof BudgetClosedError) return false;
        if (meansNoAgentPlatform(error)) {
          this.#absent.add(key.workspaceId);
          this.#logger.info(
            { team: key.workspaceId },
            'no agent sessions in this workspace; statuses are not set',
          );
          return false;
        }
        this.#logger.warn(
          { channel: key.channelId, status, err: describe(error) },
          'could not set the agent session status',
        );
        return false;
      }
    }
    // Five rounds and the status still moved on: the next change sends it.
    return false;
  }

  async #rename(key: SessionKey, title: string): Promise<void> {
    try {
      await this.#agents.rename(
        { team: key.workspaceId },
        { channel: key.channelId, threadTs: key.threadId, title },
      );
    } catch (error) {
      this.#logger.warn(
        { channel: key.channelId, err: describe(error) },
        'could not rename the agent session',
      );
    }
  }
}

/** The first non-empty line of a message, cut at `max` characters with an ellipsis. */
export function titleOf(text: string, max: number): string {
  const line = (text.split('\n').find((l) => l.trim() !== '') ?? '').trim().replace(/\s+/g, ' ');
  const chars = Array.from(line);
  if (chars.length <= max) return line;
  return `${chars
    .slice(0, Math.max(1, max - 1))
    .join('')
    .trimEnd()}…`;
}

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof Error && 'code' in error)
    return {
      name: error.name,
      code: String(error.code),
      ...('slackError' in error ? { slackError: String(error.slackError) } : {}),
    };
  return { name: error instanceof Error ? error.name : typeof error };
}
