import type { AnswerSink, ChatSurface, ChatTarget, Notice, QuestionPrompt, ToolStep } from '../core/ports.js';

/** A session whose surface is not running in this process (say, Slack settings removed). */
export class UnknownSurfaceError extends Error {
  constructor(readonly surface: string) {
    super(`no chat surface "${surface}" is running`);
  }
}

/**
 * One engine, several chat surfaces: every call goes to the surface the session belongs to
 * (`key.surface`: 'slack', 'webchat', …).
 */
export class SurfaceRouter implements ChatSurface {
  readonly #surfaces: ReadonlyMap<string, ChatSurface>;

  constructor(surfaces: Record<string, ChatSurface>) {
    this.#surfaces = new Map(Object.entries(surfaces));
  }

  #for(target: ChatTarget): ChatSurface {
    const surface = this.#surfaces.get(target.key.surface);
    if (surface === undefined) throw new UnknownSurfaceError(target.key.surface);
    return surface;
  }

  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
  ): AnswerSink {
    return this.#for(target).openAnswer(target, turnId, ref, onRef);
  }

  postNotice(target: ChatTarget, notice: Notice): Promise<void> {
    return this.#for(target).postNotice(target, notice);
  }

  askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    return this.#for(target).askQuestion(target, prompt);
  }

  showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void> {
    return this.#for(target).showToolStep(target, turnId, step);
  }
}
