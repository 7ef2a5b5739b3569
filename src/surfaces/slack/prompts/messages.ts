import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { RenderedMessage } from '../answer/render.js';
import { retrying, type SlackApi } from '../web-api/client.js';
import { errorName } from '../web-api/errors.js';
import type { ApprovalGate } from './access.js';
import type { Place, PromptTokens } from './payloads.js';
import type { PromptState } from './state.js';
import { promptMessage, WORDS } from './view.js';

/**
 * A prompt's messages in Slack: the prompt as its state shows it (view.ts renders it),
 * kept up to date, closed when it no longer waits, and the ephemeral replies to presses. Best
 * effort: a failed update is logged, never thrown; Slack's 429s and outages are retried.
 */
export class PromptMessages {
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #tokens: PromptTokens;
  readonly #gate: ApprovalGate;

  constructor(options: {
    api: SlackApi;
    clock: Clock;
    logger: Logger;
    tokens: PromptTokens;
    gate: ApprovalGate;
  }) {
    this.#api = options.api;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#tokens = options.tokens;
    this.#gate = options.gate;
  }

  render(state: PromptState): RenderedMessage {
    return promptMessage({
      form: state.form,
      marks: state.marks,
      status: state.status,
      gate: state.status.kind === 'open' ? this.#gate.gate(state.binding, state.form) : state.gate,
      token: (action) => this.#tokens.token(state.sessionId, state.questionKey, action),
    });
  }

  async close(state: PromptState, text: string): Promise<void> {
    state.status = { kind: 'closed', text };
    await this.update(state);
  }

  async update(state: PromptState): Promise<void> {
    if (state.ts === '') return;
    const message = this.render(state);
    try {
      await retrying(this.#clock, () =>
        this.#api.update(
          { team: state.key.workspaceId, urgent: true },
          { channel: state.channel, ts: state.ts, text: message.text, blocks: message.blocks ?? [] },
        ),
      );
    } catch (error) {
      this.#logger.warn({ channel: state.channel, err: errorName(error) }, 'could not update a prompt');
    }
  }

  /** A press on a prompt that no longer waits: its buttons go (best effort). */
  async stripStale(place: Place, blocks: unknown[] | undefined): Promise<void> {
    if (blocks === undefined || blocks.length === 0) return;
    const kept = blocks.filter(
      (b) => !(typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'actions'),
    );
    if (kept.length === blocks.length) return;
    kept.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `:lock: ${WORDS.gone}` }] });
    try {
      await this.#api.update(
        { team: place.team },
        { channel: place.channel, ts: place.messageTs, text: WORDS.gone, blocks: kept.slice(0, 50) },
      );
    } catch (error) {
      this.#logger.debug({ err: errorName(error) }, 'could not update a stale prompt');
    }
  }

  async ephemeral(place: Place, text: string): Promise<void> {
    try {
      await retrying(this.#clock, () =>
        this.#api.postEphemeral(
          { team: place.team, urgent: true },
          { channel: place.channel, user: place.user, text, thread_ts: place.threadTs },
        ),
      );
    } catch (error) {
      this.#logger.warn({ channel: place.channel, err: errorName(error) }, 'could not answer a press');
    }
  }
}
