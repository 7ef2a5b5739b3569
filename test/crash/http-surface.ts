import type { AnswerView } from '../../src/core/answer.js';
import type {
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../../src/core/ports.js';

async function post(url: string, payload: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** The chat port over HTTP to the crash tests' chat server, coalescing answer edits. */
export class HttpSurface implements ChatSurface {
  constructor(private readonly url: string) {}

  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
  ): AnswerSink {
    let current = ref;
    let latest: AnswerView | undefined;
    let timer: NodeJS.Timeout | undefined;
    let chain: Promise<void> = Promise.resolve();
    const send = (text: string, final: boolean): Promise<void> => {
      chain = chain.then(async () => {
        const reply = await post(`${this.url}/answer`, {
          sessionId: target.sessionId,
          turnId,
          ref: current,
          text,
          final,
        });
        if (typeof reply.ref === 'string' && reply.ref !== current) {
          current = reply.ref;
          onRef(reply.ref);
        }
      });
      return chain;
    };
    return {
      update: (view) => {
        latest = view;
        timer ??= setTimeout(() => {
          timer = undefined;
          if (latest !== undefined) void send(latest.text(), false).catch(() => undefined);
        }, 10);
      },
      finish: async (view) => {
        clearTimeout(timer);
        timer = undefined;
        await send(view.text(), true);
      },
    };
  }

  async postNotice(target: ChatTarget, notice: Notice): Promise<void> {
    await post(`${this.url}/notice`, {
      sessionId: target.sessionId,
      kind: notice.kind,
      turnId: notice.turnId,
    });
  }

  async askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    const reply = await post(`${this.url}/question`, { sessionId: target.sessionId, turnId: prompt.turnId });
    return typeof reply.ref === 'string' ? reply.ref : null;
  }

  async showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void> {
    await post(`${this.url}/step`, { sessionId: target.sessionId, turnId, step });
  }
}
