import {
  contextIdOf,
  isSettled,
  isTerminal,
  namesTaskAndContext,
  type StreamEvent,
  type Task,
  type TaskStatus,
  taskIdOf,
} from '../agent/model.js';
import type { AgentRoute, ReadyEvents } from '../ports.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import type { DriverContext } from './context.js';
import { notice } from './notices.js';
import type { TurnRun } from './turn-run.js';

/**
 * Reading a send's or a subscription's stream into the turn's run, and recording the task the
 * moment the agent names it: the part of following a task that reads events as they come
 * (following.ts does what comes after a stream). Nothing here calls the agent or settles a turn.
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
  // The agent said elsewhere that the task ended (it answered a cancel so): settled from that,
  // as by a terminal event here, whether or not the agent ever closes this stream.
  ctx.endStream = (task: Task): void => {
    if (task.id !== run.taskId) return;
    run.settledTask = task;
    cut.abort(new Error('the task ended; not waiting for its stream'));
  };
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
  // The time events arrive: read after each await, not once per event (a clock read is about
  // 50 ns, and a long answer's read of the body hands over hundreds of events at once, all
  // taken in the same turn of the loop, without an await between them).
  let now = clock.now();
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
        now = clock.now();
        accept.check();
      }
      run.eventsSeen++;
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
          now = clock.now();
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
        now = clock.now();
      }
      if (event.kind === 'artifact-update') {
        if (!run.ended && run.answer.apply(event)) {
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
          if (isTerminal(event.status.state)) run.ended = true;
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
    ctx.endStream = undefined;
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
