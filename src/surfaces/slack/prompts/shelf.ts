import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { ChatTarget, Notice, QuestionPrompt } from '../../../core/ports.js';
import type { StructuredForm } from '../../../core/question.js';
import type { RenderedMessage } from '../answer/render.js';
import type { StructuredPrompts } from '../answer/surface.js';
import type { SlackApi } from '../web-api/client.js';
import { type ApprovalBindings, type ApprovalCounters, ApprovalGate, type ApproverGroups } from './access.js';
import { PromptMessages } from './messages.js';
import type { PromptTokens } from './payloads.js';
import { inTurn, openPrompt, PromptBook } from './state.js';
import { WORDS } from './view.js';

/**
 * Structured questions shown in Slack, drawn from their neutral form: the prompt with
 * its buttons, posted in the session's thread, and closed when the question is gone. What this
 * process knows of each prompt stays here (`book`), with the prompt's messages and who may press
 * it; the presses themselves are taken by presses.ts, which stands on this shelf.
 */

export interface PromptShelfOptions {
  api: SlackApi;
  counters?: ApprovalCounters;
  clock: Clock;
  logger: Logger;
  tokens: PromptTokens;
  approvers: ApproverGroups;
  /** The live Bindings: whether a Binding takes approvals in Slack, and from whom. */
  bindings: ApprovalBindings;
}

export class PromptShelf implements StructuredPrompts {
  /** The prompts this process showed or adopted, the latest per session. */
  readonly book = new PromptBook();
  readonly messages: PromptMessages;
  readonly gate: ApprovalGate;
  readonly tokens: PromptTokens;
  readonly #logger: Logger;

  constructor(options: PromptShelfOptions) {
    this.#logger = options.logger.child({ component: 'slack-prompts' });
    this.tokens = options.tokens;
    this.gate = new ApprovalGate({
      approvers: options.approvers,
      counters: options.counters,
      clock: options.clock,
      logger: this.#logger,
      bindings: options.bindings,
    });
    this.messages = new PromptMessages({
      api: options.api,
      clock: options.clock,
      logger: this.#logger,
      tokens: options.tokens,
      gate: this.gate,
    });
  }

  /** Posts the prompt of a structured question; returns its ref (`channel|ts`). */
  async show(
    target: ChatTarget,
    prompt: QuestionPrompt,
    form: StructuredForm,
    post: (message: RenderedMessage) => Promise<string>,
  ): Promise<string> {
    const state = openPrompt({
      sessionId: target.sessionId,
      key: target.key,
      binding: prompt.binding,
      questionKey: prompt.question.key,
      taskId: prompt.taskId,
      form,
      channel: target.key.channelId,
      ts: '',
      gate: this.gate.gate(prompt.binding, form),
    });
    if (state.gate.kind !== 'open' && form.kind === 'approval')
      this.#logger.warn(
        { binding: prompt.binding, sessionId: state.sessionId, gate: state.gate.kind },
        'a tool approval was shown without buttons: nobody may approve it in Slack',
      );
    const earlier = this.book.latest(state.sessionId);
    state.ts = await post(this.messages.render(state));
    this.book.remember(state);
    if (earlier !== undefined && earlier !== state && earlier.status.kind === 'open') {
      await this.messages.close(earlier, WORDS.superseded);
    }
    return `${state.channel}|${state.ts}`;
  }

  /** A notice in a session: a prompt whose question is gone shows that it no longer waits. */
  async noticed(target: ChatTarget, notice: Notice): Promise<void> {
    const state = this.book.latest(target.sessionId);
    if (state === undefined || state.status.kind !== 'open') return;
    // The engine says which question still waits after the notice (a stop that failed leaves
    // it open); a timeout closes the prompt whatever it says.
    if (notice.kind !== 'question-timeout' && notice.questionKey === state.questionKey) return;
    const text =
      notice.kind === 'question-timeout'
        ? WORDS.timedOut
        : notice.kind === 'answer-rejected'
          ? WORDS.rejected
          : WORDS.gone;
    await inTurn(state, () =>
      state.status.kind === 'open' ? this.messages.close(state, text) : Promise.resolve(),
    );
  }
}
