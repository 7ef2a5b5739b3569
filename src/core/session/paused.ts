import type { AgentRoute } from '../ports.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import { finishStop } from './cancelling.js';
import type { DriverContext, StepResult } from './context.js';
import { readTask } from './following.js';
import { sendTurn } from './sending.js';
import { cancelPaused } from './settling.js';

/**
 * A session whose task is paused: a question waiting for its answer (Q rows), or a task that
 * needs authorisation the broker cannot give (T-6). The step that sends the reply as the answer,
 * lets a question time out, or sees that the agent moved on.
 */

export async function stepPaused(
  ctx: DriverContext,
  session: SessionRecord,
  open: TurnRecord[],
  route: AgentRoute,
): Promise<StepResult> {
  const question = session.question;
  if (question === null) return 'again';
  const { clock } = ctx.deps;
  if (question.expiresAt !== null && clock.now() >= question.expiresAt) {
    await cancelPaused(ctx, session, route, question, 'question-timeout');
    ctx.emit(session, {
      type: 'question.timeout',
      taskId: question.taskId,
      kind: question.kind,
      approval: question.approval === true,
    });
    return 'again';
  }
  if (question.closingAt !== undefined) {
    // A person's stop is cancelling the task: nothing answers it meanwhile. A stop of this
    // process ends by itself (and looks at the session again); one whose process died on the
    // way, or that another replica carries, is carried out here too (a second cancel of a
    // task is harmless, and only one of the two drops the question and tells the thread).
    if (ctx.deps.closing.has(session.id)) return 'idle';
    await finishStop(ctx, session, route, question.taskId);
    return 'again';
  }
  if (question.kind === 'auth') {
    const typed = open.find((t) => t.state === 'queued' && t.kind !== 'context');
    if (typed === undefined || ctx.authCheckedFor === typed.id) return 'idle';
    // A typed reply makes the engine read the task again, and follow it if it moved on.
    ctx.authCheckedFor = typed.id;
    const run = ctx.runFor(session, null);
    run.taskId = question.taskId;
    const task = await readTask(ctx, session, route, run, question.taskId);
    if (task === 'gone' || task.status.state === 'auth-required') return 'again';
    await ctx.commit({ ...session, question: null }, []);
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
    if (question.expiresAt !== null) ctx.deps.wakeAt(session.id, question.expiresAt);
    return 'idle';
  }
  // the reply answers the paused task, as one text part with its own messageId. The
  // question is cleared in the same write that marks the answer sent.
  // M-2: the reply makes the engine read the paused task first. Has the agent moved on
  // (answered elsewhere, timed out, resumed by itself)? Then the reply waits behind the task
  // like any message. Otherwise what the task already shows is not shown again.
  const current = await readTask(ctx, session, route, ctx.runFor(session, null), question.taskId);
  if (current === 'gone') return 'again';
  if (current.status.state !== 'input-required') {
    await ctx.commit({ ...session, question: null }, []);
    return 'again';
  }
  const answer: TurnRecord = { ...reply, kind: 'answer', taskId: question.taskId };
  ctx.emit(session, { type: 'question.answered', taskId: question.taskId });
  await sendTurn(ctx, { ...session, question: null }, route, answer, open, question, current.artifacts);
  return 'again';
}
