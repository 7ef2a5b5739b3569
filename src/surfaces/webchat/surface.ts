import type { Logger } from 'pino';
import type {
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  NoticeKind,
  Question,
  QuestionPrompt,
  ToolStep,
} from '../../core/ports.js';
import type { TranscriptStore } from '../../core/transcript-store.js';
import { WebChatActivity } from './activity.js';
import { CoalescedAnswer, DEFAULT_ANSWER_INTERVAL_MS } from './answer-sink.js';
import { type JournalOptions, ThreadJournal } from './journal.js';
import { readStructured } from './structured.js';
import { type Thread, ThreadBook } from './threads.js';
import type { MessageView } from './view.js';

export interface WebChatSurfaceOptions {
  /** Smallest gap between two shown updates of one answer (default 100 ms: ≤ 10 per second). */
  answerIntervalMs?: number;
  now?: () => number;
  /** Where threads are kept across restarts; unset: in memory only (tests of the surface alone). */
  transcripts?: TranscriptStore;
  /** Needed with `transcripts`: a failed save is logged. */
  logger?: Logger;
  journal?: Omit<JournalOptions, 'logger'>;
  /**
   * Why the person of this web chat may not decide a Binding's tool approvals, or undefined when
   * they may (local mode: the one person at the machine). Read when an approval is shown and
   * again when a decision arrives.
   */
  approvalRefusal?: (binding: string) => string | undefined;
}

/**
 * The web chat's side of the chat port: everything the engine shows lands in a thread (threads
 * per Binding), which the HTTP API reads and streams to the page, and which the journal keeps
 * in the store (restore() at start, close() at stop). `activity` is an EventSink for the
 * engine's events: it tells each thread what the engine is doing.
 */
export class WebChatSurface implements ChatSurface {
  readonly threads: ThreadBook;
  readonly activity: WebChatActivity;
  readonly #answerIntervalMs: number;
  readonly #journal: ThreadJournal | undefined;
  readonly #approvalRefusal: (binding: string) => string | undefined;

  constructor(options: WebChatSurfaceOptions = {}) {
    this.#approvalRefusal = options.approvalRefusal ?? (() => undefined);
    this.threads = new ThreadBook(options.now);
    this.activity = new WebChatActivity(this.threads);
    this.#answerIntervalMs = options.answerIntervalMs ?? DEFAULT_ANSWER_INTERVAL_MS;
    if (options.transcripts !== undefined) {
      if (options.logger === undefined) throw new TypeError('a web chat that keeps threads needs a logger');
      this.#journal = new ThreadJournal(options.transcripts, { ...options.journal, logger: options.logger });
      this.threads.observe(this.#journal);
    }
  }

  /** Reads the kept threads back (call before the engine starts); returns how many. */
  restore(): Promise<number> {
    return this.#journal?.restore(this.threads) ?? Promise.resolve(0);
  }

  /** Writes what is not saved yet (call after the engine stopped, before the store closes). */
  async close(): Promise<void> {
    await this.#journal?.close();
  }

  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
  ): AnswerSink {
    return new CoalescedAnswer(this.threads.forKey(target.key), turnId, ref, onRef, this.#answerIntervalMs);
  }

  async postNotice(target: ChatTarget, notice: Notice): Promise<void> {
    const thread = this.threads.forKey(target.key);
    if (notice.kind === 'question-timeout') this.#closePrompts(thread, 'expired');
    // A stopped task takes no answer to what it asked.
    if (notice.kind === 'task-canceled') this.#closePrompts(thread, 'closed');
    // Nor does a task the agent no longer has.
    if (notice.kind === 'session-gone' || notice.kind === 'session-gone-carried')
      this.#closePrompts(thread, 'closed');
    // A notice that ends its turn settles the turn's answer as it stands. The answer is
    // finished by its own sink in the process that streamed it; after a restart that sink is
    // gone, and without this the answer would look as if it streamed for ever.
    if (notice.turnId !== undefined && !TURN_GOES_ON.has(notice.kind)) {
      for (const answer of thread.unsettledAnswers(notice.turnId))
        thread.change(answer.id, (m) => {
          m.final = true;
        });
    }
    thread.add({
      author: 'broker',
      kind: 'notice',
      text: notice.text,
      noticeKind: notice.kind,
      ...(notice.link === undefined ? {} : { link: notice.link }),
      ...(notice.turnId === undefined ? {} : { turnId: notice.turnId }),
    });
  }

  async askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    const thread = this.threads.forKey(target.key);
    // One question is pending per session: a new one means the earlier ones take no answer.
    this.#closePrompts(thread, 'closed');
    const message = thread.add(promptMessage(prompt.turnId, prompt.question));
    const refusal = message.approval === undefined ? undefined : this.#approvalRefusal(thread.binding);
    if (refusal !== undefined)
      thread.change(message.id, (m) => {
        if (m.approval !== undefined) m.approval.refusal = refusal;
      });
    return message.id;
  }

  /** Why this web chat's person may not decide the Binding's tool approvals (undefined: they may). */
  approvalRefusal(binding: string): string | undefined {
    return this.#approvalRefusal(binding);
  }

  async showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void> {
    this.threads.forKey(target.key).add({
      author: 'agent',
      kind: 'tool-step',
      text: `${step.kind === 'call' ? 'Calling' : 'Result of'} ${step.toolName}: ${step.summary}`,
      turnId,
      step: { kind: step.kind, toolName: step.toolName, summary: step.summary },
    });
  }

  #closePrompts(thread: Thread, status: 'expired' | 'closed'): void {
    for (const open of thread.openPrompts()) thread.setPromptStatus(open.id, status);
  }
}

type NewMessage = Omit<MessageView, 'id' | 'seq' | 'createdAt' | 'updatedAt'>;

/** A question as a thread message: a text question, kagent's ask_user form, or an approval. */
function promptMessage(turnId: string, question: Question): NewMessage {
  const base = { author: 'agent' as const, ...(turnId === '' ? {} : { turnId }) };
  if (question.kind === 'text') {
    return {
      ...base,
      kind: 'question',
      text: question.text,
      question: {
        key: question.key,
        mode: 'text',
        choices: question.choices ?? [],
        items: [],
        status: 'open',
      },
    };
  }
  const reading = readStructured(question.form);
  if (reading.kind === 'approval') {
    const names = reading.tools.map((t) => t.name).join(', ');
    const text =
      reading.hint !== '' ? reading.hint : question.text !== '' ? question.text : `Approve ${names}?`;
    return {
      ...base,
      kind: 'approval',
      text,
      approval: {
        key: question.key,
        hint: reading.hint,
        ...(reading.subagent === undefined ? {} : { subagent: reading.subagent }),
        tools: reading.tools,
        status: 'open',
      },
    };
  }
  // ask_user, or a payload this page cannot read (shown, but with no form: it cannot be answered).
  const items = reading.kind === 'ask-user' ? reading.items : [];
  const text =
    question.text !== ''
      ? question.text
      : items.map((i) => i.question).join('\n') || 'The agent asks a question.';
  return {
    ...base,
    kind: 'question',
    text,
    question: { key: question.key, mode: 'structured', choices: [], items, status: 'open' },
  };
}

/** Notices after which the turn is not over: its answer may still grow. */
const TURN_GOES_ON = new Set<NoticeKind>([
  'agent-busy',
  'identity-provider-unavailable',
  'context-changed',
  'cancel-failed',
]);
