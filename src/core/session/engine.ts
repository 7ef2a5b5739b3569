// Over our ~400-line rule on purpose, as one piece: the engine's public face (ChatInbound) and
// the loop that schedules sessions (scan, kick, drive, leases, wake-ups) share one set of
// per-session maps and one stop signal; split, each half would reach into the other's state.
// The work of a turn lives beside it (driver.ts and its parts, cancelling.ts), as does what
// needs none of that state (hand-over.ts, answer-turn.ts, engine-options.ts, inbound-text.ts).
import { hostname } from 'node:os';
import { type Clock, systemClock } from '../clock.js';
import { actorMetadata, messageIdFor } from '../compose.js';
import { InvalidConfigError } from '../errors.js';
import type { EngineEvent } from '../events.js';
import type { ChatInbound, HandOverResult } from '../inbound.js';
import type {
  AgentRegistry,
  AnswerResult,
  ChatSurface,
  EventSink,
  Inbound,
  ReceiveResult,
  StructuredAnswer,
  TurnTracer,
} from '../ports.js';
import {
  type AddTurnOptions,
  type NewTurn,
  type SessionKey,
  type SessionRecord,
  type SessionStore,
  sessionIdOf,
  type TurnRecord,
} from '../store.js';
import { answerTurn, approvalDecided, closedMeanwhile } from './answer-turn.js';
import {
  type CancelDeps,
  type CancelRequest,
  type CancelResult,
  cancelRunning,
  cancelWorkspaceTasks,
} from './cancelling.js';
import type { DriverDeps } from './context.js';
import { type FirstLook, SessionDriver } from './driver.js';
import type { EngineOptions } from './engine-options.js';
import { noticeIfForgotten } from './forgotten.js';
import { handOverSession } from './hand-over.js';
import { boundedText, inboundContent } from './inbound-text.js';
import { DEFAULT_TIMINGS, type EngineTimings } from './timings.js';

/** A session this process drives: its run, rerun, stop, driver, and mark if the scan kicked it. */
interface DriverEntry {
  promise: Promise<void>;
  again: boolean;
  controller: AbortController;
  driver: SessionDriver | undefined;
  mark: string | undefined;
}

/** How many turns stored by this process are remembered as such (older ones count as not). */
const MAX_STORED_HERE = 50_000;

/**
 * A scan starts at most this many sessions at once, then pauses: after a restart with many turns
 * in flight, connections opened to an agent all in one moment overflow its accept queue.
 */
const SCAN_SLICE = 500;
const SCAN_PAUSE_MS = 50;

/**
 * The session engine: threads as A2A contexts, turns as tasks, durable across crashes. It knows
 * nothing of Slack or Kubernetes: surfaces hand it messages (`receive`), it shows everything
 * through the ChatSurface port, and it keeps its state in the SessionStore.
 *
 * One driver per session at a time: in this process by the `#drivers` map, across replicas by
 * the store's lease. A scan finds sessions with work that nobody drives (after a restart, or a
 * dead replica's) and takes them over.
 */
export class SessionEngine implements ChatInbound {
  readonly #store: SessionStore;
  readonly #registry: AgentRegistry;
  readonly #surface: ChatSurface;
  readonly #clock: Clock;
  readonly #events: EventSink;
  readonly #tracer: TurnTracer | undefined;
  readonly #forgotten: EngineOptions['forgotten'];
  readonly #firstText = new Set<string>();
  /** Turns stored by this process, newest last (bounded): their answers cannot exist yet. */
  readonly #storedHere = new Set<string>();
  /** Turns receive() stored already marked `sending`, not sent yet (bounded; see DriverDeps.unsent). */
  readonly #unsent = new Set<string>();
  readonly #timings: EngineTimings;
  readonly #owner: string;
  readonly #maxTextLength: number;
  readonly #drivers = new Map<string, DriverEntry>();
  /** Sessions whose paused question a stop of this process is closing (DriverDeps.closing). */
  readonly #closing = new Set<string>();
  readonly #wakeups = new Map<string, NodeJS.Timeout>();
  /**
   * Sessions a scan's kick left at rest with work left (a question waiting), by the mark read:
   * scans skip them until it changes (any write does; a wake-up kicks them itself). Why: docs/performance.md, "A year".
   */
  readonly #atRest = new Map<string, string>();
  /** Answer refs not recorded yet because the store was down (see DriverDeps.unsavedRefs). */
  readonly #unsavedRefs = new Map<string, string>();
  #stopping = new AbortController();
  #scanTimer: NodeJS.Timeout | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  #scanning: Promise<void> | undefined;
  /** When the last lease renewal that succeeded was asked for (several replicas only). */
  #renewedAt = 0;

  constructor(options: EngineOptions) {
    this.#store = options.store;
    this.#registry = options.registry;
    this.#surface = options.surface;
    this.#clock = options.clock ?? systemClock;
    this.#events = options.events ?? { emit: () => undefined };
    this.#forgotten = options.forgotten;
    this.#tracer = options.tracer;
    this.#timings = { ...DEFAULT_TIMINGS, ...options.timings };
    // Stable across restarts by default, so a restarted broker takes its own sessions back at
    // once; several replicas must each pass a name of their own (the pod name).
    this.#owner = options.owner ?? hostname();
    this.#maxTextLength = options.maxTextLength ?? 40_000;
    if (this.#timings.leaseTtlMs < 3 * 10)
      throw new InvalidConfigError('engine timing leaseTtlMs is too short');
  }

  get owner(): string {
    return this.#owner;
  }

  /** Sessions this replica is driving right now (for the active-sessions gauge). */
  get activeSessions(): number {
    return this.#drivers.size;
  }

  /**
   * Recovery: every session with unsettled work is picked up — turns whose outcome is unknown
   * are looked up or sent again, accepted turns are followed, questions get their timers.
   */
  async start(): Promise<void> {
    this.#stopping = new AbortController();
    this.#renewedAt = this.#clock.now();
    await this.scan();
    this.#scanTimer = setInterval(() => void this.scan(), this.#timings.scanIntervalMs);
    this.#renewTimer = setInterval(
      () => void this.#renew(),
      Math.max(10, Math.floor(this.#timings.leaseTtlMs / 3)),
    );
    this.#scanTimer.unref();
    this.#renewTimer.unref();
  }

  /**
   * Stops driving (a graceful shutdown): no session starts being driven any more (a message
   * received meanwhile is stored, for whoever drives next), streams are cut, every driver's
   * writes in flight finish, then its session's lease is released, so another replica takes the
   * session over at once instead of waiting for the lease to expire. The store keeps what
   * recovery needs: an accepted task is followed, not sent again.
   */
  async stop(): Promise<void> {
    clearInterval(this.#scanTimer);
    clearInterval(this.#renewTimer);
    for (const timer of this.#wakeups.values()) clearTimeout(timer);
    this.#wakeups.clear();
    this.#stopping.abort(new Error('engine stopping'));
    for (const driver of this.#drivers.values()) driver.controller.abort(new Error('engine stopping'));
    await Promise.allSettled([...this.#drivers.values()].map((d) => d.promise));
    await this.#scanning;
  }

  /**
   * Takes a chat message: stores it durably (idempotent on the chat message's identity), then
   * drives its session. Resolves once it is stored, not when the agent answers.
   */
  async receive(input: Inbound): Promise<ReceiveResult> {
    const now = this.#clock.now();
    const { kind, text, label, metadata } = inboundContent(input, this.#maxTextLength);
    // The store builds the turn from the session as stored, in the write that opens it.
    let begun: string | null = null;
    let markedSending = false;
    let openedHere = false;
    const build = (session: SessionRecord, opened: boolean): NewTurn => {
      openedHere = opened;
      const id = messageIdFor(session.id, input.chatMessageId, kind === 'trigger' ? 'trigger' : 'message');
      // A reply carried as context travels inside the next turn (S-7): it has no span of its own.
      const traceContext =
        kind === 'context'
          ? null
          : (this.#tracer?.begin({ turnId: id, sessionId: session.id, binding: session.binding, kind }) ??
            null);
      if (traceContext !== null) begun = id;
      // The first turn of a thread this write opens is the next one sent, with nothing carried
      // (S-7) and nothing before it: it is stored `sending`, as the driver would mark it
      // before its send, which saves that write. Nothing happens between the two (no effect
      // lies between them), and recovery reads it as any turn marked before a send.
      // A stopped engine drives nothing: what it receives waits, queued, for whoever drives next.
      markedSending = opened && kind !== 'context' && !this.#stopping.signal.aborted;
      return {
        id,
        sessionId: session.id,
        kind,
        chatMessageId: input.chatMessageId,
        text,
        label,
        metadata,
        taskId: null,
        state: markedSending ? 'sending' : 'queued',
        outcome: null,
        attempts: markedSending ? 1 : 0,
        firstSentAt: markedSending ? now : null,
        busyNoticeAt: null,
        answerRef: null,
        traceContext,
        now,
      };
    };
    let added: Awaited<ReturnType<SessionStore['openSessionAndAddTurn']>>;
    try {
      added = await this.#store.openSessionAndAddTurn(
        { key: input.key, binding: input.binding, now },
        build,
        input.kind === 'person'
          ? {
              ...(input.inboundEvent === undefined ? {} : { inboundEvent: input.inboundEvent }),
              ...(input.feedbackTold === undefined ? {} : { feedbackTold: input.feedbackTold }),
            }
          : {},
      );
    } catch (error) {
      if (begun !== null) this.#tracer?.discard(begun);
      throw error;
    }
    const { session, turn, created } = added;
    if (created) {
      this.#rememberStored(turn.id);
      // Only if stored so: a store that found the session opened elsewhere meanwhile stores the
      // turn `queued` (SessionStore.openSessionAndAddTurn), and a `sending` turn it marks later
      // has an unknown outcome like any other.
      if (markedSending && turn.state === 'sending') this.#remember(this.#unsent, turn.id);
    } else if (begun !== null) this.#tracer?.discard(begun);
    const base = { sessionId: session.id, binding: session.binding, at: now };
    if (created) {
      this.#emit({
        ...base,
        type: 'turn.received',
        turnId: turn.id,
        kind,
        queued: session.task !== null || this.#drivers.has(session.id),
      });
      if (openedHere && this.#forgotten !== undefined)
        await noticeIfForgotten(this.#forgotten, this.#surface, (e) => this.#emit(e), session, turn.id, now);
      // A thread this write opened: a driver started now begins from the session and turn it
      // returned rather than reading both back, when nothing else can have driven them since:
      // on a store of one process, always; on a shared one, when its lease take is the
      // session's first (#drive).
      this.#kick(session.id, markedSending ? { session, open: [turn] } : undefined);
    } else {
      this.#emit({ ...base, type: 'turn.duplicate', turnId: turn.id });
    }
    return { sessionId: session.id, turnId: turn.id, duplicate: !created };
  }

  /**
   * Takes a structured answer: one per question, whoever answers first (the store keeps the
   * first by the question's key, so a second press is a duplicate, never a second decision).
   */
  async answer(input: StructuredAnswer): Promise<AnswerResult> {
    const now = this.#clock.now();
    const sessionId = sessionIdOf(input.key);
    const session = await this.#store.getSession(sessionId);
    const question = session?.question;
    if (session === undefined || !question || question.questionKey !== input.questionKey)
      return { status: 'stale', sessionId };
    if (question.closingAt !== undefined) return { status: 'closed', sessionId };
    // The question's dialect builds the agent's message from the person's reply; a reply that
    // does not fit the question is refused here (ReplyShapeError), before anything is stored.
    const dialect = this.#registry.resolve(session.binding, input.key)?.dialect;
    if (dialect?.buildReply === undefined) return { status: 'stale', sessionId };
    const built = dialect.buildReply(question.payload, input.reply);
    const chatMessageId = `decision:${question.taskId}:${question.questionKey}`;
    const id = messageIdFor(sessionId, chatMessageId, 'answer');
    const traceContext =
      this.#tracer?.begin({ turnId: id, sessionId, binding: session.binding, kind: 'answer' }) ?? null;
    const { turn, created } = await this.#addTurn(
      id,
      traceContext,
      answerTurn(
        { id, sessionId, chatMessageId, taskId: question.taskId, traceContext, now },
        {
          text: boundedText(built.text, this.#maxTextLength),
          metadata: { ...actorMetadata(input.actor), ...built.metadata },
        },
      ),
      {},
    );
    if (!created) return { status: 'duplicate', sessionId, turnId: turn.id };
    if (await closedMeanwhile(this.#store, this.#clock, sessionId, question.taskId, turn)) {
      if (traceContext !== null) this.#tracer?.discard(id);
      return { status: 'closed', sessionId };
    }
    this.#emit({
      sessionId,
      binding: session.binding,
      at: now,
      type: 'turn.received',
      turnId: turn.id,
      kind: 'answer',
      queued: false,
    });
    const decided = approvalDecided(input, sessionId, session.binding, now);
    if (decided !== undefined) this.#emit(decided);
    this.kick(sessionId);
    return { status: 'accepted', sessionId, turnId: turn.id };
  }

  /**
   * A person's stop: cancels the task running for this thread through the agent (CancelTask,
   * retried as M-4 says); nothing happens when no task runs. Any surface calls it the same way
   * (the web chat's stop button, Slack's). Resolves once the agent answered the cancel; the
   * thread is told when the task settles as canceled.
   */
  cancel(key: SessionKey, request: CancelRequest): Promise<CancelResult> {
    return cancelRunning(this.#cancelDeps(), sessionIdOf(key), key, request);
  }

  #cancelDeps(): CancelDeps {
    return {
      driver: this.#driverDeps(this.#store.sharedByReplicas),
      signal: this.#stopping.signal,
      kick: (id) => this.kick(id),
      taskEnded: (id, task) => {
        const entry = this.#drivers.get(id);
        entry?.driver?.taskEnded(task);
        return entry !== undefined;
      },
      closing: this.#closing,
    };
  }

  /**
   * Cancels, through its agent, every task still running in one workspace of a surface (a Slack
   * workspace that removed the app). Resolves when every cancel was answered.
   */
  cancelWorkspace(surface: string, workspaceId: string, reason: string): Promise<CancelResult[]> {
    return cancelWorkspaceTasks(this.#cancelDeps(), surface, workspaceId, reason);
  }

  handOver(key: SessionKey, binding: string): Promise<HandOverResult> {
    return handOverSession(this.#store, key, binding, this.#clock.now());
  }

  /** The session as stored; a question an earlier release stored without its form gets it. */
  async findSession(sessionId: string): Promise<SessionRecord | undefined> {
    const session = await this.#store.getSession(sessionId);
    const question = session?.question;
    if (session === undefined || question === null || question === undefined) return session;
    if (question.kind !== 'structured' || question.form !== undefined) return session;
    const form = this.#registry.resolve(session.binding, session.key)?.dialect.formOf?.(question.payload);
    return form === undefined ? session : { ...session, question: { ...question, form } };
  }

  findTurn(turnId: string): Promise<TurnRecord | undefined> {
    return this.#store.getTurn(turnId);
  }

  async forgottenAt(sessionId: string): Promise<number | undefined> {
    return this.#forgotten?.forgottenAt(sessionId);
  }

  claimEvent(eventKey: string): Promise<boolean> {
    return this.#store.claimInboundEvent(eventKey, this.#clock.now());
  }

  /** Makes sure the session is being driven (or will be looked at again when its driver ends). */
  kick(sessionId: string): void {
    this.#kick(sessionId, undefined);
  }

  /**
   * kick(), with what the caller knows of the session: handed to a driver it starts, never to
   * one already running (which may have moved on since; it runs again from fresh reads).
   */
  #kick(sessionId: string, first: FirstLook | undefined, mark?: string): void {
    if (this.#stopping.signal.aborted) return;
    this.#atRest.delete(sessionId); // kicked for a reason: the next scan looks at it again
    const running = this.#drivers.get(sessionId);
    if (running !== undefined) {
      running.again = true;
      return;
    }
    const controller = new AbortController();
    const entry: DriverEntry = {
      promise: Promise.resolve(),
      again: false,
      controller,
      driver: undefined,
      mark,
    };
    this.#drivers.set(sessionId, entry);
    entry.promise = this.#drive(sessionId, entry, first).finally(() => {
      this.#drivers.delete(sessionId);
      if (entry.again && !this.#stopping.signal.aborted) this.kick(sessionId);
    });
  }

  /** Resolves when no session is being driven (tests and benchmarks wait on it). */
  async idle(): Promise<void> {
    while (this.#drivers.size > 0)
      await Promise.allSettled([...this.#drivers.values()].map((d) => d.promise));
  }

  /** Looks for sessions with work and drives those that nobody drives (or whose lease expired). */
  scan(): Promise<void> {
    if (this.#scanning !== undefined) return this.#scanning;
    this.#scanning = (async () => {
      try {
        let started = 0;
        // Several replicas: a session under another replica's live lease is that replica's to
        // drive; asking for its lease would only be refused (one write per session per scan).
        const drivableBy = this.#store.sharedByReplicas
          ? { owner: this.#owner, now: this.#clock.now() }
          : undefined;
        const work = await this.#store.workToScan(drivableBy);
        const listed = new Set<string>();
        for (const { id, mark } of work) {
          if (this.#stopping.signal.aborted) return;
          listed.add(id);
          if (this.#drivers.has(id) || this.#atRest.get(id) === mark) continue;
          this.#kick(id, undefined, mark);
          if (++started % SCAN_SLICE === 0) await this.#clock.sleep(SCAN_PAUSE_MS, this.#stopping.signal);
        }
        for (const id of this.#atRest.keys()) if (!listed.has(id)) this.#atRest.delete(id);
      } catch {
        // The store is unreachable: the next scan tries again.
      } finally {
        this.#scanning = undefined;
      }
    })();
    return this.#scanning;
  }

  async #drive(sessionId: string, entry: DriverEntry, known: FirstLook | undefined): Promise<void> {
    const now = this.#clock.now();
    const leased = this.#store.sharedByReplicas;
    let held = false;
    let ranOut = false;
    let driver: SessionDriver | undefined;
    let first = known;
    try {
      if (leased) {
        const take = await this.#store.acquireLease(sessionId, this.#owner, now, this.#timings.leaseTtlMs);
        if (take === false) return;
        held = true;
        // The store answered: a lease taken now counts as renewed now.
        this.#renewedAt = Math.max(this.#renewedAt, now);
        // Held before (another replica may have driven the session since we opened it, with
        // writes only a lease allows): the driver reads it. Never held: all another replica
        // can have done is add a turn, which the release reports (seenSeq).
        if (take !== 'first') first = undefined;
      }
      // The entry's own signal is enough: stop() aborts every driver's controller as it aborts
      // #stopping, and no driver starts once it has (kick). A composite of the two signals
      // (AbortSignal.any) would cost every session weak references and a finalizer.
      const signal = entry.controller.signal;
      // Only the first run may start from what the kick knew; a run again starts from reads.
      driver = new SessionDriver(this.#driverDeps(leased), sessionId, signal, first);
      entry.driver = driver;
      do {
        entry.again = false;
        await driver.run();
      } while (entry.again && !signal.aborted);
      ranOut = true;
    } catch {
      // A store failure: the session keeps its state; the next scan or message drives it again.
    } finally {
      await driver?.drained();
      // Also when stopping: the driver and its writes are done, so nothing of ours writes after.
      if (held) {
        const waiting = await this.#store
          .releaseLease(sessionId, this.#owner, driver?.seenSeq ?? 0)
          .catch(() => false);
        // A turn another replica added while we held the lease: driven now, from fresh reads.
        // Only after a run that ended by itself; after a failure the scan comes back to it.
        if (waiting && ranOut) entry.again = true;
      }
      // At rest as the scan saw it (a run that wrote moved the mark on: one more look, then rest).
      if (ranOut && !entry.again && entry.mark !== undefined && !entry.controller.signal.aborted)
        this.#atRest.set(sessionId, entry.mark);
    }
  }

  /** One set of driver dependencies per kind of write (fenced or not), shared by every driver. */
  readonly #deps = new Map<boolean, DriverDeps>();

  #driverDeps(fenced: boolean): DriverDeps {
    let deps = this.#deps.get(fenced);
    if (deps === undefined) {
      deps = this.#newDriverDeps(fenced);
      this.#deps.set(fenced, deps);
    }
    return deps;
  }

  #newDriverDeps(fenced: boolean): DriverDeps {
    return {
      store: this.#store,
      surface: this.#surface,
      clock: this.#clock,
      events: this.#events,
      timings: this.#timings,
      maxTextLength: this.#maxTextLength,
      owner: this.#owner,
      fenced,
      resolve: (binding, key, use) => this.#registry.resolve(binding, key, use),
      wakeAt: (id, at) => this.#wakeAt(id, at),
      tracer: this.#tracer,
      firstText: this.#firstText,
      storedHere: this.#storedHere,
      unsent: this.#unsent,
      closing: this.#closing,
      unsavedRefs: this.#unsavedRefs,
    };
  }

  /** Renews the leases of driven sessions; a driver whose lease is gone stops at once. */
  async #renew(): Promise<void> {
    if (!this.#store.sharedByReplicas) return;
    const asked = this.#clock.now();
    if (this.#drivers.size === 0) {
      this.#renewedAt = asked;
      return;
    }
    // No renewal has gone through for a whole lease (the store is partitioned away, its
    // queries hang or fail): the leases are presumed lost, and another replica may already
    // drive these sessions. Stop now rather than keep talking to agents and chats for them.
    if (asked - this.#renewedAt >= this.#timings.leaseTtlMs) {
      for (const driver of this.#drivers.values()) driver.controller.abort(new Error('lease presumed lost'));
    }
    try {
      const held = new Set(await this.#store.renewLeases(this.#owner, asked, this.#timings.leaseTtlMs));
      this.#renewedAt = asked;
      for (const [id, driver] of this.#drivers) {
        if (!held.has(id)) driver.controller.abort(new Error('lease lost'));
      }
    } catch {
      // Could not renew: the drivers' fenced writes fail on their own once the lease expires.
    }
  }

  #wakeAt(sessionId: string, at: number): void {
    clearTimeout(this.#wakeups.get(sessionId));
    const timer = setTimeout(
      () => {
        this.#wakeups.delete(sessionId);
        this.kick(sessionId);
      },
      Math.max(0, at - this.#clock.now()),
    );
    timer.unref();
    this.#wakeups.set(sessionId, timer);
  }

  /** Adds a turn; a repeat drops the span begun for it (the first delivery's span stands). */
  async #addTurn(
    id: string,
    traceContext: unknown,
    turn: NewTurn,
    options: AddTurnOptions,
  ): Promise<{ turn: TurnRecord; created: boolean }> {
    try {
      const added = await this.#store.addTurn(turn, options);
      if (added.created) this.#rememberStored(id);
      else if (traceContext !== null) this.#tracer?.discard(id);
      return added;
    } catch (error) {
      if (traceContext !== null) this.#tracer?.discard(id);
      throw error;
    }
  }

  #rememberStored(turnId: string): void {
    this.#remember(this.#storedHere, turnId);
  }

  #remember(turns: Set<string>, turnId: string): void {
    turns.add(turnId);
    if (turns.size <= MAX_STORED_HERE) return;
    const oldest = turns.values().next();
    if (oldest.done !== true) turns.delete(oldest.value);
  }

  #emit(event: EngineEvent): void {
    this.#events.emit(event);
  }
}

// The engine's signatures speak these; their home is the ports (what a surface needs).
export type { AnswerResult, CancelRequest, CancelResult, Inbound, ReceiveResult, StructuredAnswer };
export { sessionIdOf };
