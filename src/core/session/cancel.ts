import { isInterrupted, isTerminal, type TaskState } from '../agent/model.js';
import type { Actor } from '../compose.js';
import type { EngineEvent } from '../events.js';
import type { AgentRegistry, ChatSurface, Clock } from '../ports.js';
import { type SessionKey, type SessionStore, sessionIdOf } from '../store.js';
import { afterCancelFailure } from './failure-policy.js';
import { notice } from './notices.js';
import type { EngineTimings } from './timings.js';

/**
 * A person asked to stop the task that runs in a session (a chat's stop button). The engine
 * sends CancelTask for the session's running task with the same retries as every cancel of
 * the contract (M-4: a few tries, then reported as failed; a failed cancel reads the task,
 * M-2), and does nothing when nothing runs. The task's stream, still followed by whichever
 * driver has it, then ends in `canceled`, which settles the turn the usual way (T-4: the turn
 * ends with a notice). So a cancel never writes the session itself: the driver that follows
 * the task is the only writer, in this replica or another one.
 *
 * A task paused on a question (input-required, auth-required) is not running: it waits for
 * the person, and its own timeout cancels it.
 */

export type CancelResult =
  /** CancelTask went through (or the agent no longer had the task). */
  | { status: 'canceled'; sessionId: string; taskId: string; turnId: string }
  /** No task runs in the session (none yet, or it settled): nothing was sent. */
  | { status: 'not-running'; sessionId: string }
  /** The task waits for an answer: nothing was sent. */
  | { status: 'paused'; sessionId: string; taskId: string }
  /** The stop was for another turn than the one running now (it settled meanwhile). */
  | { status: 'stale'; sessionId: string; taskId: string }
  /** The Binding is gone: nobody can be asked. */
  | { status: 'no-agent'; sessionId: string; taskId: string }
  /** The tries were used up (or refused for good); the thread was told. */
  | { status: 'failed'; sessionId: string; taskId: string };

export interface CancelRequest {
  key: SessionKey;
  /** Who asked; the surface checked that they may (the engine has no idea of chat rights). */
  actor: Pick<Actor, 'id'>;
  /** Only this turn's task: a stop pressed on an answer that has settled since stops nothing new. */
  turnId?: string;
  signal?: AbortSignal;
}

export interface CancelDeps {
  store: Pick<SessionStore, 'getSession' | 'getTurn'>;
  registry: AgentRegistry;
  surface: Pick<ChatSurface, 'postNotice'>;
  clock: Clock;
  timings: EngineTimings;
  emit(event: EngineEvent): void;
}

/** The reason the task.cancel event carries for a person's stop. */
export const STOP_REASON = 'stopped-by-person';

export async function cancelRunning(deps: CancelDeps, request: CancelRequest): Promise<CancelResult> {
  const sessionId = sessionIdOf(request.key);
  const session = await deps.store.getSession(sessionId);
  const task = session?.task ?? null;
  if (session === undefined || task === null || isTerminal(task.state as TaskState))
    return { status: 'not-running', sessionId };
  const { taskId } = task;
  // The turn that started the task, or an answer that resumed it: either names this task.
  if (request.turnId !== undefined && request.turnId !== task.turnId) {
    const turn = await deps.store.getTurn(request.turnId);
    if (turn?.taskId !== taskId) return { status: 'stale', sessionId, taskId };
  }
  if (session.question !== null || isInterrupted(task.state as TaskState))
    return { status: 'paused', sessionId, taskId };
  const route = deps.registry.resolve(session.binding);
  if (route === undefined) return { status: 'no-agent', sessionId, taskId };
  const event = (ok: boolean): EngineEvent => ({
    type: 'task.cancel',
    sessionId,
    binding: session.binding,
    at: deps.clock.now(),
    taskId,
    reason: STOP_REASON,
    ok,
  });
  const options = request.signal === undefined ? {} : { signal: request.signal };
  for (let attempt = 0; attempt < deps.timings.cancelAttempts; attempt++) {
    try {
      await route.client.cancelTask(taskId, options);
      deps.emit(event(true));
      return { status: 'canceled', sessionId, taskId, turnId: task.turnId };
    } catch (error) {
      if (request.signal?.aborted === true) throw error;
      const verdict = afterCancelFailure(error, attempt, deps.timings);
      if (verdict.kind === 'done') {
        deps.emit(event(true));
        return { status: 'canceled', sessionId, taskId, turnId: task.turnId };
      }
      if (verdict.kind === 'give-up') {
        if (verdict.credentialsStatus !== undefined)
          deps.emit({
            type: 'credentials.rejected',
            sessionId,
            binding: session.binding,
            at: deps.clock.now(),
            status: verdict.credentialsStatus,
          });
        break;
      }
      if (verdict.kind === 'retry') await deps.clock.sleep(verdict.waitMs, request.signal);
    }
  }
  // M-2: a failed cancel reads the task; one that ended meanwhile is as good as cancelled.
  try {
    const read = await route.client.getTask(taskId, options);
    if (isTerminal(read.status.state)) {
      deps.emit(event(true));
      return { status: 'canceled', sessionId, taskId, turnId: task.turnId };
    }
  } catch {
    // Reported below.
  }
  deps.emit(event(false));
  await deps.surface
    .postNotice({ sessionId, key: session.key }, notice('cancel-failed', task.turnId))
    .catch(() => undefined);
  return { status: 'failed', sessionId, taskId };
}
