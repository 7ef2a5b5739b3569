import type { Task } from '../agent/model.js';
import { LeaseLostError } from '../errors.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import { DriverContext, type DriverDeps, type StepResult, Stop } from './context.js';
import { followTask } from './following.js';
import { stepPaused } from './paused.js';
import { attemptSend, resendAnswer, resolveUnknown, sendTurn } from './sending.js';
import { bindingGone, decisionNotSent } from './settling.js';

export type { DriverDeps };

/**
 * The session and its open turns as the engine already knows them when it starts a driver
 * (a thread it has just opened with its first turn): the first step starts from them instead of
 * reading them. See SessionEngine's receive().
 */
export interface FirstLook {
  session: SessionRecord;
  open: TurnRecord[];
}

/**
 * Drives one session: sends its turns one at a time, follows its task until it settles,
 * shows questions, and recovers whatever a crash left half done. One driver per session runs
 * at a time (the engine guarantees it; several replicas through the store's lease).
 *
 * Every write that guards an effect comes before the effect: a turn is marked `sending`
 * before the send, an answer clears the question before it is sent, the task is recorded as
 * soon as the agent names it.
 *
 * This is the dispatch: each step reads the session (or starts from a FirstLook) and hands it
 * to the part that has work, over one shared context (context.ts): sending.ts sends a turn or settles one whose outcome
 * is unknown, reading.ts reads a stream and records the task it names, following.ts follows
 * the task after it, settling.ts says what its end means, paused.ts
 * answers a paused task, polling.ts sends to an agent that does not stream (a Binding that
 * polls). failure-policy.ts decides, as a pure function, what a failed call means and when a
 * polled task is read again.
 */
export class SessionDriver {
  readonly #ctx: DriverContext;
  #first: FirstLook | undefined;
  #seenSeq = 0;

  constructor(deps: DriverDeps, sessionId: string, signal: AbortSignal, first?: FirstLook) {
    this.#ctx = new DriverContext(deps, sessionId, signal);
    this.#first = first;
  }

  /**
   * The highest seq among the open turns of this driver's last read (0 before any, or when
   * none was open): any open turn above it came in since. The engine hands it to the lease's
   * release, which says whether one did (SessionStore.releaseLease).
   */
  get seenSeq(): number {
    return this.#seenSeq;
  }

  /**
   * The agent reported elsewhere (its answer to a person's cancel) that a task ended: a stream
   * of it this driver reads ends now, and the turn settles from that report.
   */
  taskEnded(task: Task): void {
    this.#ctx.endStream?.(task);
  }

  /** Resolves once the writes this driver started on their own have finished. */
  drained(): Promise<void> {
    return this.#ctx.drained();
  }

  /** Runs steps until the session has nothing to do right now. */
  async run(): Promise<void> {
    try {
      for (;;) {
        this.#ctx.checkStop();
        if ((await this.#step()) === 'idle') return;
      }
    } catch (error) {
      if (error instanceof Stop || error instanceof LeaseLostError || this.#ctx.signal.aborted) return;
      throw error;
    }
  }

  async #step(): Promise<StepResult> {
    const { store } = this.#ctx.deps;
    const first = this.#first;
    this.#first = undefined;
    const session = first?.session ?? (await store.getSession(this.#ctx.sessionId));
    this.#ctx.current = session;
    if (session === undefined) return 'idle';
    const open = first?.open ?? (await store.openTurns(session.id));
    this.#seenSeq = 0;
    for (const turn of open) if (turn.seq > this.#seenSeq) this.#seenSeq = turn.seq;
    this.#ctx.settledInStep.clear();
    const route = this.#ctx.deps.resolve(session.binding, session.key);
    if (route === undefined) return bindingGone(this.#ctx, session, open);

    if (session.question !== null) return stepPaused(this.#ctx, session, open, route);
    if (session.task !== null) {
      // An answer to the paused task whose send has no known outcome (busy, dropped, a crash)
      // is settled first: it is looked for and sent again, not lost behind the paused task.
      const answering = open.find(
        (t) => t.kind === 'answer' && t.state === 'sending' && t.taskId === session.task?.taskId,
      );
      if (answering !== undefined) {
        await resolveUnknown(this.#ctx, session, route, answering);
        return this.#next(open);
      }
      // An answer the agent did not take (not sent, refused before any event) goes again to
      // its task; following the task instead would read the question it answers as asked anew.
      const resending = open.find(
        (t) =>
          t.kind === 'answer' && t.state === 'queued' && t.attempts > 0 && t.taskId === session.task?.taskId,
      );
      if (resending !== undefined) {
        await resendAnswer(this.#ctx, session, route, resending, open);
        return this.#next(open);
      }
      const turn = open.find((t) => t.id === session.task?.turnId) ?? null;
      await followTask(this.#ctx, session, route, turn, this.#ctx.runFor(session, turn), 'recorded task');
      return this.#next(open);
    }
    const turn = open.find((t) => t.kind !== 'context');
    if (turn === undefined) return 'idle';
    if (turn.state === 'queued') {
      if (turn.kind === 'answer') {
        // Its question went before it could be sent (a stop, a timeout): a decision belongs
        // to the task that asked, so it is not sent at all, and the thread is told.
        await decisionNotSent(this.#ctx, session, turn);
        return 'again';
      }
      await sendTurn(this.#ctx, session, route, turn, open);
    } else if (turn.state === 'sending') {
      // Marked `sending` as it was stored, by this process, and not sent since: sent now.
      const unsent =
        this.#ctx.deps.unsent.delete(turn.id) && turn.attempts === 1 && session.contextId === null;
      if (unsent) await attemptSend(this.#ctx, session, route, turn);
      else await resolveUnknown(this.#ctx, session, route, turn);
    } else {
      await followTask(this.#ctx, session, route, turn, this.#ctx.runFor(session, turn), 'accepted turn');
    }
    return this.#next(open);
  }

  /**
   * After a step's work: 'idle' when what this driver wrote during the step leaves the session
   * with nothing to do — no task, no question, and every turn that was open at the step's start
   * (but replies kept as context) settled by it — so the next step's two reads would only say so.
   * That holds while nobody else writes the session: with a store of one process, whatever else
   * adds a turn or a task (a message, an answer, a cancel, a wake-up) goes through the engine,
   * which kicks the session once it is written, and a kick while this driver runs makes it run
   * again from fresh reads. With a store shared by replicas, what another replica can write
   * without this driver's lease is a new turn (its task and question are fenced writes, ours
   * alone while we hold the lease): the lease's release reports one that came in after our last
   * read (seenSeq), and the engine drives the session again.
   */
  #next(open: readonly TurnRecord[]): StepResult {
    const ctx = this.#ctx;
    const session = ctx.current;
    if (session === undefined || session.task !== null || session.question !== null) return 'again';
    for (const turn of open) if (turn.kind !== 'context' && !ctx.settledInStep.has(turn.id)) return 'again';
    return 'idle';
  }
}
