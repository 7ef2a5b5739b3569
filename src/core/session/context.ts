import type { Task } from '../agent/model.js';
import type { Clock } from '../clock.js';
import { ACTOR_METADATA_KEY, actorIdOf } from '../compose.js';
import type { EngineEvent } from '../events.js';
import type {
  AgentCallOptions,
  AgentRoute,
  Caller,
  ChatSurface,
  ChatTarget,
  EventSink,
  Notice,
  TurnTracer,
} from '../ports.js';
import type { SessionKey, SessionRecord, SessionStore, TurnRecord } from '../store.js';
import type { TraceContext } from '../trace.js';
import type { EngineTimings } from './timings.js';
import { TurnRun } from './turn-run.js';

/**
 * What every part of a session's driver shares (sending.ts, reading.ts, following.ts,
 * settling.ts, paused.ts): the engine's dependencies, the session it drives, the signal that
 * stops it, the session as last written, and the plumbing each part uses — commits, notices,
 * events, runs, sleeps. The parts are functions over this context; none keeps state of its own.
 */

export interface DriverDeps {
  store: SessionStore;
  surface: ChatSurface;
  clock: Clock;
  events: EventSink;
  timings: EngineTimings;
  /** Largest text of one turn, in characters: what merging turns into one may not pass. */
  maxTextLength: number;
  owner: string;
  /** Whether writes are fenced by the session lease (a store shared by several replicas). */
  fenced: boolean;
  /** Resolves the session's Binding to its live client; undefined when it is gone. */
  resolve(binding: string, key: SessionKey, use?: 'cancel'): AgentRoute | undefined;
  /** Arms a wake-up of this session at `at` (a question's deadline). */
  wakeAt(sessionId: string, at: number): void;
  /** The spans of turns; undefined: not traced (no context is passed to the agent). */
  tracer?: TurnTracer | undefined;
  /** Turns whose first answer text was counted already (shared by the engine's drivers). */
  firstText: Set<string>;
  /** Turns this process stored (AnswerFor.fresh), kept by the engine. */
  storedHere: ReadonlySet<string>;
  /**
   * Turns this process stored already marked `sending` (a new thread's first message) and has
   * not sent yet: the driver that takes one out sends it, where any other `sending` turn has an
   * unknown outcome (a crash, another process) and is looked up or sent again.
   */
  unsent: Set<string>;
  /**
   * Sessions whose paused question a person's stop in this process is closing: their driver
   * leaves the question to that stop (cancelling.ts) instead of carrying the stop out itself.
   */
  closing: ReadonlySet<string>;
  /**
   * Answer refs the store could not record yet (it was down), by turn, kept by the engine
   * across drivers so the next driver of the turn updates the same message, not a new one.
   */
  unsavedRefs: Map<string, string>;
}

/** Thrown inside a driver when its work must stop (lease lost, engine stopping). */
export class Stop extends Error {}

export type StepResult = 'again' | 'idle';

/** The paused task an answer goes to. */
export interface AnswerTarget {
  taskId: string;
  contextId: string;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An engine event as a part of the driver emits it: the session, Binding and time are added. */
export type DriverEvent = DistributiveOmit<EngineEvent, 'sessionId' | 'binding' | 'at'>;

export class DriverContext {
  readonly deps: DriverDeps;
  readonly sessionId: string;
  readonly signal: AbortSignal;
  /** The session as this driver last read or wrote it. */
  current: SessionRecord | undefined;
  /**
   * While a task's stream is read (consumeStream): ends the read with the task as the agent
   * reported it elsewhere (the answer to a person's cancel), as a terminal event on it would.
   */
  endStream: ((task: Task) => void) | undefined;
  /** The answer turn an auth-required task was last re-read for (T-6), so it is read once. */
  authCheckedFor: string | null = null;
  /** Failed ListTasks lookups per turn, so their backoff grows (M-5). */
  readonly lookups = new Map<string, number>();
  /** Turns this driver's commits settled since its current step began (SessionDriver's #next). */
  readonly settledInStep = new Set<string>();
  /** Writes started on their own (answer refs), awaited by drained(). */
  readonly #background = new Set<Promise<void>>();
  /**
   * An answer ref told to this driver and not yet asked to be written: held until the event
   * loop turns, so that a commit of the same turn asked for meanwhile carries it (#withHeldRef).
   */
  #heldRef: { turnId: string; ref: string } | undefined;
  #heldRefTimer: NodeJS.Immediate | undefined;
  /**
   * The turn this driver last wrote (the first of its last commit that wrote turns), with the
   * answer ref it was told of since. While the driver runs, nothing else writes a turn of its
   * session but setAnswerRef, so this is the stored turn, without a read.
   */
  #written: TurnRecord | undefined;

  constructor(deps: DriverDeps, sessionId: string, signal: AbortSignal) {
    this.deps = deps;
    this.sessionId = sessionId;
    this.signal = signal;
  }

  /** Resolves once the writes this driver started on their own have finished. */
  async drained(): Promise<void> {
    this.#writeHeldRef();
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
  }

  runFor(session: SessionRecord, turn: TurnRecord | null): TurnRun {
    const run = new TurnRun(
      turn?.taskId ?? session.task?.taskId ?? null,
      session.contextId,
      this.deps.clock.now(),
    );
    if (session.task !== null) run.lastActivityAt = session.task.lastActivityAt;
    if (turn !== null) {
      run.turnId = turn.id;
      run.receivedAt = turn.createdAt;
      run.trace = this.traceOf(session, turn);
      run.caller = callerOf(session, turn);
    }
    if (turn !== null && turn.kind !== 'context') {
      const unsaved = this.deps.unsavedRefs.get(turn.id);
      if (turn.answerRef === null && unsaved !== undefined) this.#saveInBackground(turn.id, unsaved);
      run.sink = this.deps.surface.openAnswer(
        this.target(session),
        turn.id,
        turn.answerRef ?? unsaved ?? null,
        (ref) => this.#saveInBackground(turn.id, ref),
        { actorId: actorIdOf(turn.metadata), fresh: this.deps.storedHere.has(turn.id) },
      );
    }
    return run;
  }

  /**
   * Saves an answer ref on its own, after the event loop turns, unless a commit of its turn
   * asked for before then carries it: a surface that shows the answer at once (the first
   * update of a short answer is often right before its settle) then costs one write, not two.
   * Either way it goes in the group commit it would have joined, or the next one. drained()
   * awaits it.
   */
  #saveInBackground(turnId: string, ref: string): void {
    if (this.#written?.id === turnId) this.#written = { ...this.#written, answerRef: ref };
    if (this.#heldRef !== undefined && this.#heldRef.turnId !== turnId) this.#writeHeldRef();
    this.#heldRef = { turnId, ref };
    this.#heldRefTimer ??= setImmediate(() => {
      this.#heldRefTimer = undefined;
      this.#writeHeldRef();
    });
  }

  /** The held answer ref, if any, written on its own now. */
  #writeHeldRef(): void {
    const held = this.#takeHeldRef();
    if (held === undefined) return;
    const write = this.#saveAnswerRef(held.turnId, held.ref).finally(() => this.#background.delete(write));
    this.#background.add(write);
  }

  /** The held answer ref, no longer held (its timer stopped). */
  #takeHeldRef(): { turnId: string; ref: string } | undefined {
    const held = this.#heldRef;
    this.#heldRef = undefined;
    if (this.#heldRefTimer !== undefined) {
      clearImmediate(this.#heldRefTimer);
      this.#heldRefTimer = undefined;
    }
    return held;
  }

  /**
   * `turns` with the held answer ref on its turn, when one of them is that turn and carries no
   * other ref; the ref is then no longer held. Undefined when no turn takes it.
   */
  #withHeldRef(
    turns: TurnRecord[],
  ): { turns: TurnRecord[]; ref: { turnId: string; ref: string } } | undefined {
    const held = this.#heldRef;
    if (held === undefined) return undefined;
    const at = turns.findIndex(
      (t) => t.id === held.turnId && (t.answerRef === null || t.answerRef === held.ref),
    );
    if (at === -1) return undefined;
    this.#takeHeldRef();
    const turn = turns[at] as TurnRecord;
    if (turn.answerRef === held.ref) return { turns, ref: held };
    const carried = turns.slice();
    carried[at] = { ...turn, answerRef: held.ref };
    return { turns: carried, ref: held };
  }

  async #saveAnswerRef(turnId: string, ref: string): Promise<void> {
    // Written on its own, so it never races the driver's writes of the session or the turn.
    // A store that is down keeps it unsaved, for this turn's next driver and a later save.
    try {
      await this.deps.store.setAnswerRef(turnId, ref, this.deps.clock.now());
      this.deps.unsavedRefs.delete(turnId);
    } catch {
      this.deps.unsavedRefs.set(turnId, ref);
    }
  }

  async commit(session: SessionRecord, given: TurnRecord[]): Promise<SessionRecord> {
    const carrying = this.#withHeldRef(given);
    const turns = carrying?.turns ?? given;
    let written: SessionRecord | undefined;
    try {
      written = await this.deps.store.commit({
        session,
        turns,
        now: this.deps.clock.now(),
        ...(this.deps.fenced ? { fence: { owner: this.deps.owner } } : {}),
      });
    } catch (error) {
      // The ref it carried is not lost with it: written on its own, as it would have been.
      if (carrying !== undefined) this.#saveInBackground(carrying.ref.turnId, carrying.ref.ref);
      throw error;
    }
    if (carrying !== undefined) this.deps.unsavedRefs.delete(carrying.ref.turnId);
    this.current = written ?? undefined;
    for (const turn of turns) if (turn.state === 'settled') this.settledInStep.add(turn.id);
    const [first] = turns;
    if (first !== undefined) {
      const kept = this.#written?.id === first.id ? this.#written.answerRef : null;
      // As the store keeps it: a commit that carries no ref leaves the one recorded.
      this.#written = first.answerRef === null && kept !== null ? { ...first, answerRef: kept } : first;
    }
    return written ?? session;
  }

  /** The turn as this driver last wrote it, if that was the last turn it wrote; else undefined. */
  writtenTurn(turnId: string): TurnRecord | undefined {
    return this.#written?.id === turnId ? this.#written : undefined;
  }

  /**
   * The session as last written. While this driver holds the lease it is the only writer of the
   * session row (writes are fenced), so what it wrote last is what the store holds; each step
   * still starts from a fresh read.
   */
  async reload(sessionId: string): Promise<SessionRecord> {
    if (this.current !== undefined && this.current.id === sessionId) return this.current;
    const session = await this.deps.store.getSession(sessionId);
    if (session === undefined) throw new Stop('session vanished');
    this.current = session;
    return session;
  }

  async notice(session: SessionRecord, message: Notice): Promise<void> {
    this.emit(session, { type: 'notice.posted', kind: message.kind });
    // Read after the write that goes with the notice: whether a question still waits (a stop
    // that failed leaves it open, a timeout does not).
    const questionKey = (await this.deps.store.getSession(session.id).catch(() => undefined))?.question
      ?.questionKey;
    await this.deps.surface
      .postNotice(this.target(session), { ...message, questionKey: questionKey ?? null })
      .catch(() => undefined);
  }

  target(session: SessionRecord): ChatTarget {
    return { sessionId: session.id, key: session.key };
  }

  emit(session: SessionRecord, event: DriverEvent): void {
    if (event.type === 'turn.settled') {
      this.deps.tracer?.end(event.turnId, event.outcome);
      this.deps.firstText.delete(event.turnId);
    }
    this.deps.events.emit({
      ...event,
      sessionId: session.id,
      binding: session.binding,
      at: this.deps.clock.now(),
    } as EngineEvent);
  }

  /**
   * `agent.event`, emitted for every event of a stream when the sink wants them
   * (EventSink.agentEvents): built in one object, with the time the caller read for the event,
   * rather than spread from a partial one as emit() does.
   */
  emitAgentEvent(session: SessionRecord, turnId: string, kind: string, at: number): void {
    if (this.deps.events.agentEvents !== true) return;
    this.deps.events.emit({
      type: 'agent.event',
      turnId,
      kind,
      sessionId: session.id,
      binding: session.binding,
      at,
    });
  }

  /** The context a turn's agent calls go under (none when the engine is not traced). */
  traceOf(session: SessionRecord, turn: TurnRecord): TraceContext | undefined {
    const tracer = this.deps.tracer;
    if (tracer === undefined) return undefined;
    const context = tracer.contextOf({
      turnId: turn.id,
      sessionId: session.id,
      binding: session.binding,
      kind: turn.kind,
      stored: turn.traceContext,
    });
    return context ?? undefined;
  }

  /**
   * The first answer text of a turn: counted once per turn. The flag is checked first, so
   * after the first text this costs nothing per event.
   */
  noteText(session: SessionRecord, run: TurnRun): void {
    if (run.textSeen || run.turnId === null) return;
    if (run.answer.length === 0) return;
    run.textSeen = true;
    const seen = this.deps.firstText;
    if (seen.has(run.turnId)) return;
    // Bounded: entries leave when their turn settles; a replica that loses many sessions to
    // another one forgets them all rather than grow.
    if (seen.size >= 10_000) seen.clear();
    seen.add(run.turnId);
    this.emit(session, {
      type: 'answer.started',
      turnId: run.turnId,
      latencyMs: this.deps.clock.now() - run.receivedAt,
    });
  }

  /** The open turn whose task this is, if any. */
  async turnOfTask(session: SessionRecord, taskId: string): Promise<TurnRecord | null> {
    const open = await this.deps.store.openTurns(session.id);
    return open.find((t) => t.taskId === taskId) ?? null;
  }

  /** How long ago a turn was first sent (the 15-minute windows, R-1, E-6); 0 before. */
  sinceFirstSent(turn: TurnRecord): number {
    const now = this.deps.clock.now();
    return now - (turn.firstSentAt ?? now);
  }

  async sleep(ms: number): Promise<void> {
    try {
      await this.deps.clock.sleep(ms, this.signal);
    } catch {
      throw new Stop('stopped while waiting');
    }
  }

  checkStop(): void {
    if (this.signal.aborted) throw new Stop('stopped');
  }
}

export function callOptions(
  signal: AbortSignal,
  trace: TraceContext | undefined,
  caller?: Caller,
): AgentCallOptions {
  return { signal, ...(trace === undefined ? {} : { trace }), ...(caller === undefined ? {} : { caller }) };
}

/** Whom a turn's calls are for: its person (S-5's actor), or the trigger that started it. */
export function callerOf(session: SessionRecord, turn: TurnRecord | null): Caller | undefined {
  if (turn === null) return undefined;
  const place = {
    surface: session.key.surface,
    workspaceId: session.key.workspaceId,
    channelId: session.key.channelId,
    sessionId: session.id,
    binding: session.binding,
  };
  if (turn.kind === 'trigger') return { kind: 'trigger', ...place };
  const actor = turn.metadata?.[ACTOR_METADATA_KEY] as
    | { id?: unknown; name?: unknown; email?: unknown }
    | undefined;
  if (typeof actor?.id !== 'string') return undefined;
  return {
    kind: 'person',
    id: actor.id,
    ...(typeof actor.name === 'string' ? { name: actor.name } : {}),
    ...(typeof actor.email === 'string' ? { email: actor.email } : {}),
    ...place,
  };
}
