import { isInterrupted, isTerminal, type Task, type TaskStatus } from '../agent/model.js';
import { type FailureCategory, failureCategory } from '../failure.js';
import type { AgentRoute, Caller, Notice } from '../ports.js';
import { isApproval } from '../question.js';
import type { PendingQuestion, SessionRecord, TurnRecord } from '../store.js';
import type { TraceContext } from '../trace.js';
import { type AnswerTarget, callOptions, type DriverContext, type StepResult } from './context.js';
import { afterCancelFailure, type TaskRefusal } from './failure-policy.js';
import { notice, taskFailed } from './notices.js';
import type { TurnRun } from './turn-run.js';

/**
 * Settling a session's work: what a final or paused state means for the thread (T rows), asking
 * a question the agent paused on, cancelling a task (M-4), and every way a turn ends
 * without an answer — refused, unreachable, its session or Binding gone. The lowest part of the
 * driver: it calls no other part.
 */

/**
 * T rows: what each final or paused state means for the thread. `told`: the notice the thread
 * gets instead of the state's own (P-4: why the broker canceled the task).
 */
export async function settle(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord | null,
  run: TurnRun,
  status: TaskStatus,
  told?: Notice,
): Promise<void> {
  const state = status.state;
  const taskId = run.taskId ?? session.task?.taskId ?? '';
  const paused = isInterrupted(state);
  if (run.sink !== null)
    await run.sink.finish(run.answer, paused ? 'task-paused' : 'task-ended').catch(() => undefined);
  if (paused) {
    await pause(ctx, session, route, turn, run, status, taskId);
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
  if (told !== undefined) message = told;
  await ctx.commit(
    { ...session, task: null, question: null },
    turn === null ? [] : [{ ...turn, state: 'settled', outcome, taskId }],
  );
  if (message !== undefined) await ctx.notice(session, message);
  if (turn !== null) settledEvent(ctx, session, turn, outcome, run, category);
}

export async function pause(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord | null,
  run: TurnRun,
  status: TaskStatus,
  taskId: string,
): Promise<void> {
  const { clock } = ctx.deps;
  const now = clock.now();
  const contextId = run.contextId ?? session.contextId ?? '';
  const task = session.task ?? {
    taskId,
    turnId: turn?.id ?? '',
    state: status.state,
    lastActivityAt: now,
    streamLostAt: null,
  };
  const turns = turn === null ? [] : [{ ...turn, state: 'settled' as const, outcome: status.state, taskId }];
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
    await ctx.commit({ ...session, task: { ...task, state: status.state }, question }, turns);
    if (turn !== null) settledEvent(ctx, session, turn, status.state, run);
    return;
  }
  const reading = route.dialect.readPause(status, session.lastQuestionKey);
  // anything else in input-required cannot be shown; M-4/Q-5: nor can a tool approval
  // on a Binding that does not allow them. Either way the task is cancelled and the thread told.
  const refusal =
    reading.kind === 'unsupported'
      ? ('question-unsupported' as const)
      : isApproval(reading.question) && route.settings.toolApprovalsEnabled === false
        ? ('approval-not-allowed' as const)
        : undefined;
  if (refusal !== undefined) {
    await ctx.commit({ ...session, task: { ...task, state: status.state } }, turns);
    if (turn !== null) settledEvent(ctx, session, turn, status.state, run);
    await cancelTask(ctx, session, route, taskId, refusal, run.trace, run.caller);
    await ctx.commit({ ...(await ctx.reload(session.id)), task: null, question: null }, []);
    await ctx.notice(session, notice(refusal, turn?.id));
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
    payload: reading.question.reply ?? null,
    ...(reading.question.form === undefined ? {} : { form: reading.question.form }),
    ...(isApproval(reading.question) ? { approval: true } : {}),
  };
  // The question is recorded before it is shown: a reply that races the prompt finds it.
  await ctx.commit(
    { ...session, task: { ...task, state: status.state }, question, lastQuestionKey: question.questionKey },
    turns,
  );
  if (turn !== null) settledEvent(ctx, session, turn, status.state, run);
  ctx.emit(session, {
    type: 'question.asked',
    taskId,
    kind: question.kind,
    approval: question.approval === true,
  });
  const ref = await ctx.deps.surface
    .askQuestion(ctx.target(session), {
      binding: session.binding,
      turnId: turn?.id ?? '',
      taskId,
      question: reading.question,
    })
    .catch(() => null);
  if (ref !== null) {
    const fresh = await ctx.reload(session.id);
    if (fresh.question?.taskId === taskId)
      await ctx.commit({ ...fresh, question: { ...fresh.question, promptRef: ref } }, []);
  }
  if (question.expiresAt !== null) ctx.deps.wakeAt(session.id, question.expiresAt);
}

/**
 * What a cancel came to: `ended` when nothing of the task runs any more (the agent cancelled it,
 * or it had ended already), with the task as the agent last showed it when it showed one.
 */
export type CancelOutcome = { ended: true; task: Task | undefined } | { ended: false };

/** M-4: a few tries, then reported as failed; a failed cancel reads the task (M-2). */
export async function cancelTask(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  taskId: string,
  reason: string,
  trace?: TraceContext,
  caller?: Caller,
): Promise<CancelOutcome> {
  const { timings } = ctx.deps;
  for (let attempt = 0; attempt < timings.cancelAttempts; attempt++) {
    ctx.checkStop();
    try {
      const task = await route.client.cancelTask(taskId, callOptions(ctx.signal, trace, caller));
      ctx.emit(session, { type: 'task.cancel', taskId, reason, ok: true });
      return { ended: true, task };
    } catch (error) {
      ctx.checkStop();
      const verdict = afterCancelFailure(error, attempt, timings);
      if (verdict.kind === 'done') {
        ctx.emit(session, { type: 'task.cancel', taskId, reason, ok: true });
        return { ended: true, task: undefined };
      }
      if (verdict.kind === 'give-up') {
        if (verdict.credentialsStatus !== undefined)
          ctx.emit(session, { type: 'credentials.rejected', status: verdict.credentialsStatus });
        break;
      }
      if (verdict.kind === 'retry') await ctx.sleep(verdict.waitMs);
    }
  }
  try {
    const task = await route.client.getTask(taskId, callOptions(ctx.signal, trace, caller));
    if (isTerminal(task.status.state)) {
      ctx.emit(session, { type: 'task.cancel', taskId, reason, ok: true });
      return { ended: true, task };
    }
  } catch {
    // Reported below.
  }
  ctx.emit(session, { type: 'task.cancel', taskId, reason, ok: false });
  await ctx.notice(session, notice('cancel-failed'));
  return { ended: false };
}

export async function cancelPaused(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  question: AnswerTarget,
  kind: 'question-timeout' | 'answer-rejected' | 'question-unsupported',
  turnId?: string,
): Promise<void> {
  await cancelTask(ctx, session, route, question.taskId, kind);
  const fresh = (await ctx.deps.store.getSession(session.id)) ?? session;
  await ctx.commit({ ...fresh, question: null, task: null }, []);
  await ctx.notice(session, notice(kind, turnId));
}

/** E-5: the agent no longer knows the task: the thread is told, the next turn starts fresh. */
export async function sessionGone(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord | null,
  taskId: string,
): Promise<void> {
  ctx.emit(session, { type: 'session.gone', taskId });
  const turns =
    turn === null ? [] : [{ ...turn, state: 'settled' as const, outcome: 'error:task_not_found' }];
  await ctx.commit({ ...session, contextId: null, task: null, question: null }, turns);
  // A reply that was waiting for the lost task (after the agent restarted and forgot it) is not
  // dropped: it goes on, as the first message of a new conversation, and the notice says so.
  const carried =
    turn === null &&
    (await ctx.deps.store.openTurns(session.id)).some((t) => t.kind !== 'context' && t.state === 'queued');
  await ctx.notice(session, notice(carried ? 'session-gone-carried' : 'session-gone', turn?.id));
  if (turn !== null) {
    ctx.emit(session, {
      type: 'turn.settled',
      turnId: turn.id,
      outcome: 'error:task_not_found',
      taskId: taskId === '' ? null : taskId,
      durationMs: ctx.deps.clock.now() - turn.createdAt,
      answerLength: 0,
    });
  }
}

export async function failTurn(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
  code: string,
  message: Notice,
): Promise<void> {
  const fresh = await ctx.reload(session.id);
  // A turn the agent refused outright (E-1, E-2) leaves no task to follow: the next turn
  // must not wait behind one this identity cannot reach.
  const refused = code === 'credentials_rejected' || code === 'identity_refused';
  await ctx.commit(refused ? { ...fresh, task: null, question: null } : fresh, [
    { ...turn, state: 'settled', outcome: `error:${code}` },
  ]);
  await ctx.notice(session, message);
  failedEvent(ctx, session, turn, `error:${code}`);
}

export function failedEvent(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
  outcome: string,
): void {
  ctx.emit(session, {
    type: 'turn.settled',
    turnId: turn.id,
    outcome,
    taskId: turn.taskId,
    durationMs: ctx.deps.clock.now() - turn.createdAt,
    answerLength: 0,
  });
}

/** E-1, E-2 while a task is followed: the task is let go and its turn fails, told once. */
export async function taskRefused(
  ctx: DriverContext,
  session: SessionRecord,
  taskId: string,
  refusal: TaskRefusal,
): Promise<void> {
  if (refusal.credentialsStatus !== undefined)
    ctx.emit(session, { type: 'credentials.rejected', status: refusal.credentialsStatus });
  await letTaskGo(ctx, session, taskId, refusal.code, refusal.notice);
}

/** Reads of a task failed for as long as a task may show no sign of life: its turn fails. */
export async function taskUnreachable(
  ctx: DriverContext,
  session: SessionRecord,
  taskId: string,
  code: string,
): Promise<void> {
  await letTaskGo(ctx, session, taskId, code, 'agent-unreachable');
}

export async function letTaskGo(
  ctx: DriverContext,
  session: SessionRecord,
  taskId: string,
  code: string,
  kind: 'credentials-rejected' | 'identity-refused' | 'agent-unreachable',
): Promise<void> {
  const fresh = await ctx.reload(session.id);
  const turn = await ctx.turnOfTask(fresh, taskId);
  const owned = fresh.task?.taskId === taskId || fresh.question?.taskId === taskId;
  await ctx.commit(
    owned ? { ...fresh, task: null, question: null } : fresh,
    turn === null ? [] : [{ ...turn, state: 'settled', outcome: `error:${code}` }],
  );
  await ctx.notice(session, notice(kind, turn?.id));
  if (turn !== null) failedEvent(ctx, session, turn, `error:${code}`);
}

export async function settleTurn(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
  outcome: string,
): Promise<void> {
  await ctx.commit(await ctx.reload(session.id), [{ ...turn, state: 'settled', outcome }]);
  ctx.emit(session, {
    type: 'turn.settled',
    turnId: turn.id,
    outcome,
    taskId: turn.taskId,
    durationMs: ctx.deps.clock.now() - turn.createdAt,
    answerLength: 0,
  });
}

/**
 * An answer whose question went before it was sent (a stop closed it, it timed out): settled
 * unsent. Sent now it would reach the context as a new message, outside the task it answers.
 */
export async function decisionNotSent(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
): Promise<void> {
  const outcome = 'error:question_closed';
  await ctx.commit(session, [{ ...turn, state: 'settled', outcome }]);
  await ctx.notice(session, notice('decision-not-sent', turn.id));
  failedEvent(ctx, session, turn, outcome);
}

export async function bindingGone(
  ctx: DriverContext,
  session: SessionRecord,
  open: TurnRecord[],
): Promise<StepResult> {
  const waiting = open.filter((t) => t.kind !== 'context');
  if (waiting.length === 0 && session.task === null && session.question === null) return 'idle';
  await ctx.commit(
    { ...session, task: null, question: null },
    open.map((t) => ({ ...t, state: 'settled' as const, outcome: 'error:binding_removed' })),
  );
  // Replies carried as context were never turns of their own: only the waiting ones settle.
  for (const turn of waiting) {
    ctx.emit(session, {
      type: 'turn.settled',
      turnId: turn.id,
      outcome: 'error:binding_removed',
      taskId: turn.taskId,
      durationMs: ctx.deps.clock.now() - turn.createdAt,
      answerLength: 0,
    });
  }
  if (waiting.length > 0) await ctx.notice(session, notice('binding-removed'));
  return 'idle';
}

export function settledEvent(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
  outcome: string,
  run: TurnRun,
  category?: string,
): void {
  ctx.emit(session, {
    type: 'turn.settled',
    turnId: turn.id,
    outcome,
    ...(category === undefined ? {} : { category }),
    taskId: run.taskId ?? turn.taskId,
    durationMs: ctx.deps.clock.now() - turn.createdAt,
    answerLength: run.answer.length,
  });
}
