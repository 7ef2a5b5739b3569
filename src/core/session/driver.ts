import {
  AgentBusyError,
  AgentCallError,
  AgentThrottledError,
  AnswerRejectedError,
  CardFetchError,
  CredentialsRejectedError,
  IdentityRefusedError,
  LostConnectionError,
  MalformedResponseError,
  NoJsonRpcInterfaceError,
  NotSentError,
  OutcomeUnknownError,
  RpcError,
  SizeLimitError,
  StreamIdleError,
  StreamingNotAdvertisedError,
  TaskNotFoundError,
  UnsupportedExtensionRequiredError,
} from '../agent/errors.js';
import {
  type Artifact,
  eventIds,
  isInterrupted,
  isSettled,
  isTerminal,
  namesTaskAndContext,
  type StreamEvent,
  type TaskStatus,
} from '../agent/model.js';
import { type CarriedReply, composePersonText } from '../compose.js';
import { LeaseLostError } from '../errors.js';
import type { EngineEvent } from '../events.js';
import { type FailureCategory, failureCategory } from '../failure.js';
import type {
  AgentCallOptions,
  AgentRoute,
  ChatSurface,
  ChatTarget,
  Clock,
  EventSink,
  Notice,
  TurnTracer,
} from '../ports.js';
import type { PendingQuestion, SessionRecord, SessionStore, TurnRecord } from '../store.js';
import type { TraceContext } from '../trace.js';
import { agentRefused, notice, taskFailed } from './notices.js';
import { backoff, type EngineTimings } from './timings.js';
import { TurnRun } from './turn-run.js';

export interface DriverDeps {
  store: SessionStore;
  surface: ChatSurface;
  clock: Clock;
  events: EventSink;
  timings: EngineTimings;
  owner: string;
  /** Whether writes are fenced by the session lease (a store shared by several replicas). */
  fenced: boolean;
  /** Resolves the session's Binding to its live client; undefined when it is gone. */
  resolve(binding: string): AgentRoute | undefined;
  /** Arms a wake-up of this session at `at` (a question's deadline). */
  wakeAt(sessionId: string, at: number): void;
  /** The spans of turns; undefined: not traced (no context is passed to the agent). */
  tracer?: TurnTracer | undefined;
  /** Turns whose first answer text was counted already (shared by the engine's drivers). */
  firstText: Set<string>;
  /**
   * Answer refs the store could not record yet (it was down), by turn, kept by the engine
   * across drivers so the next driver of the turn updates the same message, not a new one.
   */
  unsavedRefs: Map<string, string>;
}

/** Thrown inside a driver when its work must stop (lease lost, engine stopping). */
class Stop extends Error {}

type StepResult = 'again' | 'idle';

/** The paused task an answer goes to. */
interface AnswerTarget {
  taskId: string;
  contextId: string;
}

/**
 * Drives one session: sends its turns one at a time, follows its task until it settles,
 * shows questions, and recovers whatever a crash left half done. One driver per session runs
 * at a time (the engine guarantees it; several replicas through the store's lease).
 *
 * Every write that guards an effect comes before the effect: a turn is marked `sending`
 * before the send, an answer clears the question before it is sent, the task is recorded as
 * soon as the agent names it.
 */
export class SessionDriver {
  readonly #deps: DriverDeps;
  readonly #sessionId: string;
  readonly #signal: AbortSignal;
  /** The session as this driver last read or wrote it. */
  #current: SessionRecord | undefined;
  /** The answer turn an auth-required task was last re-read for (T-6), so it is read once. */
  #authCheckedFor: string | null = null;
  /** Writes started on their own (answer refs), awaited by drained(). */
  readonly #background = new Set<Promise<void>>();
  /** Failed ListTasks lookups per turn, so their backoff grows (M-5). */
  readonly #lookups = new Map<string, number>();

  constructor(deps: DriverDeps, sessionId: string, signal: AbortSignal) {
    this.#deps = deps;
    this.#sessionId = sessionId;
    this.#signal = signal;
  }

  /** Resolves once the writes this driver started on their own have finished. */
  async drained(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
  }

  /** Runs steps until the session has nothing to do right now. */
  async run(): Promise<void> {
    try {
      for (;;) {
        this.#checkStop();
        if ((await this.#step()) === 'idle') return;
      }
    } catch (error) {
      if (error instanceof Stop || error instanceof LeaseLostError || this.#signal.aborted) return;
      throw error;
    }
  }

  async #step(): Promise<StepResult> {
    const { store } = this.#deps;
    const session = await store.getSession(this.#sessionId);
    this.#current = session;
    if (session === undefined) return 'idle';
    const open = await store.openTurns(session.id);
    const route = this.#deps.resolve(session.binding);
    if (route === undefined) return this.#bindingGone(session, open);

    if (session.question !== null) return this.#paused(session, open, route);
    if (session.task !== null) {
      // An answer to the paused task whose send has no known outcome (busy, dropped, a crash)
      // is settled first: it is looked for and sent again, not lost behind the paused task.
      const answering = open.find(
        (t) => t.kind === 'answer' && t.state === 'sending' && t.taskId === session.task?.taskId,
      );
      if (answering !== undefined) {
        await this.#resolveUnknown(session, route, answering);
        return 'again';
      }
      const turn = open.find((t) => t.id === session.task?.turnId) ?? null;
      await this.#follow(session, route, turn, this.#runFor(session, turn), 'recorded task');
      return 'again';
    }
    const turn = open.find((t) => t.kind !== 'context');
    if (turn === undefined) return 'idle';
    if (turn.state === 'queued') {
      if (turn.kind === 'answer') {
        // Its question is gone (answered or timed out): it is an ordinary message now.
        await this.#commit(session, [{ ...turn, kind: 'message', taskId: null }]);
        return 'again';
      }
      await this.#send(session, route, turn, open);
    } else if (turn.state === 'sending') {
      await this.#resolveUnknown(session, route, turn);
    } else {
      await this.#follow(session, route, turn, this.#runFor(session, turn), 'accepted turn');
    }
    return 'again';
  }

  // ---- paused tasks: questions (Q rows) and auth-required (T-6) ----------------------------

  async #paused(session: SessionRecord, open: TurnRecord[], route: AgentRoute): Promise<StepResult> {
    const question = session.question;
    if (question === null) return 'again';
    const { clock } = this.#deps;
    if (question.expiresAt !== null && clock.now() >= question.expiresAt) {
      await this.#cancelPaused(session, route, question, 'question-timeout');
      this.#emit(session, {
        type: 'question.timeout',
        taskId: question.taskId,
        kind: question.kind,
        approval: question.approval === true,
      });
      return 'again';
    }
    if (question.kind === 'auth') {
      const typed = open.find((t) => t.state === 'queued' && t.kind !== 'context');
      if (typed === undefined || this.#authCheckedFor === typed.id) return 'idle';
      // A typed reply makes the engine read the task again, and follow it if it moved on.
      this.#authCheckedFor = typed.id;
      const run = this.#runFor(session, null);
      run.taskId = question.taskId;
      const task = await this.#read(session, route, run, question.taskId);
      if (task === 'gone' || task.status.state === 'auth-required') return 'again';
      await this.#commit({ ...session, question: null }, []);
      return 'again';
    }
    // A structured question (kagent's) takes only a structured answer; typed messages wait
    // behind it. A text question takes the next reply in the thread.
    const reply =
      question.kind === 'structured'
        ? open.find((t) => t.state === 'queued' && t.kind === 'answer')
        : open.find(
            (t) =>
              t.state === 'queued' && (t.kind === 'message' || t.kind === 'context' || t.kind === 'answer'),
          );
    if (reply === undefined) {
      if (question.expiresAt !== null) this.#deps.wakeAt(session.id, question.expiresAt);
      return 'idle';
    }
    // the reply answers the paused task, as one text part with its own messageId. The
    // question is cleared in the same write that marks the answer sent.
    // M-2: the reply makes the engine read the paused task first. Has the agent moved on
    // (answered elsewhere, timed out, resumed by itself)? Then the reply waits behind the task
    // like any message. Otherwise what the task already shows is not shown again.
    const current = await this.#read(session, route, this.#runFor(session, null), question.taskId);
    if (current === 'gone') return 'again';
    if (current.status.state !== 'input-required') {
      await this.#commit({ ...session, question: null }, []);
      return 'again';
    }
    const answer: TurnRecord = { ...reply, kind: 'answer', taskId: question.taskId };
    this.#emit(session, { type: 'question.answered', taskId: question.taskId });
    await this.#send({ ...session, question: null }, route, answer, open, question, current.artifacts);
    return 'again';
  }

  async #cancelPaused(
    session: SessionRecord,
    route: AgentRoute,
    question: AnswerTarget,
    kind: 'question-timeout' | 'answer-rejected' | 'question-unsupported',
    turnId?: string,
  ): Promise<void> {
    await this.#cancel(session, route, question.taskId, kind);
    const fresh = (await this.#deps.store.getSession(session.id)) ?? session;
    await this.#commit({ ...fresh, question: null, task: null }, []);
    await this.#notice(session, notice(kind, turnId));
  }

  // ---- sending a turn ------------------------------------------------------------------------

  async #send(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord,
    open: TurnRecord[],
    question?: AnswerTarget,
    baseline?: readonly Artifact[],
  ): Promise<void> {
    const { clock } = this.#deps;
    // S-7: replies that did not address the broker, queued before this turn, travel with it.
    const carried =
      turn.kind === 'message' ? open.filter((t) => t.kind === 'context' && t.seq < turn.seq) : [];
    let text = turn.text;
    if (carried.length > 0) {
      const [label, ...rest] = turn.text.split('\n');
      text = composePersonText({ id: '', label: label ?? '' }, rest.join('\n'), carried.map(toCarried));
    }
    const now = clock.now();
    const sending: TurnRecord = {
      ...turn,
      text,
      state: 'sending',
      attempts: turn.attempts + 1,
      firstSentAt: turn.firstSentAt ?? now,
    };
    const settledCarried = carried.map((t) => ({
      ...t,
      state: 'settled' as const,
      outcome: `carried:${turn.id}`,
    }));
    await this.#commit(session, [sending, ...settledCarried]);
    const fresh = await this.#reload(session.id);
    await this.#attempt(fresh, route, sending, question, baseline);
  }

  /** One send of a turn already marked `sending`, and what follows from its stream. */
  async #attempt(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord,
    question?: AnswerTarget,
    baseline?: readonly Artifact[],
  ): Promise<void> {
    const { clock } = this.#deps;
    this.#emit(session, {
      type: 'turn.sending',
      turnId: turn.id,
      attempt: turn.attempts,
      contextId: session.contextId,
    });
    const run = this.#runFor(session, turn);
    if (baseline !== undefined) run.answer.setBaseline(baseline);
    const isAnswer = turn.kind === 'answer';
    const message = {
      messageId: turn.id,
      text: turn.text,
      ...(isAnswer
        ? { taskId: turn.taskId ?? '', contextId: question?.contextId ?? session.contextId ?? '' }
        : session.contextId === null
          ? {}
          : { contextId: session.contextId }),
      ...(turn.metadata === null ? {} : { metadata: turn.metadata }),
    };
    const extensions = route.dialect.messageExtensions(turn.metadata);
    if (extensions.length > 0) Object.assign(message, { extensions });
    const started = clock.now();
    let failure: unknown;
    try {
      await this.#consume(
        session,
        route,
        turn,
        run,
        (signal) => route.client.sendStreamingMessage(message, callOptions(signal, run.trace)),
        started,
      );
    } catch (error) {
      failure = error;
    }
    this.#checkStop();
    // An answer names its task before any event; only events say the agent took the send.
    if (run.taskId !== null && run.eventsSeen > 0) {
      // The agent took the turn: whatever happened to the stream, follow the task to its end,
      // unless what ended the stream ends the turn (E-1, E-2, E-4, E-5).
      const current = await this.#reload(session.id);
      const accepted = (await this.#deps.store.getTurn(turn.id)) ?? turn;
      if (failure !== undefined)
        this.#emit(session, { type: 'agent.error', turnId: turn.id, code: codeOf(failure) });
      if (
        failure instanceof AnswerRejectedError ||
        failure instanceof TaskNotFoundError ||
        failure instanceof CredentialsRejectedError ||
        failure instanceof IdentityRefusedError
      ) {
        await this.#sendFailed(current, route, accepted, failure, question);
        return;
      }
      if (failure !== undefined)
        this.#emit(session, {
          type: 'stream.lost',
          turnId: turn.id,
          taskId: run.taskId,
          code: codeOf(failure),
        });
      await this.#afterStream(current, route, accepted, run, failure !== undefined);
      return;
    }
    if (failure === undefined) {
      // a bare Message, events naming no task, or a stream that closed empty: the
      // outcome is unknown.
      failure = new OutcomeUnknownError(
        run.sawUnnamedEvents
          ? 'the agent answered without naming a task'
          : 'the agent closed the stream without any event',
      );
    }
    this.#emit(session, { type: 'agent.error', turnId: turn.id, code: codeOf(failure) });
    await this.#sendFailed(session, route, turn, failure, question);
  }

  /** A send that did not get the agent to name a task: retry, look up, or fail the turn. */
  async #sendFailed(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord,
    failure: unknown,
    question?: AnswerTarget,
  ): Promise<void> {
    const { clock, timings } = this.#deps;
    const elapsed = clock.now() - (turn.firstSentAt ?? clock.now());
    const retryAfter = failure instanceof AgentCallError ? failure.retryAfterMs : undefined;
    const wait = backoff(timings, turn.attempts - 1, retryAfter);

    if (failure instanceof CredentialsRejectedError) {
      this.#emit(session, { type: 'credentials.rejected', status: failure.status });
      return this.#failTurn(session, turn, failure.code, notice('credentials-rejected', turn.id));
    }
    if (failure instanceof IdentityRefusedError) {
      return this.#failTurn(session, turn, failure.code, notice('identity-refused', turn.id));
    }
    if (
      failure instanceof NoJsonRpcInterfaceError ||
      failure instanceof StreamingNotAdvertisedError ||
      failure instanceof UnsupportedExtensionRequiredError
    ) {
      return this.#failTurn(session, turn, failure.code, agentRefused(failure.message, turn.id));
    }
    if (failure instanceof AnswerRejectedError && question !== undefined) {
      // E-4: the paused task is cancelled and the thread told.
      await this.#settleTurn(session, turn, `error:${failure.code}`);
      await this.#cancelPaused(await this.#reload(session.id), route, question, 'answer-rejected', turn.id);
      return;
    }
    if (failure instanceof TaskNotFoundError) {
      return this.#sessionGone(session, turn, turn.taskId ?? '');
    }
    if (failure instanceof AgentBusyError || failure instanceof AgentThrottledError) {
      // E-3: sent again after a backoff, for as long as it takes; the thread is told once,
      // after 2 minutes. The notice keeps its own time: a wait longer than that (a Retry-After
      // of up to a day, E-8) is split, so the thread hears it on time, not at the next retry.
      this.#emit(session, { type: 'agent.busy', turnId: turn.id, code: failure.code, delayMs: wait });
      let told = turn;
      let waitLeft = wait;
      if (turn.busyNoticeAt === null) {
        const noticeIn = timings.busyNoticeAfterMs - elapsed;
        if (noticeIn > 0 && noticeIn < wait) {
          await this.#retryLater(session, turn, failure.code, noticeIn);
          waitLeft = wait - noticeIn;
        }
        if (noticeIn < wait) told = await this.#busyNotice(session, turn);
      }
      await this.#retryLater(session, told, failure.code, waitLeft);
      return;
    }
    if (elapsed >= timings.giveUpAfterMs) {
      // R-1, E-6, DT-2: after 15 minutes, "the agent could not be reached".
      return this.#failTurn(session, turn, codeOf(failure), notice('agent-unreachable', turn.id));
    }
    await this.#retryLater(session, turn, codeOf(failure), wait);
    // NotSent, card fetch failures: simply sent again. Unknown outcomes are looked up first,
    // which the next step does because the turn is still `sending`.
    if (failure instanceof NotSentError || failure instanceof CardFetchError) {
      const fresh = (await this.#deps.store.getTurn(turn.id)) ?? turn;
      if (fresh.state === 'sending')
        await this.#commit(await this.#reload(session.id), [{ ...fresh, state: 'queued' }]);
    }
  }

  /** E-3: tells the thread the agent is busy, once per turn; returns the turn as written. */
  async #busyNotice(session: SessionRecord, turn: TurnRecord): Promise<TurnRecord> {
    await this.#notice(session, notice('agent-busy', turn.id));
    const told = { ...turn, busyNoticeAt: this.#deps.clock.now() };
    await this.#commit(await this.#reload(session.id), [told]);
    return told;
  }

  async #retryLater(
    session: SessionRecord,
    turn: TurnRecord,
    reason: string,
    delayMs: number,
  ): Promise<void> {
    this.#emit(session, { type: 'turn.retry', turnId: turn.id, reason, delayMs });
    await this.#sleep(delayMs);
  }

  /**
   * A turn whose send may or may not have reached the agent (E-7, R-1, R-8, after a crash):
   * on 1.0 with a context, look for it with ListTasks (M-5, M-6); otherwise, or when it is not
   * found, send it again with the same messageId.
   */
  async #resolveUnknown(session: SessionRecord, route: AgentRoute, turn: TurnRecord): Promise<void> {
    const { clock, timings } = this.#deps;
    this.#emit(session, { type: 'turn.unknown', turnId: turn.id });
    if (turn.kind === 'answer' && turn.taskId !== null) {
      // An answer names its task: read it and see whether the answer arrived.
      const run = this.#runFor(session, turn);
      run.taskId = turn.taskId;
      const task = await this.#read(session, route, run, turn.taskId);
      if (task === 'gone') return;
      if (task.history.some((m) => m.messageId === turn.id) || task.status.state !== 'input-required') {
        await this.#accept(session, turn, run, turn.taskId, task.contextId, clock.now());
        return;
      }
    } else if (session.contextId !== null) {
      let found: Awaited<ReturnType<typeof route.client.findTaskByMessageId>>;
      try {
        if (await route.client.canListTasks()) {
          found = await route.client.findTaskByMessageId(
            session.contextId,
            turn.id,
            callOptions(this.#signal, this.#traceOf(session, turn)),
          );
          this.#emit(session, {
            type: 'turn.lookup',
            turnId: turn.id,
            result: found === undefined ? 'absent' : 'found',
          });
        } else {
          this.#emit(session, { type: 'turn.lookup', turnId: turn.id, result: 'unsupported' });
        }
      } catch (error) {
        this.#checkStop();
        this.#emit(session, { type: 'turn.lookup', turnId: turn.id, result: 'failed' });
        // M-5: the lookup is retried, then the turn fails after 15 minutes.
        const elapsed = clock.now() - (turn.firstSentAt ?? clock.now());
        if (elapsed >= timings.giveUpAfterMs) {
          return this.#failTurn(session, turn, codeOf(error), notice('agent-unreachable', turn.id));
        }
        if (error instanceof CredentialsRejectedError || error instanceof IdentityRefusedError)
          return this.#sendFailed(session, route, turn, error);
        const lookups = (this.#lookups.get(turn.id) ?? 0) + 1;
        this.#lookups.set(turn.id, lookups);
        const retryAfter = error instanceof AgentCallError ? error.retryAfterMs : undefined;
        await this.#retryLater(
          session,
          turn,
          `lookup:${codeOf(error)}`,
          backoff(timings, lookups, retryAfter),
        );
        return;
      }
      if (found !== undefined) {
        this.#emit(session, { type: 'turn.found', turnId: turn.id, taskId: found.id });
        const run = this.#runFor(session, turn);
        await this.#accept(session, turn, run, found.id, found.contextId, clock.now());
        return;
      }
    }
    const elapsed = clock.now() - (turn.firstSentAt ?? clock.now());
    if (elapsed >= timings.giveUpAfterMs) {
      return this.#failTurn(session, turn, 'outcome_unknown', notice('agent-unreachable', turn.id));
    }
    // sent again with the same messageId.
    const again: TurnRecord = { ...turn, attempts: turn.attempts + 1 };
    await this.#commit(session, [again]);
    this.#emit(session, { type: 'turn.resent', turnId: turn.id, attempt: again.attempts });
    const question: AnswerTarget | undefined =
      turn.kind === 'answer' && turn.taskId !== null
        ? { taskId: turn.taskId, contextId: session.contextId ?? '' }
        : undefined;
    await this.#attempt(await this.#reload(session.id), route, again, question);
  }

  // ---- reading streams -----------------------------------------------------------------------

  /** Reads a send or subscribe stream into the run. Errors propagate to the caller. */
  async #consume(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord | null,
    run: TurnRun,
    open: (signal: AbortSignal) => AsyncGenerator<StreamEvent>,
    started: number,
  ): Promise<void> {
    const { clock, timings } = this.#deps;
    run.resetStream();
    // Our own cut, apart from the engine's stop: after a settled status the stream is not
    // waited for longer than the settle delay.
    const cut = new AbortController();
    let graceTimer: NodeJS.Timeout | undefined;
    const stream = open(AbortSignal.any([this.#signal, cut.signal]));
    try {
      for await (const event of stream) {
        run.eventsSeen++;
        const now = clock.now();
        if (turn !== null) this.#emit(session, { type: 'agent.event', turnId: turn.id, kind: event.kind });
        if (!namesTaskAndContext(event)) {
          run.sawUnnamedEvents = true;
          continue;
        }
        const ids = eventIds(event);
        if (run.taskId === null && turn !== null) {
          await this.#accept(session, turn, run, ids.taskId, ids.contextId, started);
        } else if (ids.taskId !== run.taskId) {
          continue; // Another task's event has nothing to say about this turn.
        }
        run.lastActivityAt = now;
        for (const step of route.dialect.toolSteps(event)) {
          if (turn !== null)
            await this.#deps.surface
              .showToolStep(this.#target(session), turn.id, step)
              .catch(() => undefined);
        }
        if (event.kind === 'artifact-update') {
          if (run.answer.apply(event)) {
            run.sink?.update(run.answer);
            this.#noteText(session, run);
          }
        } else if (event.kind === 'task') {
          run.takeTask(event.task, now);
          this.#noteText(session, run);
          // The snapshot that opens the stream of an answer still shows the question it
          // answers (the JS SDK sends it): that is the past, not a new pause.
          const stale =
            run.eventsSeen === 1 && this.#answeredQuestion(session, route, turn, event.task.status);
          if (isSettled(event.task.status.state) && !stale) {
            run.settledTask = event.task;
            return;
          }
        } else if (event.kind === 'status-update') {
          run.state = event.status.state;
          run.status = event.status;
          if (isSettled(event.status.state)) {
            run.settledStatus = event.status;
            // Some agents send the full Task next, most close the stream; an agent that does
            // neither is not waited for longer than the settle delay.
            if (graceTimer === undefined) {
              graceTimer = setTimeout(
                () => cut.abort(new Error('settled; not waiting for the stream to close')),
                timings.settleDelayMs,
              );
            }
          }
        }
      }
    } catch (error) {
      // A stream we cut after it said the task settled ended as it should.
      if (cut.signal.aborted && !this.#signal.aborted) return;
      throw error;
    } finally {
      clearTimeout(graceTimer);
    }
  }

  /** The agent named the task: record it before anything else happens. */
  async #accept(
    session: SessionRecord,
    turn: TurnRecord,
    run: TurnRun,
    taskId: string,
    contextId: string,
    started: number,
  ): Promise<void> {
    const { clock } = this.#deps;
    const fresh = await this.#reload(session.id);
    if (fresh.contextId !== null && fresh.contextId !== contextId && contextId !== '') {
      // a different context: the thread is told, and the new context is kept.
      this.#emit(session, { type: 'context.changed' });
      await this.#notice(session, notice('context-changed', turn.id));
    }
    run.taskId = taskId;
    run.contextId = contextId;
    const now = clock.now();
    await this.#commit(
      {
        ...fresh,
        contextId: contextId === '' ? fresh.contextId : contextId,
        task: {
          taskId,
          turnId: turn.id,
          state: run.state ?? 'submitted',
          lastActivityAt: now,
          streamLostAt: null,
        },
      },
      [{ ...turn, state: 'accepted', taskId }],
    );
    this.#emit(session, {
      type: 'turn.accepted',
      turnId: turn.id,
      taskId,
      contextId,
      latencyMs: now - started,
    });
  }

  // ---- following a task ----------------------------------------------------------------------

  /** After a stream: settle from what it said, or read the task and follow it. */
  async #afterStream(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord,
    run: TurnRun,
    failed: boolean,
  ): Promise<void> {
    if (run.settledTask !== null) {
      await this.#settle(session, route, turn, run, run.settledTask.status);
      return;
    }
    if (run.settledStatus !== null && !failed) {
      // The SDKs close a finished stream right after the terminal status: read the task at
      // once rather than waiting a second, and fall back to following it if it is not settled.
      const task = await this.#read(session, route, run, run.taskId ?? '');
      if (task === 'gone') return;
      if (isSettled(task.status.state)) {
        await this.#settle(session, route, turn, run, task.status);
        return;
      }
    } else if (!failed) {
      await this.#sleep(this.#deps.timings.settleDelayMs);
    }
    await this.#follow(
      await this.#reload(session.id),
      route,
      turn,
      run,
      failed ? 'stream lost' : 'stream ended unsettled',
    );
  }

  /**
   * M-2, M-3, R-5, R-6: read the task with GetTask; while it runs, subscribe to it; without
   * SubscribeToTask, poll with a backoff up to a minute. A task with no sign of life for an
   * hour after its stream was lost is cancelled (M-4).
   */
  async #follow(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord | null,
    run: TurnRun,
    reason: string,
  ): Promise<void> {
    const { clock, timings } = this.#deps;
    const taskId = run.taskId ?? session.task?.taskId ?? null;
    if (taskId === null) return;
    run.taskId = taskId;
    this.#emit(session, { type: 'task.followed', taskId, reason });
    let canSubscribe = true;
    for (let attempt = 0; ; attempt++) {
      this.#checkStop();
      if (!canSubscribe) this.#emit(session, { type: 'task.polled', taskId });
      const task = await this.#read(session, route, run, taskId);
      if (task === 'gone') return;
      // After an answer, a task that still shows the question answered has not read it yet.
      const stale = this.#answeredQuestion(session, route, turn, task.status);
      if ((isSettled(task.status.state) && !stale) || task.status.state === 'unknown') {
        await this.#settle(await this.#reload(session.id), route, turn, run, task.status);
        return;
      }
      if (clock.now() - run.lastActivityAt >= timings.noSignOfLifeMs) {
        await this.#cancel(session, route, taskId, 'no-sign-of-life', run.trace);
        const after = await this.#read(session, route, run, taskId);
        if (after === 'gone') return;
        await this.#settle(
          await this.#reload(session.id),
          route,
          turn,
          run,
          isSettled(after.status.state) ? after.status : { state: 'canceled' },
        );
        return;
      }
      if (canSubscribe) {
        try {
          this.#emit(session, { type: 'task.resubscribed', taskId });
          await this.#consume(
            session,
            route,
            turn,
            run,
            (signal) => route.client.subscribeToTask(taskId, callOptions(signal, run.trace)),
            clock.now(),
          );
          if (run.settledTask !== null) {
            await this.#settle(await this.#reload(session.id), route, turn, run, run.settledTask.status);
            return;
          }
          if (run.settledStatus !== null) continue; // read it back at once
        } catch (error) {
          this.#checkStop();
          if (error instanceof TaskNotFoundError) {
            await this.#sessionGone(session, turn, taskId);
            return;
          }
          if (error instanceof CredentialsRejectedError || error instanceof IdentityRefusedError) {
            await this.#taskRefused(session, taskId, error);
            return;
          }
          // M-3: without SubscribeToTask, live text stops and the task is polled.
          if (error instanceof RpcError && error.isUnsupported) canSubscribe = false;
          else
            this.#emit(session, {
              type: 'stream.lost',
              turnId: turn?.id ?? null,
              taskId,
              code: codeOf(error),
            });
        }
      }
      await this.#sleep(canSubscribe ? timings.settleDelayMs : backoff(timings, attempt));
    }
  }

  /** Whether a status is the question an answer turn answered (Q-1: the last question's key). */
  #answeredQuestion(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord | null,
    status: TaskStatus,
  ): boolean {
    if (turn?.kind !== 'answer' || status.state !== 'input-required' || session.lastQuestionKey === null)
      return false;
    const reading = route.dialect.readPause(status, null);
    return reading.kind === 'question' && reading.question.key === session.lastQuestionKey;
  }

  /** GetTask with retries; 'gone' when the agent no longer knows the task (E-5). */
  async #read(session: SessionRecord, route: AgentRoute, run: TurnRun, taskId: string) {
    const { clock, timings } = this.#deps;
    for (let attempt = 0; ; attempt++) {
      this.#checkStop();
      try {
        const task = await route.client.getTask(taskId, callOptions(this.#signal, run.trace));
        run.takeTask(task, clock.now());
        this.#noteText(session, run);
        return task;
      } catch (error) {
        this.#checkStop();
        if (error instanceof TaskNotFoundError) {
          const turn = run.taskId === null ? null : await this.#turnOfTask(session, taskId);
          await this.#sessionGone(await this.#reload(session.id), turn, taskId);
          return 'gone' as const;
        }
        if (error instanceof CredentialsRejectedError || error instanceof IdentityRefusedError) {
          // E-1, E-2: at any call, the turn fails without a retry.
          await this.#taskRefused(session, taskId, error);
          return 'gone' as const;
        }
        if (clock.now() - run.lastActivityAt >= timings.noSignOfLifeMs) {
          // Every read failing for as long as a task may go quiet: the agent is not coming back
          // for this task. The turn fails rather than waiting for ever (M-4's hour).
          await this.#taskUnreachable(session, taskId, codeOf(error));
          return 'gone' as const;
        }
        const retryAfter = error instanceof AgentCallError ? error.retryAfterMs : undefined;
        await this.#sleep(backoff(timings, attempt, retryAfter));
      }
    }
  }

  async #turnOfTask(session: SessionRecord, taskId: string): Promise<TurnRecord | null> {
    const open = await this.#deps.store.openTurns(session.id);
    return open.find((t) => t.taskId === taskId) ?? null;
  }

  // ---- settling --------------------------------------------------------------------------------

  /** T rows: what each final or paused state means for the thread. */
  async #settle(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord | null,
    run: TurnRun,
    status: TaskStatus,
  ): Promise<void> {
    const state = status.state;
    const taskId = run.taskId ?? session.task?.taskId ?? '';
    if (run.sink !== null) await run.sink.finish(run.answer).catch(() => undefined);
    if (isInterrupted(state)) {
      await this.#pause(session, route, turn, run, status, taskId);
      return;
    }
    const outcome = isTerminal(state) ? state : 'failed';
    let message: Notice | undefined;
    let category: FailureCategory | undefined;
    if (outcome === 'completed') {
      if (run.answer.length === 0) message = notice('no-output', turn?.id); // R-4, T-2
    } else if (outcome === 'failed') {
      category = failureCategory(status);
      message = taskFailed(category, turn?.id); // T-3, T-7, E-10
    } else if (outcome === 'rejected') {
      message = notice('task-rejected', turn?.id);
    } else {
      message = notice('task-canceled', turn?.id);
    }
    await this.#commit(
      { ...session, task: null, question: null },
      turn === null ? [] : [{ ...turn, state: 'settled', outcome, taskId }],
    );
    if (message !== undefined) await this.#notice(session, message);
    if (turn !== null) this.#settledEvent(session, turn, outcome, run, category);
  }

  async #pause(
    session: SessionRecord,
    route: AgentRoute,
    turn: TurnRecord | null,
    run: TurnRun,
    status: TaskStatus,
    taskId: string,
  ): Promise<void> {
    const { clock } = this.#deps;
    const now = clock.now();
    const contextId = run.contextId ?? session.contextId ?? '';
    const task = session.task ?? {
      taskId,
      turnId: turn?.id ?? '',
      state: status.state,
      lastActivityAt: now,
      streamLostAt: null,
    };
    const turns =
      turn === null ? [] : [{ ...turn, state: 'settled' as const, outcome: status.state, taskId }];
    if (status.state === 'auth-required') {
      // T-6: paused with no prompt and no timeout; later replies wait behind it.
      const question: PendingQuestion = {
        taskId,
        contextId,
        kind: 'auth',
        questionKey: '',
        askedAt: now,
        expiresAt: null,
        promptRef: null,
        payload: null,
      };
      await this.#commit({ ...session, task: { ...task, state: status.state }, question }, turns);
      if (turn !== null) this.#settledEvent(session, turn, status.state, run);
      return;
    }
    const reading = route.dialect.readPause(status, session.lastQuestionKey);
    // anything else in input-required cannot be shown; M-4/Q-5: nor can a tool approval
    // on a Binding that does not allow them. Either way the task is cancelled and the thread told.
    const refusal =
      reading.kind === 'unsupported'
        ? ('question-unsupported' as const)
        : reading.question.approval === true && route.settings.toolApprovalsEnabled === false
          ? ('approval-not-allowed' as const)
          : undefined;
    if (refusal !== undefined) {
      await this.#commit({ ...session, task: { ...task, state: status.state } }, turns);
      if (turn !== null) this.#settledEvent(session, turn, status.state, run);
      await this.#cancel(session, route, taskId, refusal, run.trace);
      await this.#commit({ ...(await this.#reload(session.id)), task: null, question: null }, []);
      await this.#notice(session, notice(refusal, turn?.id));
      return;
    }
    if (reading.kind !== 'question') return;
    const timeout = route.settings.questionTimeoutMs;
    const question: PendingQuestion = {
      taskId,
      contextId,
      kind: reading.question.kind,
      questionKey: reading.question.key,
      askedAt: now,
      expiresAt: timeout === null ? null : now + timeout,
      promptRef: null,
      payload: reading.question.payload ?? null,
      ...(reading.question.approval === true ? { approval: true } : {}),
    };
    // The question is recorded before it is shown: a reply that races the prompt finds it.
    await this.#commit(
      { ...session, task: { ...task, state: status.state }, question, lastQuestionKey: question.questionKey },
      turns,
    );
    if (turn !== null) this.#settledEvent(session, turn, status.state, run);
    this.#emit(session, {
      type: 'question.asked',
      taskId,
      kind: question.kind,
      approval: question.approval === true,
    });
    const ref = await this.#deps.surface
      .askQuestion(this.#target(session), { turnId: turn?.id ?? '', taskId, question: reading.question })
      .catch(() => null);
    if (ref !== null) {
      const fresh = await this.#reload(session.id);
      if (fresh.question?.taskId === taskId)
        await this.#commit({ ...fresh, question: { ...fresh.question, promptRef: ref } }, []);
    }
    if (question.expiresAt !== null) this.#deps.wakeAt(session.id, question.expiresAt);
  }

  /** M-4: a few tries, then reported as failed; a failed cancel reads the task (M-2). */
  async #cancel(
    session: SessionRecord,
    route: AgentRoute,
    taskId: string,
    reason: string,
    trace?: TraceContext,
  ): Promise<boolean> {
    const { timings } = this.#deps;
    for (let attempt = 0; attempt < timings.cancelAttempts; attempt++) {
      this.#checkStop();
      try {
        await route.client.cancelTask(taskId, callOptions(this.#signal, trace));
        this.#emit(session, { type: 'task.cancel', taskId, reason, ok: true });
        return true;
      } catch (error) {
        this.#checkStop();
        if (error instanceof TaskNotFoundError) {
          // The agent no longer has the task: nothing is left running to cancel.
          this.#emit(session, { type: 'task.cancel', taskId, reason, ok: true });
          return true;
        }
        if (error instanceof CredentialsRejectedError || error instanceof IdentityRefusedError) {
          // E-1, E-2: not retried; reported as failed below.
          if (error instanceof CredentialsRejectedError)
            this.#emit(session, { type: 'credentials.rejected', status: error.status });
          break;
        }
        if (attempt + 1 < timings.cancelAttempts) await this.#sleep(backoff(timings, attempt));
      }
    }
    try {
      const task = await route.client.getTask(taskId, callOptions(this.#signal, trace));
      if (isTerminal(task.status.state)) {
        this.#emit(session, { type: 'task.cancel', taskId, reason, ok: true });
        return true;
      }
    } catch {
      // Reported below.
    }
    this.#emit(session, { type: 'task.cancel', taskId, reason, ok: false });
    await this.#notice(session, notice('cancel-failed'));
    return false;
  }

  /** E-5: the agent no longer knows the task: the thread is told, the next turn starts fresh. */
  async #sessionGone(session: SessionRecord, turn: TurnRecord | null, taskId: string): Promise<void> {
    this.#emit(session, { type: 'session.gone', taskId });
    const turns =
      turn === null ? [] : [{ ...turn, state: 'settled' as const, outcome: 'error:task_not_found' }];
    await this.#commit({ ...session, contextId: null, task: null, question: null }, turns);
    await this.#notice(session, notice('session-gone', turn?.id));
    if (turn !== null) {
      this.#emit(session, {
        type: 'turn.settled',
        turnId: turn.id,
        outcome: 'error:task_not_found',
        taskId: taskId === '' ? null : taskId,
        durationMs: this.#deps.clock.now() - turn.createdAt,
        answerLength: 0,
      });
    }
  }

  async #failTurn(session: SessionRecord, turn: TurnRecord, code: string, message: Notice): Promise<void> {
    const fresh = await this.#reload(session.id);
    // A turn the agent refused outright (E-1, E-2) leaves no task to follow: the next turn
    // must not wait behind one this identity cannot reach.
    const refused = code === 'credentials_rejected' || code === 'identity_refused';
    await this.#commit(refused ? { ...fresh, task: null, question: null } : fresh, [
      { ...turn, state: 'settled', outcome: `error:${code}` },
    ]);
    await this.#notice(session, message);
    this.#failedEvent(session, turn, `error:${code}`);
  }

  #failedEvent(session: SessionRecord, turn: TurnRecord, outcome: string): void {
    this.#emit(session, {
      type: 'turn.settled',
      turnId: turn.id,
      outcome,
      taskId: turn.taskId,
      durationMs: this.#deps.clock.now() - turn.createdAt,
      answerLength: 0,
    });
  }

  /** E-1, E-2 while a task is followed: the task is let go and its turn fails, told once. */
  async #taskRefused(
    session: SessionRecord,
    taskId: string,
    error: CredentialsRejectedError | IdentityRefusedError,
  ): Promise<void> {
    if (error instanceof CredentialsRejectedError)
      this.#emit(session, { type: 'credentials.rejected', status: error.status });
    const kind = error instanceof CredentialsRejectedError ? 'credentials-rejected' : 'identity-refused';
    await this.#letTaskGo(session, taskId, error.code, kind);
  }

  /** Reads of a task failed for as long as a task may show no sign of life: its turn fails. */
  async #taskUnreachable(session: SessionRecord, taskId: string, code: string): Promise<void> {
    await this.#letTaskGo(session, taskId, code, 'agent-unreachable');
  }

  async #letTaskGo(
    session: SessionRecord,
    taskId: string,
    code: string,
    kind: 'credentials-rejected' | 'identity-refused' | 'agent-unreachable',
  ): Promise<void> {
    const fresh = await this.#reload(session.id);
    const turn = await this.#turnOfTask(fresh, taskId);
    const owned = fresh.task?.taskId === taskId || fresh.question?.taskId === taskId;
    await this.#commit(
      owned ? { ...fresh, task: null, question: null } : fresh,
      turn === null ? [] : [{ ...turn, state: 'settled', outcome: `error:${code}` }],
    );
    await this.#notice(session, notice(kind, turn?.id));
    if (turn !== null) this.#failedEvent(session, turn, `error:${code}`);
  }

  async #settleTurn(session: SessionRecord, turn: TurnRecord, outcome: string): Promise<void> {
    await this.#commit(await this.#reload(session.id), [{ ...turn, state: 'settled', outcome }]);
    this.#emit(session, {
      type: 'turn.settled',
      turnId: turn.id,
      outcome,
      taskId: turn.taskId,
      durationMs: this.#deps.clock.now() - turn.createdAt,
      answerLength: 0,
    });
  }

  async #bindingGone(session: SessionRecord, open: TurnRecord[]): Promise<StepResult> {
    const waiting = open.filter((t) => t.kind !== 'context');
    if (waiting.length === 0 && session.task === null && session.question === null) return 'idle';
    await this.#commit(
      { ...session, task: null, question: null },
      open.map((t) => ({ ...t, state: 'settled' as const, outcome: 'error:binding_removed' })),
    );
    // Replies carried as context were never turns of their own: only the waiting ones settle.
    for (const turn of waiting) {
      this.#emit(session, {
        type: 'turn.settled',
        turnId: turn.id,
        outcome: 'error:binding_removed',
        taskId: turn.taskId,
        durationMs: this.#deps.clock.now() - turn.createdAt,
        answerLength: 0,
      });
    }
    if (waiting.length > 0) await this.#notice(session, notice('binding-removed'));
    return 'idle';
  }

  // ---- plumbing ------------------------------------------------------------------------------

  #runFor(session: SessionRecord, turn: TurnRecord | null): TurnRun {
    const run = new TurnRun(
      turn?.taskId ?? session.task?.taskId ?? null,
      session.contextId,
      this.#deps.clock.now(),
    );
    if (session.task !== null) run.lastActivityAt = session.task.lastActivityAt;
    if (turn !== null) {
      run.turnId = turn.id;
      run.receivedAt = turn.createdAt;
      run.trace = this.#traceOf(session, turn);
    }
    if (turn !== null && turn.kind !== 'context') {
      const unsaved = this.#deps.unsavedRefs.get(turn.id);
      if (turn.answerRef === null && unsaved !== undefined) this.#saveInBackground(turn.id, unsaved);
      run.sink = this.#deps.surface.openAnswer(
        this.#target(session),
        turn.id,
        turn.answerRef ?? unsaved ?? null,
        (ref) => this.#saveInBackground(turn.id, ref),
      );
    }
    return run;
  }

  /** Saves an answer ref on its own; drained() awaits it. */
  #saveInBackground(turnId: string, ref: string): void {
    const write = this.#saveAnswerRef(turnId, ref).finally(() => this.#background.delete(write));
    this.#background.add(write);
  }

  async #saveAnswerRef(turnId: string, ref: string): Promise<void> {
    // Written on its own, so it never races the driver's writes of the session or the turn.
    // A store that is down keeps it unsaved, for this turn's next driver and a later save.
    try {
      await this.#deps.store.setAnswerRef(turnId, ref, this.#deps.clock.now());
      this.#deps.unsavedRefs.delete(turnId);
    } catch {
      this.#deps.unsavedRefs.set(turnId, ref);
    }
  }

  #settledEvent(
    session: SessionRecord,
    turn: TurnRecord,
    outcome: string,
    run: TurnRun,
    category?: string,
  ): void {
    this.#emit(session, {
      type: 'turn.settled',
      turnId: turn.id,
      outcome,
      ...(category === undefined ? {} : { category }),
      taskId: run.taskId ?? turn.taskId,
      durationMs: this.#deps.clock.now() - turn.createdAt,
      answerLength: run.answer.length,
    });
  }

  async #commit(session: SessionRecord, turns: TurnRecord[]): Promise<SessionRecord> {
    const written = await this.#deps.store.commit({
      session,
      turns,
      now: this.#deps.clock.now(),
      ...(this.#deps.fenced ? { fence: { owner: this.#deps.owner } } : {}),
    });
    this.#current = written ?? undefined;
    return written ?? session;
  }

  /**
   * The session as last written. While this driver holds the lease it is the only writer of the
   * session row (writes are fenced), so what it wrote last is what the store holds; each step
   * still starts from a fresh read.
   */
  async #reload(sessionId: string): Promise<SessionRecord> {
    if (this.#current !== undefined && this.#current.id === sessionId) return this.#current;
    const session = await this.#deps.store.getSession(sessionId);
    if (session === undefined) throw new Stop('session vanished');
    this.#current = session;
    return session;
  }

  async #notice(session: SessionRecord, message: Notice): Promise<void> {
    this.#emit(session, { type: 'notice.posted', kind: message.kind });
    await this.#deps.surface.postNotice(this.#target(session), message).catch(() => undefined);
  }

  #target(session: SessionRecord): ChatTarget {
    return { sessionId: session.id, key: session.key };
  }

  #emit(session: SessionRecord, event: DistributiveOmit<EngineEvent, 'sessionId' | 'binding' | 'at'>): void {
    if (event.type === 'turn.settled') {
      this.#deps.tracer?.end(event.turnId, event.outcome);
      this.#deps.firstText.delete(event.turnId);
    }
    this.#deps.events.emit({
      ...event,
      sessionId: session.id,
      binding: session.binding,
      at: this.#deps.clock.now(),
    } as EngineEvent);
  }

  /** The context a turn's agent calls go under (none when the engine is not traced). */
  #traceOf(session: SessionRecord, turn: TurnRecord): TraceContext | undefined {
    const tracer = this.#deps.tracer;
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
  #noteText(session: SessionRecord, run: TurnRun): void {
    if (run.textSeen || run.turnId === null) return;
    if (run.answer.length === 0) return;
    run.textSeen = true;
    const seen = this.#deps.firstText;
    if (seen.has(run.turnId)) return;
    // Bounded: entries leave when their turn settles; a replica that loses many sessions to
    // another one forgets them all rather than grow.
    if (seen.size >= 10_000) seen.clear();
    seen.add(run.turnId);
    this.#emit(session, {
      type: 'answer.started',
      turnId: run.turnId,
      latencyMs: this.#deps.clock.now() - run.receivedAt,
    });
  }

  async #sleep(ms: number): Promise<void> {
    try {
      await this.#deps.clock.sleep(ms, this.#signal);
    } catch {
      throw new Stop('stopped while waiting');
    }
  }

  #checkStop(): void {
    if (this.#signal.aborted) throw new Stop('stopped');
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function callOptions(signal: AbortSignal, trace: TraceContext | undefined): AgentCallOptions {
  return trace === undefined ? { signal } : { signal, trace };
}

function toCarried(turn: TurnRecord): CarriedReply {
  const [label, ...rest] = turn.text.split('\n');
  return { label: label ?? '', text: rest.join('\n') };
}

function codeOf(error: unknown): string {
  if (error instanceof AgentCallError) return error.code;
  if (error instanceof LostConnectionError || error instanceof StreamIdleError) return 'lost_connection';
  if (error instanceof MalformedResponseError || error instanceof SizeLimitError) return 'malformed_response';
  return 'error';
}
