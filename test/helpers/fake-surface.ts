import type { AnswerView } from '../../src/core/answer.js';
import type {
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../../src/core/ports.js';

export interface ShownMessage {
  ref: string;
  sessionId: string;
  kind: 'answer' | 'notice' | 'question' | 'step';
  text: string;
  turnId?: string;
  noticeKind?: string;
  /** A notice's link (a sign-in). */
  link?: { label: string; url: string };
  final?: boolean;
  /** How many times an answer was updated (final flush included). */
  updates: number;
}

/**
 * The chat port's fake for engine tests: keeps what a thread would show. Answers are keyed by
 * the ref it hands out, so an engine that lost a ref would show a second answer message.
 */
export class FakeSurface implements ChatSurface {
  readonly messages: ShownMessage[] = [];
  #next = 0;
  #waiters: Array<() => void> = [];
  readonly #relink: boolean;

  /**
   * relinkByTurn: an answer opened without a ref finds the message already shown for its turn,
   * as the Slack surface does by the metadata it attaches: for tests where another process
   * (a replica) lost the ref. By default a lost ref shows a second message, so tests see it.
   */
  constructor(options: { relinkByTurn?: boolean } = {}) {
    this.#relink = options.relinkByTurn ?? false;
  }

  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
  ): AnswerSink {
    let message =
      ref !== null
        ? this.messages.find((m) => m.ref === ref)
        : this.#relink
          ? this.messages.find((m) => m.kind === 'answer' && m.turnId === turnId)
          : undefined;
    const ensure = (): ShownMessage => {
      if (message === undefined) {
        message = {
          ref: `answer-${++this.#next}`,
          sessionId: target.sessionId,
          kind: 'answer',
          text: '',
          turnId,
          updates: 0,
        };
        this.messages.push(message);
        onRef(message.ref);
      }
      return message;
    };
    return {
      update: (view: AnswerView) => {
        const m = ensure();
        m.text = view.text();
        m.updates++;
        this.#changed();
      },
      finish: async (view: AnswerView) => {
        if (view.length === 0 && message === undefined) return;
        const m = ensure();
        m.text = view.text();
        m.final = true;
        m.updates++;
        this.#changed();
      },
    };
  }

  async postNotice(target: ChatTarget, notice: Notice): Promise<void> {
    this.messages.push({
      ref: `notice-${++this.#next}`,
      sessionId: target.sessionId,
      kind: 'notice',
      text: notice.text,
      noticeKind: notice.kind,
      ...(notice.link === undefined ? {} : { link: notice.link }),
      ...(notice.turnId === undefined ? {} : { turnId: notice.turnId }),
      updates: 0,
    });
    this.#changed();
  }

  async askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    const ref = `question-${++this.#next}`;
    this.messages.push({
      ref,
      sessionId: target.sessionId,
      kind: 'question',
      text: prompt.question.text,
      turnId: prompt.turnId,
      updates: 0,
    });
    this.#changed();
    return ref;
  }

  async showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void> {
    this.messages.push({
      ref: `step-${++this.#next}`,
      sessionId: target.sessionId,
      kind: 'step',
      text: `${step.kind} ${step.toolName} ${step.summary}`,
      turnId,
      updates: 0,
    });
    this.#changed();
  }

  of(sessionId: string, kind?: ShownMessage['kind']): ShownMessage[] {
    return this.messages.filter((m) => m.sessionId === sessionId && (kind === undefined || m.kind === kind));
  }

  notices(sessionId: string): string[] {
    return this.of(sessionId, 'notice').map((m) => m.noticeKind ?? '');
  }

  /** Waits until `predicate` holds, re-checking on every change; fails after `timeoutMs`. */
  async waitFor(predicate: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out waiting for ${what}; shown: ${JSON.stringify(this.messages.map((m) => [m.kind, m.noticeKind ?? m.text.slice(0, 40)]))}`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  #changed(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}
