import type { Actor } from '../core/compose.js';
import { KourierError } from '../core/errors.js';
import type {
  AnswerFor,
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../core/ports.js';
import type { SessionKey } from '../core/store.js';
import type { PostRef, TriggerChat, TriggerConfig, TriggerMessage, TriggerPlace } from '../core/triggers.js';

/** A session whose surface is not running in this process (say, Slack settings removed). */
export class UnknownSurfaceError extends KourierError {
  constructor(readonly surface: string) {
    super('unknown_surface', `no chat surface "${surface}" is running`);
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
    answering: AnswerFor,
  ): AnswerSink {
    return this.#for(target).openAnswer(target, turnId, ref, onRef, answering);
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

  async person(target: ChatTarget, actorId: string): Promise<Actor | undefined> {
    return this.#for(target).person?.(target, actorId);
  }
}

/**
 * The trigger port over the running surfaces: a trigger that names a channel of a surface (Slack,
 * Teams) starts its threads there when that surface runs; one that names none, in the web chat
 * when it runs (local mode); else nowhere (the trigger answers 503 until a surface can take its
 * threads).
 */
export class TriggerChatRouter implements TriggerChat {
  readonly #surfaces: Readonly<Record<string, TriggerChat>>;
  readonly #webchat: TriggerChat | undefined;

  constructor(surfaces: Readonly<Record<string, TriggerChat | undefined>>) {
    const running: Record<string, TriggerChat> = {};
    for (const [name, chat] of Object.entries(surfaces)) if (chat !== undefined) running[name] = chat;
    this.#surfaces = running;
    this.#webchat = running.webchat;
  }

  place(trigger: TriggerConfig): TriggerPlace | undefined {
    const { surface } = trigger.target;
    if (surface === undefined) return this.#webchat?.place(trigger);
    return this.#surfaces[surface]?.place(trigger);
  }

  startThread(place: TriggerPlace, message: TriggerMessage, ref: PostRef): Promise<SessionKey> {
    return this.#for(place.surface).startThread(place, message, ref);
  }

  postInThread(key: SessionKey, message: TriggerMessage, ref: PostRef): Promise<void> {
    return this.#for(key.surface).postInThread(key, message, ref);
  }

  #for(surface: string): TriggerChat {
    const chat = this.#surfaces[surface];
    if (chat === undefined) throw new UnknownSurfaceError(surface);
    return chat;
  }
}
