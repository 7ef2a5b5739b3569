import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../../core/ports.js';
import type { SessionStore } from '../../core/store.js';
import { slackKeyOf } from './activity.js';

/**
 * Feedback buttons (👍 / 👎) under a finished answer: Slack's `feedback_buttons` element in a
 * `context_actions` block, drawn by chat.stopStream under the streamed text. A press is
 * recorded — counted per Binding and value, and logged with the turn and task ids — and never
 * becomes a turn. A person is counted once per answer and value, durably (a redelivered or
 * repeated press, or one after a restart, counts nothing new); the last press of a person is
 * the one the log's latest line shows.
 */

export const FEEDBACK_ACTION = 'agentkourier.feedback';

/** The two values a press can carry (a bounded label). */
export type FeedbackValue = 'positive' | 'negative';

/** Where presses are counted (`agentkourier_feedback_total{binding,value}`). */
export interface FeedbackCounter {
  feedbackGiven(binding: string, value: FeedbackValue): void;
}

/** The block under an answer; the buttons carry the turn id (an id, never text). */
export function feedbackBlock(turnId: string): Record<string, unknown> {
  return {
    type: 'context_actions',
    block_id: `agentkourier.feedback.${turnId}`.slice(0, 255),
    elements: [
      {
        type: 'feedback_buttons',
        action_id: FEEDBACK_ACTION,
        positive_button: {
          text: { type: 'plain_text', text: 'Good answer' },
          value: `positive:${turnId}`,
          accessibility_label: 'Mark this answer as good',
        },
        negative_button: {
          text: { type: 'plain_text', text: 'Bad answer' },
          value: `negative:${turnId}`,
          accessibility_label: 'Mark this answer as bad',
        },
      },
    ],
  };
}

const press = z.object({
  user: z.object({ id: z.string().min(1).max(64) }),
  team: z.object({ id: z.string().min(1).max(64) }).nullish(),
  channel: z.object({ id: z.string().min(1).max(64) }).optional(),
  container: z.object({ channel_id: z.string().optional(), message_ts: z.string().optional() }).optional(),
  actions: z
    .array(
      z.object({
        action_id: z.literal(FEEDBACK_ACTION),
        value: z
          .string()
          .max(2_000)
          .regex(/^(positive|negative):[^\s]+$/),
      }),
    )
    .min(1),
});

export interface FeedbackDeps {
  store: Pick<SessionStore, 'claimInboundEvent' | 'getTurn' | 'getSession'>;
  clock: Clock;
  logger: Logger;
  /** Single-workspace mode: the bot token's team (OAuth mode: each event names its own). */
  teamId?: string;
  counter?: FeedbackCounter;
}

export class FeedbackDesk {
  readonly #deps: FeedbackDeps;

  constructor(deps: FeedbackDeps) {
    this.#deps = deps;
  }

  /** One press of a feedback button. Never throws: Slack only needs the ack. */
  async press(body: unknown): Promise<void> {
    const { logger, store } = this.#deps;
    const parsed = press.safeParse(body);
    if (!parsed.success) {
      logger.warn('a feedback press that does not parse was ignored');
      return;
    }
    const { user } = parsed.data;
    const [action] = parsed.data.actions;
    if (action === undefined) return;
    const colon = action.value.indexOf(':');
    const value = action.value.slice(0, colon) as FeedbackValue;
    const turnId = action.value.slice(colon + 1);
    const team = parsed.data.team?.id ?? this.#deps.teamId;
    if (team === undefined) return;
    const channel = parsed.data.channel?.id ?? parsed.data.container?.channel_id;
    try {
      const turn = await store.getTurn(turnId);
      const session = turn === undefined ? undefined : await store.getSession(turn.sessionId);
      const key = session === undefined ? undefined : slackKeyOf(session.id);
      // The press must come from the answer's own thread and workspace.
      if (
        turn === undefined ||
        session === undefined ||
        key?.workspaceId !== team ||
        key.channelId !== channel
      ) {
        logger.warn({ team, channel }, 'a feedback press for an unknown answer was ignored');
        return;
      }
      const first = await store.claimInboundEvent(
        `feedback:${team}:${turnId}:${user.id}:${value}`,
        this.#deps.clock.now(),
      );
      // The audit line: who said what of which turn and task (ids only), every press.
      logger.info(
        {
          binding: session.binding,
          team,
          channel,
          user: user.id,
          turnId,
          taskId: turn.taskId,
          value,
          counted: first,
        },
        'feedback on an answer',
      );
      if (first) this.#deps.counter?.feedbackGiven(session.binding, value);
    } catch (error) {
      logger.error({ err: error instanceof Error ? error.name : typeof error }, 'could not record feedback');
    }
  }
}
