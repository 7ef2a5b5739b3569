import type { Actor } from '../compose.js';
import { StaleWriteError } from '../errors.js';
import type { SessionKey, SessionRecord } from '../store.js';
import { DriverContext, type DriverDeps } from './context.js';
import { notice } from './notices.js';
import { cancelTask } from './settling.js';

/**
 * A person's stop (the web chat's stop button, Slack's): the session's running task is cancelled
 * through the agent (CancelTask, with M-4's tries and its read of the task when they fail). The
 * surface only asks; the engine decides, so every surface stops a task the same way.
 *
 * - A task the session follows: once the agent has cancelled it, the stream (or the next read
 *   of the task) says so, and the driver settles the turn as any canceled task (T-4: the thread
 *   is told).
 * - A task paused on a question: nobody follows it, so the question is dropped here and the
 *   thread told, as when a question times out.
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
  const ok = await cancelTask(ctx, session, route, taskId, request.reason ?? STOP_REASON);
  if (!ok) return { status: 'failed', sessionId, taskId, code: 'agent-refused' };
  const wasPaused = session.question?.taskId === taskId;
  if (wasPaused) await dropQuestion(ctx, key, taskId);
  deps.kick(sessionId);
  return { status: 'canceled', sessionId, taskId, turnId, wasPaused };
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

/** The paused task is gone: its question takes no answer, and the thread is told (once). */
async function dropQuestion(ctx: DriverContext, key: SessionKey, taskId: string): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const fresh = await ctx.deps.store.getSession(ctx.sessionId);
    if (fresh === undefined || fresh.question?.taskId !== taskId) return;
    try {
      const written: SessionRecord | undefined = await ctx.deps.store.commit({
        session: { ...fresh, question: null, task: null },
        now: ctx.deps.clock.now(),
      });
      if (written !== undefined) ctx.current = written;
      await ctx.notice({ ...fresh, key }, notice('task-canceled'));
      return;
    } catch (error) {
      // Someone wrote the session meanwhile (an answer, a timeout): read it again.
      if (!(error instanceof StaleWriteError)) throw error;
    }
  }
}
