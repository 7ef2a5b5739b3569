// Slightly over our ~400-line rule: the desk that wires the prompt parts (payloads, state,
// marks, who may approve, the audit, modals) to Bolt's actions; each part is its own module.
import type { Logger } from 'pino';
import type { ApprovalAuditSink } from '../../../core/approval-audit.js';
import type { Clock } from '../../../core/clock.js';
import { actorIdOf } from '../../../core/compose.js';
import { ReplyShapeError } from '../../../core/errors.js';
import type { ChatInbound } from '../../../core/inbound.js';
import type { AnswerResult, ChatTarget, Notice, QuestionPrompt } from '../../../core/ports.js';
import type { StructuredForm } from '../../../core/question.js';
import { sessionIdOf } from '../../../core/store.js';
import type { RenderedMessage } from '../answer/render.js';
import type { People } from '../inbound/people.js';
import type { SlackApi } from '../web-api/client.js';
import { errorName, PromptsNotWiredError } from '../web-api/errors.js';
import type { ApproverGroups } from './access.js';
import { ApprovalAuditor, type ApprovalBindings, type ApprovalCounters, ApprovalGate } from './access.js';
import { PromptMessages } from './messages.js';
import { answerModal, decodePlace, denyModal, readAnswerModal } from './modals.js';
import type { PromptAction, PromptTokens } from './payloads.js';
import { type Place, placeOfPress, pressSchema, submissionSchema } from './payloads.js';
import {
  adoptShownMarks,
  complete,
  inTurn,
  keyOf,
  type MarkOutcome,
  markPress,
  markSubmission,
  modalPlace,
  openPrompt,
  type PressedPrompt,
  PromptBook,
  type PromptState,
  promptOfPress,
  replyOf,
} from './state.js';
import { ACTION_PREFIX, WORDS } from './view.js';

/**
 * Structured questions in Slack, drawn from their neutral form: the prompt with its buttons, the presses,
 * the modals, and the one answer each question gets. This is the desk that takes them in; the
 * parts it stands on are modules of their own: the payloads and the button tokens
 * (payloads.ts), what this process knows of each prompt and what a press does to its marks
 * (state.ts), who may decide and the audit of what was decided (access.ts), the prompt's
 * messages (messages.ts), its Block Kit and words (view.ts) and its modals (modals.ts).
 *
 * - A press is authorised on every press, from the payload's user (access.ts).
 * - A button carries an opaque token (payloads.ts); the pending question itself is the
 *   engine's, durable in the store. A press is matched against the question pending now.
 * - Decisions per tool call are collected here until every call has one (or an "all" press
 *   decides the rest); then one structured reply goes to the engine (ChatInbound.answer),
 *   whose dialect builds the agent's message. The store keeps the first answer per question, so a double click, two approvers
 *   racing, or two replicas produce one decision; the second is told who decided. Presses of
 *   one prompt run one at a time here.
 * - Collected per-tool decisions have no effect until the answer is sent, so they are kept in
 *   memory and on the prompt message itself: each decided call's block records who decided what
 *   (`readMarks`), and Slack sends the message's blocks with every press, in a payload it signs.
 *   A press reaching a process that did not see them (after a restart, on another replica)
 *   adopts them, so "Approve the rest" never overrides a denial the prompt shows. A denial's
 *   reason comes back as shown (cut to 500 characters). Two replicas updating one prompt at the
 *   same instant can drop one mark from the message: that call shows undecided and is pressed
 *   again; nothing is ever sent that the prompt did not show decided.
 * - Every decision sent is audited (access.ts).
 */

/** What the desk needs of the rest of the broker, given when the app starts listening. */
export interface PromptDeskDeps {
  /** Sessions, turns, and the answers the engine takes (its dialect builds the agent's message). */
  inbound: Pick<ChatInbound, 'findSession' | 'findTurn' | 'answer'>;
  bindings: ApprovalBindings;
  people: People;
}

export interface PromptDeskOptions {
  api: SlackApi;
  counters?: ApprovalCounters;
  clock: Clock;
  logger: Logger;
  tokens: PromptTokens;
  approvers: ApproverGroups;
  /** Where each decision is audited (the broker's approval audit). */
  audit?: ApprovalAuditSink;
}

export class PromptDesk {
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #tokens: PromptTokens;
  readonly #gate: ApprovalGate;
  readonly #audit: ApprovalAuditor;
  readonly #messages: PromptMessages;
  readonly #prompts = new PromptBook();
  #deps: PromptDeskDeps | undefined;
  #wired: Promise<PromptDeskDeps>;
  readonly #closed = new AbortController();
  #wire: (deps: PromptDeskDeps) => void = () => undefined;

  constructor(options: PromptDeskOptions) {
    this.#api = options.api;
    this.#clock = options.clock;
    this.#logger = options.logger.child({ component: 'slack-prompts' });
    this.#tokens = options.tokens;
    this.#gate = new ApprovalGate({
      approvers: options.approvers,
      counters: options.counters,
      clock: options.clock,
      logger: this.#logger,
      bindings: () => this.#deps?.bindings,
    });
    this.#audit = new ApprovalAuditor(options.audit);
    this.#messages = new PromptMessages({
      api: options.api,
      clock: options.clock,
      logger: this.#logger,
      tokens: options.tokens,
      gate: this.#gate,
    });
    this.#wired = new Promise((resolve) => {
      this.#wire = resolve;
    });
  }

  /** Connects the desk to the answerer, store and Bindings (when the app starts listening). */
  wire(deps: PromptDeskDeps): void {
    this.#deps = deps;
    this.#wire(deps);
  }

  /** Stops waiting to be wired: prompts not shown yet fail (the engine records no ref). */
  close(): void {
    this.#closed.abort(new Error('the Slack connection stopped'));
  }

  /** The form of a question this desk shows (a structured one), or undefined. */
  static handles(prompt: QuestionPrompt): StructuredForm | undefined {
    return prompt.question.kind === 'structured' ? prompt.question.form : undefined;
  }

  // ---- showing ------------------------------------------------------------------------------

  /** Posts the prompt of a structured question; returns its ref (`channel|ts`). */
  async show(
    target: ChatTarget,
    prompt: QuestionPrompt,
    form: StructuredForm,
    post: (message: RenderedMessage) => Promise<string>,
  ): Promise<string> {
    // Prompts are shown only once presses can be taken (the engine may resume a session
    // before the app listens).
    const closed = this.#closed.signal;
    const deps =
      this.#deps ??
      (await Promise.race([
        this.#wired,
        new Promise<never>((_resolve, reject) => {
          if (closed.aborted) reject(closed.reason);
          closed.addEventListener('abort', () => reject(closed.reason), { once: true });
        }),
      ]));
    const session = await deps.inbound.findSession(target.sessionId);
    const binding = session?.binding ?? '';
    const state = openPrompt({
      sessionId: target.sessionId,
      key: target.key,
      binding,
      questionKey: prompt.question.key,
      taskId: prompt.taskId,
      form,
      channel: target.key.channelId,
      ts: '',
      gate: this.#gate.gate(binding, form),
    });
    if (state.gate.kind !== 'open' && form.kind === 'approval')
      this.#logger.warn(
        { binding, sessionId: state.sessionId, gate: state.gate.kind },
        'a tool approval was shown without buttons: nobody may approve it in Slack',
      );
    const earlier = this.#prompts.latest(state.sessionId);
    state.ts = await post(this.#messages.render(state));
    this.#prompts.remember(state);
    if (earlier !== undefined && earlier !== state && earlier.status.kind === 'open') {
      await this.#messages.close(earlier, WORDS.superseded);
    }
    return `${state.channel}|${state.ts}`;
  }

  /** A notice in a session: a prompt whose question is gone shows that it no longer waits. */
  async noticed(target: ChatTarget, notice: Notice): Promise<void> {
    const state = this.#prompts.latest(target.sessionId);
    if (state === undefined || state.status.kind !== 'open' || this.#deps === undefined) return;
    if (notice.kind !== 'question-timeout') {
      const session = await this.#deps.inbound.findSession(target.sessionId).catch(() => undefined);
      if (session?.question?.questionKey === state.questionKey) return;
    }
    const text =
      notice.kind === 'question-timeout'
        ? WORDS.timedOut
        : notice.kind === 'answer-rejected'
          ? WORDS.rejected
          : WORDS.gone;
    await inTurn(state, () =>
      state.status.kind === 'open' ? this.#messages.close(state, text) : Promise.resolve(),
    );
  }

  // ---- presses ------------------------------------------------------------------------------

  /** A block_actions payload for one of our buttons. Never throws. */
  async press(body: unknown): Promise<void> {
    const parsed = pressSchema.safeParse(body);
    if (!parsed.success) {
      this.#logger.debug('a press that is not one of ours was ignored');
      return;
    }
    const p = parsed.data;
    const action = p.actions[0];
    if (action === undefined || !action.action_id.startsWith(ACTION_PREFIX)) return;
    const place = placeOfPress(p);
    try {
      const found = await this.#find(place, action.value ?? '');
      if (found.refused !== undefined) {
        if (found.refused === 'foreign') {
          await this.#messages.ephemeral(place, WORDS.foreign);
          return;
        }
        await this.#messages.ephemeral(place, WORDS.stale);
        await this.#messages.stripStale(place, p.message?.blocks);
        return;
      }
      const { state, action: what } = found;
      const shown = p.message?.blocks;
      await inTurn(state, () => {
        if (shown !== undefined) adoptShownMarks(state, shown);
        return this.#pressed(state, what, place, p.trigger_id);
      });
    } catch (error) {
      this.#logger.error({ err: errorName(error) }, 'a press on a prompt failed');
      await this.#messages.ephemeral(place, WORDS.failed);
    }
  }

  async #pressed(
    state: PromptState,
    action: PromptAction,
    place: Place,
    triggerId: string | undefined,
  ): Promise<void> {
    if (state.status.kind !== 'open') {
      await this.#messages.ephemeral(
        place,
        state.status.kind === 'decided' ? WORDS.alreadyDecided(state.decidedBy) : WORDS.stale,
      );
      return;
    }
    if (!(await this.#authorised(state, place))) return;
    const outcome = markPress(state, action, place.user, this.#clock.now());
    if (outcome.kind !== 'modal') return this.#marked(state, place, outcome);
    if (triggerId === undefined) return this.#messages.ephemeral(place, WORDS.failed);
    const modal = {
      ...modalPlace(place),
      token: this.#tokens.token(state.sessionId, state.questionKey, action),
    };
    const view = state.form.kind === 'ask' ? answerModal(state.form, modal) : denyModal(outcome.tools, modal);
    await this.#api.openView({ team: place.team, urgent: true }, { trigger_id: triggerId, view });
  }

  /** What a press or a submission did to the marks, said in Slack; the answer once complete. */
  #marked(state: PromptState, place: Place, outcome: Exclude<MarkOutcome, { kind: 'modal' }>): Promise<void> {
    if (outcome.kind === 'decided') return this.#messages.ephemeral(place, WORDS.alreadyDecided(outcome.by));
    if (outcome.kind === 'marked') return this.#progress(state, place, outcome.added);
    return Promise.resolve();
  }

  // ---- modals -------------------------------------------------------------------------------

  /**
   * Checks a submitted answer modal before it closes: the errors to show in it, or undefined
   * (then `submitted` takes it).
   */
  async checkSubmission(body: unknown): Promise<Record<string, string> | undefined> {
    const parsed = submissionSchema.safeParse(body);
    if (!parsed.success) return undefined;
    const place = decodePlace(parsed.data.view.private_metadata);
    if (place === undefined || this.#deps === undefined) return undefined;
    const session = await this.#deps.inbound
      .findSession(sessionIdOf(keyOf(place.team, place.channel, place.threadTs)))
      .catch(() => undefined);
    const form = session?.question?.form;
    if (form?.kind !== 'ask') return undefined;
    const read = readAnswerModal(form, parsed.data.view.state?.values ?? {});
    return 'errors' in read ? read.errors : undefined;
  }

  /** A submitted deny or answer modal. Never throws. */
  async submitted(body: unknown): Promise<void> {
    const parsed = submissionSchema.safeParse(body);
    if (!parsed.success) return;
    const view = parsed.data.view;
    const modal = decodePlace(view.private_metadata);
    if (modal === undefined) return;
    const place: Place = {
      team: modal.team,
      channel: modal.channel,
      threadTs: modal.threadTs,
      messageTs: modal.messageTs,
      user: parsed.data.user.id,
    };
    try {
      const found = await this.#find(place, modal.token);
      if (found.refused !== undefined) {
        await this.#messages.ephemeral(place, found.refused === 'foreign' ? WORDS.foreign : WORDS.stale);
        return;
      }
      const { state, action } = found;
      const values = view.state?.values ?? {};
      await inTurn(state, async () => {
        if (state.status.kind !== 'open') {
          const text = state.status.kind === 'decided' ? WORDS.alreadyDecided(state.decidedBy) : WORDS.stale;
          return this.#messages.ephemeral(place, text);
        }
        if (!(await this.#authorised(state, place))) return;
        const outcome = markSubmission(state, action, values, place.user, this.#clock.now());
        if (outcome.kind !== 'modal') return this.#marked(state, place, outcome);
      });
    } catch (error) {
      this.#logger.error({ err: errorName(error) }, 'a submitted modal failed');
      await this.#messages.ephemeral(place, WORDS.failed);
    }
  }

  // ---- deciding -----------------------------------------------------------------------------

  /** After marks were added by one press: send the answer when every item has one. */
  async #progress(state: PromptState, place: Place, added: number[]): Promise<void> {
    if (!complete(state)) {
      await this.#messages.update(state);
      return;
    }
    const deps = this.#deps;
    if (deps === undefined) throw new PromptsNotWiredError();
    const actor = await deps.people.actor(place.team, place.user);
    let result: AnswerResult;
    try {
      result = await deps.inbound.answer({
        key: state.key,
        binding: state.binding,
        questionKey: state.questionKey,
        reply: replyOf(state),
        actor,
      });
    } catch (error) {
      // Nothing was recorded: this press's marks go, so it can be pressed again.
      for (const i of added) state.marks.delete(i);
      await this.#messages.update(state).catch(() => undefined);
      // A reply the agent's dialect cannot take (the prompt and the question disagree): said so.
      if (error instanceof ReplyShapeError) {
        this.#logger.warn({ code: error.code }, 'a reply did not fit its question');
        await this.#messages.ephemeral(place, WORDS.failed);
        return;
      }
      throw error;
    }
    if (result.status === 'accepted') {
      state.status = { kind: 'decided' };
      state.decidedBy = place.user;
      await this.#audit.record(state, result.turnId, this.#deps?.people);
      await this.#messages.update(state);
      return;
    }
    for (const i of added) state.marks.delete(i);
    if (result.status === 'duplicate') {
      // Decided already, by another press this process did not see (another replica).
      const turn = await deps.inbound.findTurn(result.turnId).catch(() => undefined);
      const by = actorIdOf(turn?.metadata);
      state.status = { kind: 'decided' };
      if (by !== undefined) state.decidedBy = by;
      await this.#messages.ephemeral(place, WORDS.alreadyDecided(by));
      return;
    }
    if (result.status === 'closed') {
      // A stop is cancelling the task: the decision is refused; the stop's end says the rest.
      await this.#messages.ephemeral(place, WORDS.stopping);
      await this.#messages.close(state, WORDS.stopped);
      return;
    }
    await this.#messages.ephemeral(place, WORDS.stale);
    await this.#messages.close(state, WORDS.gone);
  }

  /** Whether the presser may decide; tells them ephemerally when not. */
  async #authorised(state: PromptState, place: Place): Promise<boolean> {
    const refusal = await this.#gate.refusal(state, place);
    if (refusal === undefined) return true;
    await this.#messages.ephemeral(place, refusal);
    return false;
  }

  // ---- finding the prompt of a press ---------------------------------------------------------

  /** The pending question a press belongs to (prompt-state.ts), and what the press does. */
  async #find(place: Place, token: string): Promise<PressedPrompt> {
    const deps = this.#deps;
    if (deps === undefined) return { refused: 'stale' };
    const session = await deps.inbound.findSession(
      sessionIdOf(keyOf(place.team, place.channel, place.threadTs)),
    );
    return promptOfPress(this.#prompts, session, place, token, this.#tokens, (binding, request) =>
      this.#gate.gate(binding, request),
    );
  }
}
