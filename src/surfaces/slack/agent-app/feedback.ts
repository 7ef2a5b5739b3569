import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../../../core/clock.js';
import type { FeedbackRows, FeedbackValue } from '../../../core/feedback-store.js';
import type { ChatInbound } from '../../../core/inbound.js';
import { slackKeyOf } from '../inbound/keys.js';
import type { Bounded, SlackListeners } from '../listeners.js';

export type { FeedbackValue } from '../../../core/feedback-store.js';

/**
 * Feedback buttons (👍 / 👎) under a finished answer: Slack's `feedback_buttons` element in a
 * `context_actions` block, drawn by chat.stopStream under the streamed text. A press is
 * recorded — kept as the person's latest press on that answer (the last press wins, durably in
 * the store), counted, and logged with the turn and task ids — and never becomes a turn.
 *
 * The counter (`agentkourier_feedback_total{binding,value}`) counts a press when it sets a
 * person's latest value on an answer: a first press, or a change of mind, which counts once
 * under the new value. A repeat of the same value (a double click, a redelivery, the same press
 * after a restart) counts nothing. A counter cannot go down, so a change is not taken off the
 * old value: the audit line says what it replaced (`previous`), and the store keeps the latest.
 * A Binding with `spec.slack.feedback.toAgent` also has the latest presses told to the agent on
 * the next turn (feedback-notes.ts).
 */

export const FEEDBACK_ACTION = 'agentkourier.feedback';

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
  inbound: Pick<ChatInbound, 'findTurn' | 'findSession'>;
  /** Where each person's latest press is kept; unset: presses are only logged, never counted. */
  rows?: FeedbackRows;
  clock: Clock;
  logger: Logger;
  /** Single-workspace mode: the bot token's team (OAuth mode: each event names its own). */
  teamId?: string;
  counter?: FeedbackCounter;
}

export class FeedbackDesk implements SlackListeners {
  readonly #deps: FeedbackDeps;

  constructor(deps: FeedbackDeps) {
    this.#deps = deps;
  }

  /** Feedback buttons under an answer: recorded, never a turn. Acknowledged at once. */
  register(app: App, bounded: Bounded): void {
    app.action({ type: 'block_actions', action_id: FEEDBACK_ACTION }, async ({ ack, body }) => {
      await ack();
      await bounded(this.press(body));
    });
  }

  /** One press of a feedback button. Never throws: Slack only needs the ack. */
  async press(body: unknown): Promise<void> {
    const { logger, inbound } = this.#deps;
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
    // OAuth mode names the team in every payload; a press without one cannot be placed.
    if (team === undefined) {
      logger.warn('a feedback press that names no workspace was ignored');
      return;
    }
    const channel = parsed.data.channel?.id ?? parsed.data.container?.channel_id;
    try {
      const turn = await inbound.findTurn(turnId);
      const session = turn === undefined ? undefined : await inbound.findSession(turn.sessionId);
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
      const outcome = await this.#deps.rows?.press({
        sessionId: session.id,
        turnId,
        taskId: turn.taskId,
        actorId: user.id,
        value,
        now: this.#deps.clock.now(),
      });
      const counted = outcome !== undefined && outcome.kind !== 'unchanged';
      // The audit line: who said what of which turn and task (ids only), every press; `latest`
      // is the person's value now, `change` what the press did, `previous` the value a change
      // of mind replaced.
      logger.info(
        {
          binding: session.binding,
          team,
          channel,
          user: user.id,
          turnId,
          taskId: turn.taskId,
          value,
          ...(outcome === undefined ? {} : { latest: value, change: outcome.kind }),
          ...(outcome?.kind === 'changed' ? { previous: outcome.previous } : {}),
          counted,
        },
        'feedback on an answer',
      );
      if (counted) this.#deps.counter?.feedbackGiven(session.binding, value);
    } catch (error) {
      logger.error({ err: error instanceof Error ? error.name : typeof error }, 'could not record feedback');
    }
  }
}
