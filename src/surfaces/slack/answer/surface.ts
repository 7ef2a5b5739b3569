import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { Actor } from '../../../core/compose.js';
import { KourierError } from '../../../core/errors.js';
import type {
  AnswerFor,
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../../../core/ports.js';
import type { StructuredForm } from '../../../core/question.js';
import { ToolCardTally } from '../../common/tool-cards.js';
import { type ActivityOptions, ThreadActivity } from '../agent-app/activity.js';
import { AgentApi } from '../agent-app/agent-api.js';
import { SessionStatuses, type SessionStatusOptions } from '../agent-app/session-status.js';
import { SURFACE } from '../inbound/keys.js';
import type { People } from '../inbound/people.js';
import { retrying, type SlackApi } from '../web-api/client.js';
import { noticeMessage, questionMessage, type RenderedMessage, toolStepMessage } from './render.js';
import { type AnswerSettings, DEFAULT_ANSWER_SETTINGS, SlackAnswer, StreamSupport } from './slack-answer.js';

/**
 * The chat port on Slack: answers that grow in place (slack-answer.ts), notices in plain words,
 * questions and tool-step cards as messages in the session's thread, and a running indicator
 * on the thread root (../agent-app/activity.ts, fed with the engine's events).
 */

export interface SlackSurfaceOptions {
  api: SlackApi;
  clock: Clock;
  logger: Logger;
  answers?: Partial<AnswerSettings>;
  /** The running indicator on the thread root (emoji, grace before it goes). */
  activity?: Partial<ActivityOptions>;
  /** The agent session's status (session-status.ts). */
  statuses?: Partial<SessionStatusOptions>;
  /** Who wrote a message (users.info, cached): asked before a turn's send (person). */
  people?: People;
  /**
   * Structured questions (tool approvals, questions with a form) as buttons
   * (../prompts/shelf.ts). Without it they are shown as text, with no buttons.
   */
  prompts?: StructuredPrompts;
}

/** Structured questions drawn with Slack's own controls, from their neutral form. */
export interface StructuredPrompts {
  /** Posts the prompt (through `post`, in the session's thread); returns its ref. */
  show(
    target: ChatTarget,
    prompt: QuestionPrompt,
    form: StructuredForm,
    post: (message: RenderedMessage) => Promise<string>,
  ): Promise<string>;
  /** A notice in a session: a prompt whose question it ended shows that it no longer waits. */
  noticed(target: ChatTarget, notice: Notice): Promise<void>;
}

/** A target that is not a Slack thread (another surface's session reached this one). */
export class NotASlackThreadError extends KourierError {
  constructor() {
    super('not_a_slack_thread', 'the session is not a Slack thread');
  }
}

/** How many finished answers it remembers (their messages, should the engine open one again). */
const MAX_FINISHED = 5_000;

export class SlackSurface implements ChatSurface {
  readonly activity: ThreadActivity;
  /** The agent sessions' statuses; fed with the engine's events like `activity`. */
  readonly statuses: SessionStatuses;
  readonly agents: AgentApi;
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #settings: AnswerSettings;
  readonly #streams = new StreamSupport();
  readonly #answers = new Map<string, SlackAnswer>();
  /** Each turn's tool steps: a few cards, then one message counting the rest. */
  readonly #toolCards = new Map<string, ToolCardTally>();
  readonly #prompts: StructuredPrompts | undefined;
  readonly #people: People | undefined;

  constructor(options: SlackSurfaceOptions) {
    this.#prompts = options.prompts;
    this.#people = options.people;
    this.#api = options.api;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#settings = { ...DEFAULT_ANSWER_SETTINGS, ...options.answers };
    this.activity = new ThreadActivity(options.api, options.clock, options.logger, options.activity);
    this.agents = new AgentApi(options.api);
    this.statuses = new SessionStatuses(
      this.agents,
      options.api,
      options.clock,
      options.logger,
      options.statuses,
    );
  }

  /**
   * The answer a stop press in a thread is about: the one showing a stream Slack stopped, else
   * the thread's answer still being shown. undefined: none is live in this process.
   */
  liveAnswer(channel: string, threadTs: string, stoppedTs: readonly string[]): SlackAnswer | undefined {
    let open: SlackAnswer | undefined;
    for (const answer of this.#answers.values()) {
      if (answer.place.channel !== channel || answer.place.threadTs !== threadTs) continue;
      if (stoppedTs.some((ts) => answer.shows(ts))) return answer;
      if (!answer.done) open = answer;
    }
    return open;
  }

  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
    answering: AnswerFor,
  ): AnswerSink {
    const live = this.#answers.get(turnId);
    if (live !== undefined && !live.done) return live.sink(onRef);
    const { team, channel, threadTs } = place(target);
    const answer = new SlackAnswer(
      // The actor is a Slack user here: a native stream outside a DM is addressed to them.
      { team, channel, threadTs, turnId, sessionId: target.sessionId, recipient: answering.actorId },
      {
        api: this.#api,
        clock: this.#clock,
        logger: this.#logger,
        settings: this.#settings,
        streams: this.#streams,
        statuses: this.statuses,
      },
      // A finished answer opened again without a ref (its save may not have landed) goes on
      // in the messages it already has.
      ref ?? live?.ref ?? null,
      // A turn this process did not store may have had its answer posted by a process that
      // died before the engine persisted the ref: look for it before posting another.
      !answering.fresh,
    );
    this.#answers.delete(turnId);
    this.#answers.set(turnId, answer);
    this.#forgetFinished();
    return answer.sink(onRef);
  }

  #forgetFinished(): void {
    if (this.#answers.size <= MAX_FINISHED) return;
    for (const [id, answer] of this.#answers) {
      if (this.#answers.size <= MAX_FINISHED) return;
      if (answer.done) this.#answers.delete(id);
    }
  }

  async postNotice(target: ChatTarget, notice: Notice): Promise<void> {
    if (notice.kind === 'binding-removed') {
      this.activity.clear(target.sessionId);
      this.statuses.set(target.sessionId, 'closed');
    }
    await this.#post(target, noticeMessage(notice));
    // A prompt whose question this notice ended shows that it no longer waits.
    await this.#prompts?.noticed(target, notice).catch(() => undefined);
  }

  async askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    const form = prompt.question.kind === 'structured' ? prompt.question.form : undefined;
    if (form !== undefined && this.#prompts !== undefined)
      return this.#prompts.show(target, prompt, form, (message) => this.#post(target, message));
    const { channel } = place(target);
    const ts = await this.#post(target, questionMessage(prompt.question));
    return `${channel}|${ts}`;
  }

  /** S-6: the person, looked up now if the event was taken before users.info answered. */
  async person(target: ChatTarget, actorId: string): Promise<Actor | undefined> {
    return this.#people?.actor(place(target).team, actorId);
  }

  async showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void> {
    let tally = this.#toolCards.get(turnId);
    if (tally === undefined) {
      const { team, channel } = place(target);
      tally = new ToolCardTally(
        {
          postCard: (s) => this.#post(target, toolStepMessage(s)),
          postCount: (text) => this.#post(target, { text }),
          editCount: (ts, text) =>
            retrying(this.#clock, () => this.#api.update({ team }, { channel, ts, text })),
        },
        () => this.#toolCards.delete(turnId),
      );
      this.#toolCards.set(turnId, tally);
    }
    await tally.show(step);
  }

  /** Stops timers; waiting budget takes were closed by whoever owns the budgets. */
  close(): void {
    this.activity.close();
    this.statuses.close();
    for (const tally of this.#toolCards.values()) tally.close();
    this.#toolCards.clear();
  }

  async #post(target: ChatTarget, message: RenderedMessage): Promise<string> {
    const { team, channel, threadTs } = place(target);
    try {
      const { ts } = await retrying(this.#clock, () =>
        this.#api.postMessage(
          { team },
          {
            channel,
            thread_ts: threadTs,
            text: message.text,
            ...(message.blocks === undefined ? {} : { blocks: message.blocks }),
          },
        ),
      );
      return ts;
    } catch (error) {
      this.#logger.warn(
        { channel, err: error instanceof KourierError ? error.code : 'error' },
        'could not post in a Slack thread',
      );
      throw error;
    }
  }
}

function place(target: ChatTarget): { team: string; channel: string; threadTs: string } {
  if (target.key.surface !== SURFACE) throw new NotASlackThreadError();
  return { team: target.key.workspaceId, channel: target.key.channelId, threadTs: target.key.threadId };
}
