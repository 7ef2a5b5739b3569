import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import type { ApprovalAuditSink } from '../../../core/approval-audit.js';
import type { Clock } from '../../../core/clock.js';
import { actorIdOf } from '../../../core/compose.js';
import { ReplyShapeError } from '../../../core/errors.js';
import type { ChatInbound } from '../../../core/inbound.js';
import type { AnswerResult } from '../../../core/ports.js';
import { sessionIdOf } from '../../../core/store.js';
import type { People } from '../inbound/people.js';
import type { Bounded, SlackListeners } from '../listeners.js';
import type { SlackApi } from '../web-api/client.js';
import { errorName } from '../web-api/errors.js';
import { ApprovalAuditor } from './access.js';
import {
  ANSWER_CALLBACK,
  answerModal,
  DENY_CALLBACK,
  decodePlace,
  denyModal,
  readAnswerModal,
} from './modals.js';
import type { PromptAction } from './payloads.js';
import { type Place, placeOfPress, pressSchema, submissionSchema } from './payloads.js';
import type { PromptShelf } from './shelf.js';
import {
  adoptShownMarks,
  complete,
  inTurn,
  keyOf,
  type MarkOutcome,
  markPress,
  markSubmission,
  modalPlace,
  type PressedPrompt,
  type PromptState,
  promptOfPress,
  replyOf,
} from './state.js';
import { ACTION_PREFIX, WORDS } from './view.js';

/**
 * The presses on the prompts of the shelf (shelf.ts), and the modals they open, each answered
 * with the one structured reply its question gets. The parts it stands on are modules of their
 * own: the payloads and the button tokens (payloads.ts), what this process knows of each prompt
 * and what a press does to its marks (state.ts), who may decide and the audit of what was
 * decided (access.ts), the prompt's messages (messages.ts), its Block Kit and words (view.ts)
 * and its modals (modals.ts).
 *
 * - A press is authorised on every press, from the payload's user (access.ts).
 * - A button carries an opaque token (payloads.ts); the pending question itself is the
 *   engine's, durable in the store. A press is matched against the question pending now.
 * - Decisions per tool call are collected here until every call has one (or an "all" press
 *   decides the rest); then one structured reply goes to the engine (ChatInbound.answer), whose
 *   dialect builds the agent's message. The store keeps the first answer per question, so a
 *   double click, two approvers racing, or two replicas produce one decision; the second is told
 *   who decided. Presses of one prompt run one at a time here.
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

export interface PromptPressesDeps {
  shelf: PromptShelf;
  /** Sessions, turns, and the answers the engine takes (its dialect builds the agent's message). */
  inbound: Pick<ChatInbound, 'findSession' | 'findTurn' | 'answer'>;
  people: People;
  api: SlackApi;
  clock: Clock;
  logger: Logger;
  /** Where each decision is audited (the broker's approval audit). */
  audit?: ApprovalAuditSink;
}

export class PromptPresses implements SlackListeners {
  readonly #deps: PromptPressesDeps;
  readonly #shelf: PromptShelf;
  readonly #logger: Logger;
  readonly #audit: ApprovalAuditor;

  constructor(deps: PromptPressesDeps) {
    this.#deps = deps;
    this.#shelf = deps.shelf;
    this.#logger = deps.logger.child({ component: 'slack-prompts' });
    this.#audit = new ApprovalAuditor(deps.audit);
  }

  /**
   * The prompts' buttons, and the modals they open. A press is acknowledged at once; the work
   * runs within the same bound as events. An answer modal with a bad answer stays open and says
   * what is wrong.
   */
  register(app: App, bounded: Bounded): void {
    app.action({ type: 'block_actions', action_id: /^agentkourier\.prompt\./ }, async ({ ack, body }) => {
      await ack();
      await bounded(this.press(body));
    });
    app.view({ type: 'view_submission', callback_id: DENY_CALLBACK }, async ({ ack, body }) => {
      await ack();
      await bounded(this.submitted(body));
    });
    app.view({ type: 'view_submission', callback_id: ANSWER_CALLBACK }, async ({ ack, body }) => {
      const errors = await this.checkSubmission(body).catch(() => undefined);
      if (errors !== undefined) {
        await ack({ response_action: 'errors', errors });
        return;
      }
      await ack();
      await bounded(this.submitted(body));
    });
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
    const { messages } = this.#shelf;
    try {
      const found = await this.#find(place, action.value ?? '');
      if (found.refused !== undefined) {
        if (found.refused === 'foreign') {
          await messages.ephemeral(place, WORDS.foreign);
          return;
        }
        await messages.ephemeral(place, WORDS.stale);
        await messages.stripStale(place, p.message?.blocks);
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
      await messages.ephemeral(place, WORDS.failed);
    }
  }

  async #pressed(
    state: PromptState,
    action: PromptAction,
    place: Place,
    triggerId: string | undefined,
  ): Promise<void> {
    const { messages, tokens } = this.#shelf;
    if (state.status.kind !== 'open') {
      await messages.ephemeral(
        place,
        state.status.kind === 'decided' ? WORDS.alreadyDecided(state.decidedBy) : WORDS.stale,
      );
      return;
    }
    if (!(await this.#authorised(state, place))) return;
    const outcome = markPress(state, action, place.user, this.#deps.clock.now());
    if (outcome.kind !== 'modal') return this.#marked(state, place, outcome);
    if (triggerId === undefined) return messages.ephemeral(place, WORDS.failed);
    const modal = { ...modalPlace(place), token: tokens.token(state.sessionId, state.questionKey, action) };
    const view = state.form.kind === 'ask' ? answerModal(state.form, modal) : denyModal(outcome.tools, modal);
    await this.#deps.api.openView({ team: place.team, urgent: true }, { trigger_id: triggerId, view });
  }

  /** What a press or a submission did to the marks, said in Slack; the answer once complete. */
  #marked(state: PromptState, place: Place, outcome: Exclude<MarkOutcome, { kind: 'modal' }>): Promise<void> {
    if (outcome.kind === 'decided')
      return this.#shelf.messages.ephemeral(place, WORDS.alreadyDecided(outcome.by));
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
    if (place === undefined) return undefined;
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
    const { messages } = this.#shelf;
    try {
      const found = await this.#find(place, modal.token);
      if (found.refused !== undefined) {
        await messages.ephemeral(place, found.refused === 'foreign' ? WORDS.foreign : WORDS.stale);
        return;
      }
      const { state, action } = found;
      const values = view.state?.values ?? {};
      await inTurn(state, async () => {
        if (state.status.kind !== 'open') {
          const text = state.status.kind === 'decided' ? WORDS.alreadyDecided(state.decidedBy) : WORDS.stale;
          return messages.ephemeral(place, text);
        }
        if (!(await this.#authorised(state, place))) return;
        const outcome = markSubmission(state, action, values, place.user, this.#deps.clock.now());
        if (outcome.kind !== 'modal') return this.#marked(state, place, outcome);
      });
    } catch (error) {
      this.#logger.error({ err: errorName(error) }, 'a submitted modal failed');
      await messages.ephemeral(place, WORDS.failed);
    }
  }

  // ---- deciding -----------------------------------------------------------------------------

  /** After marks were added by one press: send the answer when every item has one. */
  async #progress(state: PromptState, place: Place, added: number[]): Promise<void> {
    const { messages } = this.#shelf;
    if (!complete(state)) {
      await messages.update(state);
      return;
    }
    const { inbound, people } = this.#deps;
    const actor = await people.actor(place.team, place.user);
    let result: AnswerResult;
    try {
      result = await inbound.answer({
        key: state.key,
        binding: state.binding,
        questionKey: state.questionKey,
        reply: replyOf(state),
        actor,
      });
    } catch (error) {
      // Nothing was recorded: this press's marks go, so it can be pressed again.
      for (const i of added) state.marks.delete(i);
      await messages.update(state).catch(() => undefined);
      // A reply the agent's dialect cannot take (the prompt and the question disagree): said so.
      if (error instanceof ReplyShapeError) {
        this.#logger.warn({ code: error.code }, 'a reply did not fit its question');
        await messages.ephemeral(place, WORDS.failed);
        return;
      }
      throw error;
    }
    if (result.status === 'accepted') {
      state.status = { kind: 'decided' };
      state.decidedBy = place.user;
      await this.#audit.record(state, result.turnId, people);
      await messages.update(state);
      return;
    }
    for (const i of added) state.marks.delete(i);
    if (result.status === 'duplicate') {
      // Decided already, by another press this process did not see (another replica).
      const turn = await inbound.findTurn(result.turnId).catch(() => undefined);
      const by = actorIdOf(turn?.metadata);
      state.status = { kind: 'decided' };
      if (by !== undefined) state.decidedBy = by;
      await messages.ephemeral(place, WORDS.alreadyDecided(by));
      return;
    }
    if (result.status === 'closed') {
      // A stop is cancelling the task: the decision is refused; the stop's end says the rest.
      await messages.ephemeral(place, WORDS.stopping);
      await messages.close(state, WORDS.stopped);
      return;
    }
    await messages.ephemeral(place, WORDS.stale);
    await messages.close(state, WORDS.gone);
  }

  /** Whether the presser may decide; tells them ephemerally when not. */
  async #authorised(state: PromptState, place: Place): Promise<boolean> {
    const refusal = await this.#shelf.gate.refusal(state, place);
    if (refusal === undefined) return true;
    await this.#shelf.messages.ephemeral(place, refusal);
    return false;
  }

  // ---- finding the prompt of a press ---------------------------------------------------------

  /** The pending question a press belongs to (state.ts), and what the press does. */
  async #find(place: Place, token: string): Promise<PressedPrompt> {
    const session = await this.#deps.inbound.findSession(
      sessionIdOf(keyOf(place.team, place.channel, place.threadTs)),
    );
    const { book, tokens, gate } = this.#shelf;
    return promptOfPress(book, session, place, token, tokens, (binding, form) => gate.gate(binding, form));
  }
}
