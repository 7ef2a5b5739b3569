// Slightly over our ~400-line rule: following a task has four ways (stream, SubscribeToTask,
// GetTask, polling) over the same reads and deadlines; the pure choices live in failure-policy.ts.
import {
  contextIdOf,
  isSettled,
  namesTaskAndContext,
  type StreamEvent,
  type Task,
  type TaskStatus,
  taskIdOf,
} from '../agent/model.js';
import type { AgentRoute, PollingSettings, ReadyEvents } from '../ports.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import { callOptions, type DriverContext } from './context.js';
import { afterReadFailure, afterSubscribeFailure, nextPoll } from './failure-policy.js';
import { notice } from './notices.js';
import { cancelTask, sessionGone, settle, taskRefused, taskUnreachable } from './settling.js';
import { backoff } from './timings.js';
import type { TurnRun } from './turn-run.js';

/**
 * Following a task the agent named: reading a send's or a subscription's stream into the turn's
 * run, recording the task the moment it is named, and after a stream, following the task
 * to its end with GetTask and SubscribeToTask, or by polling (M-2, M-3, R-5, R-6).
 */

/**
 * Reads a send or subscribe stream into the run. Errors propagate to the caller.
 *
 * The task a send's stream names is recorded at once, and the stream is read on while that
 * write goes to disk: what arrives meanwhile is taken into the run (pure state), but nothing of
 * it reaches the thread — no answer update, no tool step — and the stream is not left, until
 * the write is durable. So the write still comes before every effect it guards, and the stream
 * does not stand still for a group commit and its fsync (a stalled stream's bytes pile up in
 * its body and are copied together, and what the turn holds lives through more collections).
 */
export async function consumeStream(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord | null,
  run: TurnRun,
  open: (signal: AbortSignal) => AsyncGenerator<StreamEvent>,
  started: number,
): Promise<void> {
  const { clock, timings } = ctx.deps;
  run.resetStream();
  // Our own cut, apart from the engine's stop: after a settled status the stream is not
  // waited for longer than the settle delay. The driver's signal cuts it too, through a
  // listener removed when the stream ends (cheaper per stream than AbortSignal.any, which keeps
  // weak references and a finalizer for every signal it makes).
  const cut = new AbortController();
  const stop = (): void => cut.abort(ctx.signal.reason);
  if (ctx.signal.aborted) stop();
  else ctx.signal.addEventListener('abort', stop, { once: true });
  let graceTimer: NodeJS.Timeout | undefined;
  const stream = open(cut.signal);
  // Events the stream already holds are taken without a promise (ReadyEvents); a stream that
  // cannot hand them over so is only awaited.
  const ready =
    (stream as Partial<ReadyEvents>).takeReady === undefined ? undefined : (stream as unknown as ReadyEvents);
  // Whether the stream is still open and must be told we left it (what `for await` does on a
  // return or a throw from its body; not after the stream itself ended or failed).
  let reading = true;
  // The task's record on its way to disk (undefined once it is there), and an answer update
  // held back until it is: shown by whichever comes first, the write's end (while the stream
  // is quiet) or the loop's next look.
  const accept = new PendingAccept(run);
  try {
    // The loop runs for every event of a stream (thousands per answer): it allocates nothing of
    // its own beyond the event it emits.
    for (;;) {
      accept.check();
      let event = ready?.takeReady();
      if (event === undefined) {
        reading = false;
        const step = await stream.next();
        if (step.done === true) break;
        reading = true;
        event = step.value;
        accept.check();
      }
      run.eventsSeen++;
      const now = clock.now();
      if (turn !== null) ctx.emitAgentEvent(session, turn.id, event.kind, now);
      if (!namesTaskAndContext(event)) {
        run.sawUnnamedEvents = true;
        continue;
      }
      const taskId = taskIdOf(event);
      if (run.taskId === null && turn !== null) {
        const contextId = contextIdOf(event);
        const current = ctx.current;
        if (current !== undefined && current.id === session.id && !changesContext(current, contextId)) {
          accept.begin(recordTask(ctx, current, turn, run, { taskId, contextId, started }));
        } else {
          await acceptTask(ctx, session, turn, run, taskId, contextId, started);
        }
      } else if (taskId !== run.taskId) {
        continue; // Another task's event has nothing to say about this turn.
      }
      run.lastActivityAt = now;
      const steps = route.dialect.toolSteps(event);
      if (steps.length > 0 && turn !== null) {
        await accept.durable();
        for (const step of steps)
          await ctx.deps.surface.showToolStep(ctx.target(session), turn.id, step).catch(() => undefined);
      }
      if (event.kind === 'artifact-update') {
        if (run.answer.apply(event)) {
          accept.show();
          ctx.noteText(session, run);
        }
      } else if (event.kind === 'task') {
        if (run.takeTask(event.task, now, false)) accept.show();
        ctx.noteText(session, run);
        // The snapshot that opens the stream of an answer still shows the question it
        // answers (the JS SDK sends it): that is the past, not a new pause.
        const stale = run.eventsSeen === 1 && answeredQuestion(session, route, turn, event.task.status);
        if (isSettled(event.task.status.state) && !stale) {
          run.settledTask = event.task;
          await accept.durable();
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
    await accept.durable();
  } catch (error) {
    // Left on an error of our own: the stream is told, and what its return() throws is dropped
    // (the error we leave with is the one that counts), as `for await` does.
    if (reading) {
      reading = false;
      await stream.return(undefined).catch(() => undefined);
    }
    // The task's record is not left behind: nothing after this stream writes before it is
    // done, and a record that failed is what the caller hears of (the stream's own end came
    // after the write was asked for).
    await accept.durable();
    // A stream we cut after it said the task settled ended as it should.
    if (cut.signal.aborted && !ctx.signal.aborted) return;
    throw error;
  } finally {
    if (reading) await stream.return(undefined);
    clearTimeout(graceTimer);
    ctx.signal.removeEventListener('abort', stop);
  }
}

/**
 * The task's record, written while its stream is read on (consumeStream): whether it is still
 * on its way, how it failed if it did, and the answer update held back meanwhile.
 */
class PendingAccept {
  readonly #run: TurnRun;
  #writing: Promise<void> | undefined;
  #failed = false;
  #failure: unknown;
  /** The answer changed while the record was on its way: the update it would have had. */
  #held = false;

  constructor(run: TurnRun) {
    this.#run = run;
  }

  begin(write: Promise<void>): void {
    // Never rejects: a failure, of the write or of the held update's showing, is kept for the
    // reader, who throws it at its next look (nothing may be left to reject unheard).
    this.#writing = write.then(
      () => {
        this.#writing = undefined;
        try {
          this.#release();
        } catch (error) {
          this.#fail(error);
        }
      },
      (error: unknown) => this.#fail(error),
    );
  }

  /** The answer changed: shown now, or once the record is durable. */
  show(): void {
    if (this.#writing === undefined && !this.#failed) this.#run.sink?.update(this.#run.answer);
    else this.#held = true;
  }

  /** Throws the record's failure, if it failed. */
  check(): void {
    if (this.#failed) throw this.#failure;
  }

  /** Waits until the record is durable (nothing to wait for when none was begun); throws its failure. */
  async durable(): Promise<void> {
    if (this.#writing !== undefined) await this.#writing;
    this.check();
  }

  #fail(error: unknown): void {
    this.#failed = true;
    this.#failure = error;
  }

  #release(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#run.sink?.update(this.#run.answer);
  }
}

/** the agent named another context than the one the thread has. */
function changesContext(session: SessionRecord, contextId: string): boolean {
  return session.contextId !== null && session.contextId !== contextId && contextId !== '';
}

/** The agent named the task: record it before anything else happens. */
export async function acceptTask(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
  run: TurnRun,
  taskId: string,
  contextId: string,
  started: number,
): Promise<void> {
  const fresh = await ctx.reload(session.id);
  if (changesContext(fresh, contextId)) {
    // a different context: the thread is told, and the new context is kept.
    ctx.emit(session, { type: 'context.changed' });
    await ctx.notice(session, notice('context-changed', turn.id));
  }
  await recordTask(ctx, fresh, turn, run, { taskId, contextId, started });
}

/** The task an agent named for a turn, and when the call that named it started. */
interface NamedTask {
  taskId: string;
  contextId: string;
  started: number;
}

/**
 * The task's record: the session waits on it, the turn is accepted. The write is asked for
 * before this returns (its promise says when it is durable), so what the run sees after it
 * cannot change what it records.
 */
function recordTask(
  ctx: DriverContext,
  fresh: SessionRecord,
  turn: TurnRecord,
  run: TurnRun,
  { taskId, contextId, started }: NamedTask,
): Promise<void> {
  run.taskId = taskId;
  run.contextId = contextId;
  const now = ctx.deps.clock.now();
  const written = ctx.commit(
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
  return written.then(() => {
    ctx.emit(fresh, {
      type: 'turn.accepted',
      turnId: turn.id,
      taskId,
      contextId,
      latencyMs: now - started,
    });
  });
}

/** After a stream: settle from what it said, or read the task and follow it. */
export async function afterStream(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
  run: TurnRun,
  failed: boolean,
): Promise<void> {
  if (run.settledTask !== null) {
    await settle(ctx, session, route, turn, run, run.settledTask.status);
    return;
  }
  if (run.settledStatus !== null && !failed) {
    // The SDKs close a finished stream right after the terminal status: read the task at
    // once rather than waiting a second, and fall back to following it if it is not settled.
    const task = await readTask(ctx, session, route, run, run.taskId ?? '');
    if (task === 'gone') return;
    if (isSettled(task.status.state)) {
      await settle(ctx, session, route, turn, run, task.status);
      return;
    }
  } else if (!failed) {
    await ctx.sleep(ctx.deps.timings.settleDelayMs);
  }
  await followTask(
    ctx,
    await ctx.reload(session.id),
    route,
    turn,
    run,
    failed ? 'stream lost' : 'stream ended unsettled',
  );
}

/**
 * The polling settings that apply to this route's turns (P-1): the backend's, when it opted in
 * and the agent's card does not stream; undefined otherwise, so a card that streams keeps
 * streaming. A card that cannot be read throws.
 */
export async function pollingOf(route: AgentRoute): Promise<PollingSettings | undefined> {
  const polling = route.settings.polling;
  if (polling === undefined) return undefined;
  return (await route.client.streams()) ? undefined : polling;
}

/**
 * M-2, M-3, R-5, R-6: read the task with GetTask; while it runs, subscribe to it; without
 * SubscribeToTask, poll with a backoff up to a minute. A task with no sign of life for an
 * hour after its stream was lost is cancelled (M-4). An agent that does not stream, on a
 * Binding that polls (P-3, P-4), is only ever read with GetTask, at the backend's interval,
 * until its task settles or the polling timeout passes.
 */
export async function followTask(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord | null,
  run: TurnRun,
  reason: string,
): Promise<void> {
  const { clock, timings } = ctx.deps;
  const taskId = run.taskId ?? session.task?.taskId ?? null;
  if (taskId === null) return;
  run.taskId = taskId;
  ctx.emit(session, { type: 'task.followed', taskId, reason });
  // A card that cannot be read now is followed as a streaming one: the subscribe's failure
  // (-32004 from an agent that does not stream) turns it into polling all the same (M-3).
  const polling = await pollingOf(route).catch(() => undefined);
  let canSubscribe = polling === undefined;
  let unchanged = 0;
  for (let attempt = 0; ; attempt++) {
    ctx.checkStop();
    const readAt = clock.now();
    const activityBefore = run.lastActivityAt;
    const deadline = polling === undefined ? undefined : (turn?.firstSentAt ?? readAt) + polling.timeoutMs;
    const task =
      deadline === undefined
        ? await readTask(ctx, session, route, run, taskId)
        : await readTask(ctx, session, route, run, taskId, deadline);
    if (task === 'gone') return;
    if (task === 'late') {
      await cancelAndSettle(ctx, session, route, turn, run, taskId, 'poll-timeout');
      return;
    }
    if (!canSubscribe) ctx.emit(session, { type: 'task.polled', taskId, latencyMs: clock.now() - readAt });
    // After an answer, a task that still shows the question answered has not read it yet.
    const stale = answeredQuestion(session, route, turn, task.status);
    if ((isSettled(task.status.state) && !stale) || task.status.state === 'unknown') {
      await settle(ctx, await ctx.reload(session.id), route, turn, run, task.status);
      return;
    }
    if (polling !== undefined) {
      unchanged = run.lastActivityAt === activityBefore ? unchanged + 1 : 0;
      const since = clock.now() - (turn?.firstSentAt ?? run.lastActivityAt);
      const verdict = nextPoll({ sinceFirstSentMs: since, unchanged }, polling, timings);
      if (verdict.kind === 'timeout') {
        await cancelAndSettle(ctx, session, route, turn, run, taskId, 'poll-timeout');
        return;
      }
      await ctx.sleep(verdict.waitMs);
      continue;
    }
    if (clock.now() - run.lastActivityAt >= timings.noSignOfLifeMs) {
      await cancelAndSettle(ctx, session, route, turn, run, taskId, 'no-sign-of-life');
      return;
    }
    if (canSubscribe) {
      try {
        ctx.emit(session, { type: 'task.resubscribed', taskId });
        await consumeStream(
          ctx,
          session,
          route,
          turn,
          run,
          (signal) => route.client.subscribeToTask(taskId, callOptions(signal, run.trace)),
          clock.now(),
        );
        if (run.settledTask !== null) {
          await settle(ctx, await ctx.reload(session.id), route, turn, run, run.settledTask.status);
          return;
        }
        if (run.settledStatus !== null) continue; // read it back at once
      } catch (error) {
        ctx.checkStop();
        const verdict = afterSubscribeFailure(error);
        if (verdict.kind === 'gone') {
          await sessionGone(ctx, session, turn, taskId);
          return;
        }
        if (verdict.kind === 'refused') {
          await taskRefused(ctx, session, taskId, verdict);
          return;
        }
        // M-3: without SubscribeToTask, live text stops and the task is polled.
        if (verdict.kind === 'poll') canSubscribe = false;
        else
          ctx.emit(session, {
            type: 'stream.lost',
            turnId: turn?.id ?? null,
            taskId,
            code: verdict.code,
          });
      }
    }
    await ctx.sleep(canSubscribe ? timings.settleDelayMs : backoff(timings, attempt));
  }
}

/**
 * M-4 (no sign of life for an hour) and P-4 (past the polling timeout): the task is cancelled
 * and the turn settles as the agent reports the task after it, canceled when it says nothing
 * settled. A poll timeout also tells the thread why.
 */
async function cancelAndSettle(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord | null,
  run: TurnRun,
  taskId: string,
  reason: 'no-sign-of-life' | 'poll-timeout',
): Promise<void> {
  await cancelTask(ctx, session, route, taskId, reason, run.trace);
  // After a poll timeout the task is read once: an agent whose GetTask keeps failing is not
  // waited for again.
  const after =
    reason === 'poll-timeout'
      ? await readTask(ctx, session, route, run, taskId, ctx.deps.clock.now())
      : await readTask(ctx, session, route, run, taskId);
  if (after === 'gone') return;
  const status =
    after !== 'late' && isSettled(after.status.state) ? after.status : { state: 'canceled' as const };
  // A task the timeout canceled: the thread hears why, not only that it was canceled.
  const told =
    reason === 'poll-timeout' && status.state === 'canceled' ? notice('poll-timeout', turn?.id) : undefined;
  await settle(ctx, await ctx.reload(session.id), route, turn, run, status, told);
}

/** Whether a status is the question an answer turn answered (Q-1: the last question's key). */
export function answeredQuestion(
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

/**
 * GetTask with retries; 'gone' when the agent no longer knows the task (E-5). `until`: a read
 * still failing at this time is given up on, 'late' (P-4: a polled task's timeout does not wait
 * behind a GetTask that keeps failing).
 */
export async function readTask(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  run: TurnRun,
  taskId: string,
): Promise<Task | 'gone'>;
export async function readTask(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  run: TurnRun,
  taskId: string,
  until: number,
): Promise<Task | 'gone' | 'late'>;
export async function readTask(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  run: TurnRun,
  taskId: string,
  until?: number,
): Promise<Task | 'gone' | 'late'> {
  const { clock, timings } = ctx.deps;
  for (let attempt = 0; ; attempt++) {
    ctx.checkStop();
    try {
      const task = await route.client.getTask(taskId, callOptions(ctx.signal, run.trace));
      run.takeTask(task, clock.now());
      ctx.noteText(session, run);
      return task;
    } catch (error) {
      ctx.checkStop();
      const verdict = afterReadFailure(
        error,
        { attempt, sinceActivityMs: clock.now() - run.lastActivityAt },
        timings,
      );
      if (verdict.kind === 'gone') {
        const turn = run.taskId === null ? null : await ctx.turnOfTask(session, taskId);
        await sessionGone(ctx, await ctx.reload(session.id), turn, taskId);
        return 'gone';
      }
      if (verdict.kind === 'refused') {
        // E-1, E-2: at any call, the turn fails without a retry.
        await taskRefused(ctx, session, taskId, verdict);
        return 'gone';
      }
      if (until !== undefined && clock.now() >= until) return 'late';
      if (verdict.kind === 'unreachable') {
        // Every read failing for as long as a task may go quiet: the agent is not coming back
        // for this task. The turn fails rather than waiting for ever (M-4's hour).
        await taskUnreachable(ctx, session, taskId, verdict.code);
        return 'gone';
      }
      // Never called again before the agent's Retry-After: a wait that would pass `until` ends
      // there, and the read is given up on.
      if (until === undefined) await ctx.sleep(verdict.waitMs);
      else {
        await ctx.sleep(Math.max(0, Math.min(verdict.waitMs, until - clock.now())));
        if (clock.now() >= until) return 'late';
      }
    }
  }
}
