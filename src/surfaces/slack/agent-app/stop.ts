import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../../../core/clock.js';
import type { ChatInbound } from '../../../core/inbound.js';
import type { CancelResult } from '../../../core/session/cancelling.js';
import { type SessionKey, sessionIdOf } from '../../../core/store.js';
import { SURFACE } from '../inbound/keys.js';
import type { Bounded, SlackListeners } from '../listeners.js';
import type { SlackApi } from '../web-api/client.js';
import type { AgentApi } from './agent-api.js';
import type { SessionStatuses } from './session-status.js';

/**
 * The stop button of an agent session. Slack shows it while the session is `processing`; a
 * press stops this app's streams in the thread and sends `agent_session_stopped` (the thread,
 * the person, the streams it stopped — no session id). Here that becomes the engine's cancel
 * of the thread's running task (CancelTask, retried per the contract); the answer stays as
 * shown and its open streams are closed; the turn then settles as cancelled, with its notice,
 * and the status leaves `processing`.
 *
 * Only a person who could write in the thread may stop it: a member of its channel (for a DM,
 * the person it is with). Anyone else's press is refused with an ephemeral word and the answer
 * goes on (by edits, since Slack stopped its stream). A press for a task that settled, or for
 * an answer older than the task running now, stops nothing. A redelivered event is claimed
 * once, durably, like every other event.
 */

const stopEvent = z.object({
  type: z.literal('agent_session_stopped'),
  channel: z.string().regex(/^[A-Z0-9]+$/),
  user: z.string().regex(/^[A-Z0-9]+$/),
  thread_ts: z.string().regex(/^\d+\.\d+$/),
  // Bounded: Slack lists this app's streams in the thread.
  streaming_message_ts: z
    .array(z.string().regex(/^\d+\.\d+$/))
    .max(100)
    .optional(),
});

const envelope = z.object({
  team_id: z.string().optional(),
  event_id: z.string().min(1),
  event: stopEvent,
});

export const STOP_REFUSED = 'Only people in this conversation can stop the agent.';
export const STOP_UNCHECKED =
  'Agent Kourier could not check who may stop the agent here, so it keeps working.';

/** An answer being shown that a stop halts (answer/slack-answer.ts). */
export interface HaltableAnswer {
  readonly place: { turnId: string };
  /** Freezes what is shown, so text the agent sends meanwhile is not shown after the stop. */
  halt(stoppedTs: ReadonlySet<string>): Promise<void>;
}

/** What a stop needs of the surface that shows the thread (answer/surface.ts's SlackSurface). */
export interface StopSurface {
  readonly statuses: Pick<SessionStatuses, 'resend'>;
  readonly agents: Pick<AgentApi, 'isMember'>;
  /** The answer the stop button was pressed on, or the thread's open one. */
  liveAnswer(channel: string, threadTs: string, stoppedTs: readonly string[]): HaltableAnswer | undefined;
}

export interface AgentStopDeps {
  inbound: Pick<ChatInbound, 'cancel' | 'claimEvent' | 'findSession'>;
  surface: StopSurface;
  api: SlackApi;
  clock: Clock;
  logger: Logger;
  /** Single-workspace mode: the bot token's team (OAuth mode: each event names its own). */
  teamId?: string;
}

export class AgentStops implements SlackListeners {
  readonly #deps: AgentStopDeps;

  constructor(deps: AgentStopDeps) {
    this.#deps = deps;
  }

  /** The agent session's stop button (Bolt has no helper for it: a plain event listener). */
  register(app: App, bounded: Bounded): void {
    app.event('agent_session_stopped', async ({ body }) => bounded(this.handle(body)));
  }

  /** Handles one agent_session_stopped envelope. Never throws: Slack only needs the ack. */
  async handle(body: unknown): Promise<void> {
    const { logger, inbound, surface } = this.#deps;
    const parsed = envelope.safeParse(body);
    if (!parsed.success) {
      logger.warn('an agent_session_stopped event that does not parse was ignored');
      return;
    }
    const { event, event_id: eventId } = parsed.data;
    const team = parsed.data.team_id ?? this.#deps.teamId;
    // OAuth mode names the team in every envelope; an event without one cannot be placed.
    if (team === undefined) {
      logger.warn({ eventId }, 'an agent_session_stopped event that names no workspace was ignored');
      return;
    }
    const key: SessionKey = {
      surface: SURFACE,
      workspaceId: team,
      channelId: event.channel,
      threadId: event.thread_ts,
    };
    const sessionId = sessionIdOf(key);
    const stopped = event.streaming_message_ts ?? [];
    try {
      if (!(await inbound.claimEvent(`${team}:${eventId}`))) return;
      if ((await inbound.findSession(sessionId)) === undefined) {
        // Not one of ours (or long gone): nothing runs here, and the status should say so.
        surface.statuses.resend(sessionId, 'active');
        return;
      }
    } catch (error) {
      logger.error({ eventId, err: errorName(error) }, 'could not record a stop press');
      return;
    }
    const allowed = await this.#mayStop(team, event.channel, event.user);
    if (allowed !== true) {
      logger.info({ team, channel: event.channel, user: event.user, allowed }, 'a stop press was refused');
      await this.#ephemeral(team, event, allowed === 'unknown' ? STOP_UNCHECKED : STOP_REFUSED);
      // The task goes on: the stop button comes back.
      surface.statuses.resend(sessionId, 'processing');
      return;
    }
    const answer = surface.liveAnswer(event.channel, event.thread_ts, stopped);
    // Frozen before the cancel, so text the agent sends meanwhile is not shown after the stop.
    const halted = answer?.halt(new Set(stopped));
    let result: CancelResult;
    try {
      result = await this.#deps.inbound.cancel(key, {
        actor: { id: event.user },
        ...(answer === undefined ? {} : { turnId: answer.place.turnId }),
      });
    } catch (error) {
      logger.error(
        { team, channel: event.channel, err: errorName(error) },
        'could not cancel a task for a stop press',
      );
      return;
    }
    await halted;
    // The audit line: who stopped which task (ids only).
    logger.info(
      {
        team,
        channel: event.channel,
        threadTs: event.thread_ts,
        user: event.user,
        result: result.status,
        ...('taskId' in result ? { taskId: result.taskId } : {}),
        ...('turnId' in result && result.turnId !== null ? { turnId: result.turnId } : {}),
      },
      'a person pressed stop',
    );
    // The turn's settling sets `active` for a running task the cancel stopped; a paused one has
    // no driver to settle it, and the rest are said here.
    if (result.status === 'nothing-running') surface.statuses.resend(sessionId, 'active');
    else if (result.status === 'canceled' && result.wasPaused) surface.statuses.resend(sessionId, 'active');
    else if (result.status === 'failed' && result.code === 'binding-unavailable')
      surface.statuses.resend(sessionId, 'active');
    else if (result.status === 'stale' || result.status === 'failed')
      surface.statuses.resend(sessionId, 'processing');
  }

  /** A member of the thread's channel; 'unknown' when Slack could not be asked (fail closed). */
  async #mayStop(team: string, channel: string, user: string): Promise<boolean | 'unknown'> {
    try {
      return await this.#deps.surface.agents.isMember({ team, requester: `stop:${channel}` }, channel, user);
    } catch (error) {
      this.#deps.logger.warn({ channel, err: errorName(error) }, 'could not read who is in a channel');
      return 'unknown';
    }
  }

  async #ephemeral(team: string, event: z.infer<typeof stopEvent>, text: string): Promise<void> {
    try {
      await this.#deps.api.postEphemeral(
        { team },
        { channel: event.channel, user: event.user, text, thread_ts: event.thread_ts },
      );
    } catch (error) {
      this.#deps.logger.warn(
        { channel: event.channel, err: errorName(error) },
        'could not post an ephemeral word',
      );
    }
  }
}

function errorName(error: unknown): Record<string, unknown> {
  if (error instanceof Error)
    return { name: error.name, ...('code' in error ? { code: String(error.code) } : {}) };
  return { name: typeof error };
}
