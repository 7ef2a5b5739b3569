import { isTerminal, type Task } from '../agent/model.js';
import type { Actor } from '../compose.js';
import { StaleWriteError } from '../errors.js';
import type { AgentRoute, Caller } from '../ports.js';
import type { PendingQuestion, SessionKey, SessionRecord } from '../store.js';
import { DriverContext, type DriverDeps } from './context.js';
import { notice } from './notices.js';
import { cancelTask } from './settling.js';

/**
 * A person's stop (the web chat's stop button, Slack's): the session's running task is cancelled
 * through the agent (CancelTask, with M-4's tries and its read of the task when they fail). The
 * surface only asks; the engine decides, so every surface stops a task the same way.
 *
 * - A task the session follows: once the agent has cancelled it, the cancel's answer settles the
 *   turn (T-4: the thread is told) through the driver, which leaves the task's stream, whether
 *   or not the agent closes it; an agent that answers the cancel with a task still running is
 *   followed until its stream or the next read of the task says it ended.
 * - A task paused on a question: nobody follows it, so its question is closed first (a decision
 *   pressed meanwhile is refused, never sent), then dropped here and the thread told, as when a
 *   question times out.
 */

export interface CancelRequest {
  /** Who pressed stop; the surface checked that they may (the engine knows nothing of chat rights). */
  actor: Pick<Actor, 'id'>;
  /**
   * Only this turn's task: a stop pressed on an answer that has settled since (a new turn runs
   * now) stops nothing new. Without it, whatever runs in the thread is stopped.
   */
  turnId?: string;
  /** Why (the task.cancel event's bounded label); default: a person's stop. */
  reason?: string;
}

/** The reason a person's stop carries in the task.cancel event (a bounded metric label). */
export const STOP_REASON = 'stopped-by-person';

export type CancelResult =
  /**
   * The agent cancelled the task, or it had ended already: nothing of it runs any more.
   * `wasPaused`: it waited on a question, which is dropped (no driver follows it to settle it).
   */
  | { status: 'canceled'; sessionId: string; taskId: string; turnId: string | null; wasPaused: boolean }
  /** No task is running for this thread (none sent yet, or all settled): nothing was done. */
  | { status: 'nothing-running'; sessionId: string }
  /** The stop named another turn than the one whose task runs now: nothing was sent. */
  | { status: 'stale'; sessionId: string; taskId: string }
  /**
   * The task may still run: the agent refused or could not be reached (the thread is told), or
   * the Binding is gone (`binding-unavailable`: there is no agent to ask).
   */
  | { status: 'failed'; sessionId: string; taskId: string; code: 'agent-refused' | 'binding-unavailable' };

export interface CancelDeps {
  driver: DriverDeps;
  /** Stops the cancel's waits when the engine stops. */
  signal: AbortSignal;
  /** Looks at the session again (its driver settles what the agent now reports). */
  kick(sessionId: string): void;
  /**
   * The agent answered the cancel with the task ended: the driver following it, if one runs in
   * this process, settles from that answer and leaves the task's stream, which an agent may keep
   * open after acknowledging the cancel. False when no driver of the session runs here.
   */
  taskEnded(sessionId: string, task: Task): boolean;
  /** Sessions whose paused question a stop of this process is closing (DriverDeps.closing). */
  closing: Set<string>;
}

export async function cancelRunning(
  deps: CancelDeps,
  sessionId: string,
  key: SessionKey,
  request: CancelRequest,
): Promise<CancelResult> {
  const { store } = deps.driver;
  const session = await store.getSession(sessionId);
  const taskId = session?.task?.taskId ?? session?.question?.taskId;
  if (session === undefined || taskId === undefined) return { status: 'nothing-running', sessionId };
  const turnId = session.task?.turnId ?? null;
  if (request.turnId !== undefined && request.turnId !== turnId) {
    // An answer that resumed the task names it too; any other turn is an earlier one.
    const turn = await store.getTurn(request.turnId);
    if (turn?.taskId !== taskId) return { status: 'stale', sessionId, taskId };
  }
  const route = deps.driver.resolve(session.binding, key, 'cancel');
  if (route === undefined) return { status: 'failed', sessionId, taskId, code: 'binding-unavailable' };
  const ctx = new DriverContext(deps.driver, sessionId, deps.signal);
  // A paused task's question is closed before the agent is asked to cancel: a decision that
  // arrives while the cancel is on its way is refused, not sent to a task being stopped (nor,
  // once it is stopped, to the context after it).
  const paused = session.question?.taskId === taskId;
  if (paused) deps.closing.add(sessionId);
  try {
    if (paused) await markClosing(ctx, taskId, true);
    // The cancel is the stopper's call: a per-person identity names them (only their id is known).
    const stopper: Caller = {
      kind: 'person',
      id: request.actor.id,
      surface: session.key.surface,
      workspaceId: session.key.workspaceId,
      channelId: session.key.channelId,
      sessionId,
      binding: session.binding,
    };
    const outcome = await cancelTask(
      ctx,
      session,
      route,
      taskId,
      request.reason ?? STOP_REASON,
      undefined,
      stopper,
    );
    if (!outcome.ended) {
      if (paused) await markClosing(ctx, taskId, false);
      return { status: 'failed', sessionId, taskId, code: 'agent-refused' };
    }
    if (paused) await dropQuestion(ctx, key, taskId);
    else if (outcome.task !== undefined && isTerminal(outcome.task.status.state))
      await endTask(deps, sessionId, outcome.task);
  } finally {
    if (paused) deps.closing.delete(sessionId);
  }
  deps.kick(sessionId);
  return { status: 'canceled', sessionId, taskId, turnId, wasPaused: paused };
}

/**
 * The cancelled task's turn is settled from the agent's answer, wherever it is driven: by this
 * process's driver, told at once; by another replica's, whose lease is revoked so that this
 * process drives the session (the kick that follows) and reads the task's end, while the other
 * stops at its next renewal, its stream with it, and can write nothing more meanwhile.
 */
async function endTask(deps: CancelDeps, sessionId: string, task: Task): Promise<void> {
  if (deps.taskEnded(sessionId, task)) return;
  if (deps.driver.store.sharedByReplicas) await deps.driver.store.revokeLease(sessionId);
}

/** The reason a workspace's removal carries in its task.cancel events. */
export const WORKSPACE_REMOVED_REASON = 'workspace-removed';

/**
 * Every task running (or paused) in one workspace's sessions, cancelled through its agent; the
 * sessions are looked up among those with work, so an idle workspace costs one read.
 */
export async function cancelWorkspaceTasks(
  deps: CancelDeps,
  surface: string,
  workspaceId: string,
  reason: string,
): Promise<CancelResult[]> {
  const results: CancelResult[] = [];
  for (const id of await deps.driver.store.sessionsWithWork()) {
    const session = await deps.driver.store.getSession(id);
    if (session === undefined || session.key.surface !== surface || session.key.workspaceId !== workspaceId)
      continue;
    if (session.task === null && session.question === null) continue;
    results.push(
      await cancelRunning(deps, id, session.key, { actor: { id: `${surface}:${workspaceId}` }, reason }),
    );
  }
  return results;
}

/**
 * A stop that closed a paused task's question and did not end (its process died, or it runs on
 * another replica): the task is cancelled and the question dropped, or opened again when the
 * agent refuses the cancel.
 */
export async function finishStop(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  taskId: string,
): Promise<void> {
  const outcome = await cancelTask(ctx, session, route, taskId, STOP_REASON);
  if (outcome.ended) await dropQuestion(ctx, session.key, taskId);
  else await markClosing(ctx, taskId, false);
}

/** The paused task is gone: its question takes no answer, and the thread is told (once). */
export async function dropQuestion(ctx: DriverContext, key: SessionKey, taskId: string): Promise<void> {
  const written = await writeQuestion(ctx, taskId, () => null);
  if (written !== undefined) await ctx.notice({ ...written, key }, notice('task-canceled'));
}

/**
 * Marks the paused task's question as closing (a stop is cancelling it) or open again (the
 * agent refused the cancel). Unfenced, like every write a stop makes: the session may be
 * driven elsewhere, and the version check keeps either write from undoing the other's.
 */
async function markClosing(ctx: DriverContext, taskId: string, closing: boolean): Promise<void> {
  const now = ctx.deps.clock.now();
  await writeQuestion(ctx, taskId, (question) => {
    if (closing) return { ...question, closingAt: now };
    const { closingAt: _closed, ...open } = question;
    return open;
  });
}

/**
 * Rewrites the session's question while it is still the paused task's, reading it again when
 * someone wrote the session meanwhile (an answer, a timeout, a driver). Returns the session as
 * it was before the write, or undefined when the question had gone.
 */
async function writeQuestion(
  ctx: DriverContext,
  taskId: string,
  change: (question: PendingQuestion) => PendingQuestion | null,
): Promise<SessionRecord | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const fresh = await ctx.deps.store.getSession(ctx.sessionId);
    if (fresh === undefined || fresh.question?.taskId !== taskId) return undefined;
    const question = change(fresh.question);
    try {
      const written = await ctx.deps.store.commit({
        session: question === null ? { ...fresh, question: null, task: null } : { ...fresh, question },
        now: ctx.deps.clock.now(),
      });
      if (written !== undefined) ctx.current = written;
      return fresh;
    } catch (error) {
      if (!(error instanceof StaleWriteError)) throw error;
    }
  }
  throw new StaleWriteError(ctx.sessionId);
}
