import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AnswerView } from '../../core/answer.js';
import { type Actor, actorFor } from '../../core/compose.js';
import type {
  AnswerFor,
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../../core/ports.js';
import type { SessionKey } from '../../core/store.js';
import { cutWithMark } from '../../core/text.js';
import { ToolCardTally } from '../common/tool-cards.js';
import { EditedAnswer } from './answer/edited.js';
import { StreamedAnswer } from './answer/streamed.js';
import { questionCard, stopCard } from './cards/question-card.js';
import type { MemberInfo, TeamsSender } from './sender.js';

/**
 * The engine's chat port for Microsoft Teams: answers streamed in personal chats and edited in
 * channels and group chats, notices, questions and tool steps as messages in the session's
 * conversation, and who a person is (the conversation's member lookup: name, email or UPN).
 * Every send goes through the sender (the SDK's proactive path, paced per conversation).
 */

/** Edits of an answer that grows, at most one per this long (Teams allows 1,800 an hour). */
export const EDIT_PACE_MS = 2_000;
const STREAM_REF = 'stream:';
const LOOKUP_TIMEOUT_MS = 3_000;
const STEP_MAX = 300;

export interface TeamsSurfaceDeps {
  sender: TeamsSender;
  /** A member of a session's conversation, by their Teams or Entra id (cached). */
  people(key: SessionKey, memberId: string): Promise<MemberInfo | undefined>;
  logger: Logger;
  /** A person's Stop on a streamed answer: cancel the turn's task. */
  stop(key: SessionKey, turnId: string, actorId: string | undefined): void;
  editPaceMs?: number;
}

export class TeamsSurface implements ChatSurface {
  readonly #d: TeamsSurfaceDeps;
  readonly #toolCards = new Map<string, ToolCardTally>();
  readonly #streams = new Map<string, StreamedAnswer>();

  constructor(deps: TeamsSurfaceDeps) {
    this.#d = deps;
  }

  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
    answering: AnswerFor,
  ): AnswerSink {
    const paceMs = this.#d.editPaceMs ?? EDIT_PACE_MS;
    const edited = (pages: string[]): AnswerSink =>
      new EditedAnswer({
        sender: this.#d.sender,
        key: target.key,
        pages,
        onRef,
        paceMs,
        logger: this.#d.logger,
        working: stopCard(turnId),
      });
    return new DeferredSink(
      this.#d.sender.address(target.key).then((address) => {
        // A stream cannot be taken up again after a restart: the answer goes on in a new message.
        if (ref?.startsWith(STREAM_REF) === true) return edited([]);
        if (address.conversationType !== 'personal' || ref !== null) return edited(ref?.split(' ') ?? []);
        const streamed = new StreamedAnswer({
          sender: this.#d.sender,
          key: target.key,
          address,
          onRef: (id) => onRef(id.includes(' ') ? id : `${STREAM_REF}${id}`),
          onStop: () => this.#d.stop(target.key, turnId, answering.actorId),
          editPaceMs: paceMs,
          logger: this.#d.logger,
        });
        this.#streams.set(turnId, streamed);
        return {
          update: (view) => streamed.update(view),
          finish: (view) => streamed.finish(view).finally(() => this.#streams.delete(turnId)),
        };
      }),
      this.#d.logger,
    );
  }

  async postNotice(target: ChatTarget, notice: Notice): Promise<void> {
    const link = notice.link === undefined ? '' : `\n\n[${notice.link.label}](${notice.link.url})`;
    await this.#d.sender.post(target.key, { type: 'message', text: `${notice.text}${link}` });
  }

  async askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    const q = prompt.question;
    if (q.kind === 'structured' && q.form !== undefined) {
      return await this.#d.sender.post(target.key, { type: 'message', attachments: [questionCard(q)] });
    }
    const choices = (q.choices ?? []).map((c) => `- ${cutWithMark(c, 200)}`).join('\n');
    const text = `${q.text}${choices === '' ? '' : `\n\n${choices}`}\n\n_Reply in this conversation to answer._`;
    return await this.#d.sender.post(target.key, { type: 'message', text });
  }

  async showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void> {
    const line = toolStepLine(step);
    const stream = this.#streams.get(turnId);
    // In a personal chat the step is the stream's informative line, not a message of its own.
    if (stream !== undefined) return stream.inform(line);
    let tally = this.#toolCards.get(turnId);
    if (tally === undefined) {
      tally = new ToolCardTally(
        {
          postCard: (s) => this.#d.sender.post(target.key, { type: 'message', text: toolStepLine(s) }),
          postCount: (text) => this.#d.sender.post(target.key, { type: 'message', text }),
          editCount: (id, text) => this.#d.sender.edit(target.key, id, { type: 'message', text }),
        },
        () => this.#toolCards.delete(turnId),
      );
      this.#toolCards.set(turnId, tally);
    }
    await tally.show(step);
  }

  async person(target: ChatTarget, actorId: string): Promise<Actor | undefined> {
    const member = await Promise.race([
      this.#d.people(target.key, actorId),
      sleep(LOOKUP_TIMEOUT_MS, undefined, { ref: false }),
    ]);
    if (member === undefined) return undefined;
    return actorFor('Teams', {
      id: actorId,
      name: member.name,
      email: member.email ?? member.userPrincipalName,
    });
  }

  close(): void {
    for (const tally of this.#toolCards.values()) tally.close();
    this.#toolCards.clear();
  }
}

/**
 * A tool step as one line: the tool's name and what it was called with or returned, each in a
 * code span, so an agent's text shows as written (a name like `restart_deployment` keeps its
 * underscores, and nothing in it becomes formatting).
 */
export function toolStepLine(step: ToolStep): string {
  const name = cutWithMark(step.toolName, 100).replace(/`/g, "'");
  const summary = cutWithMark(step.summary, STEP_MAX).replace(/`/g, "'");
  const head = step.kind === 'call' ? `🛠️ \`${name}\`` : `✅ \`${name}\` returned`;
  return summary === '' ? head : `${head} \`${summary}\``;
}

/**
 * A sink whose kind is known only once the conversation's address is read: what comes before is
 * held (the latest view only) and handed over.
 */
class DeferredSink implements AnswerSink {
  #sink: AnswerSink | undefined;
  #latest: AnswerView | undefined;
  readonly #ready: Promise<AnswerSink | undefined>;

  constructor(sink: Promise<AnswerSink>, logger: Logger) {
    this.#ready = sink.then(
      (s) => {
        this.#sink = s;
        if (this.#latest !== undefined) s.update(this.#latest);
        return s;
      },
      (error: unknown) => {
        logger.warn(
          { err: error instanceof Error ? error.name : typeof error },
          'a Teams answer has nowhere to go',
        );
        return undefined;
      },
    );
  }

  update(view: AnswerView): void {
    if (this.#sink !== undefined) this.#sink.update(view);
    else this.#latest = view;
  }

  async finish(view: AnswerView): Promise<void> {
    const sink = await this.#ready;
    await sink?.finish(view);
  }
}
