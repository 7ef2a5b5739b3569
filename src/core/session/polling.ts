import { isSettled, type Message, type OutgoingMessage } from '../agent/model.js';
import type { AgentRoute } from '../ports.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import { callOptions, type DriverContext } from './context.js';
import { acceptTask, answeredQuestion } from './reading.js';
import { settle } from './settling.js';
import type { TurnRun } from './turn-run.js';

/**
 * Agents that do not stream (P rows): a Binding whose AgentBackend opted into polling sends such
 * an agent its turns with the non-streaming send and follows the task with GetTask (following.ts
 * polls it). A card that streams keeps the streaming path even with polling on.
 */

/**
 * P-2: one non-streaming send, asking for an immediate return. A Task names the turn's task,
 * which is recorded before anything else and taken in as the first event of a stream would
 * be; the caller then follows it as it follows a stream that ended. A bare Message (P-6) is the
 * whole answer of an agent that has no task to follow: shown and settled here. Errors propagate.
 * Returns whether the turn settled here.
 */
export async function sendPolled(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
  run: TurnRun,
  message: OutgoingMessage,
  started: number,
): Promise<boolean> {
  const { clock } = ctx.deps;
  run.resetStream();
  const reply = await route.client.sendMessage(message, callOptions(ctx.signal, run.trace, run.caller));
  ctx.checkStop();
  ctx.emitAgentEvent(session, turn.id, reply.kind, clock.now());
  if (reply.kind === 'message') {
    await showMessage(ctx, session, route, turn, run, reply.message);
    return true;
  }
  const task = reply.task;
  if (task.id === '' || task.contextId === '') {
    // a task that names no task or context says nothing about the turn's outcome.
    run.sawUnnamedEvents = true;
    return false;
  }
  if (run.taskId === null) await acceptTask(ctx, session, turn, run, task.id, task.contextId, started);
  else if (task.id !== run.taskId) {
    run.sawUnnamedEvents = true; // another task's answer has nothing to say about this turn
    return false;
  }
  run.eventsSeen++;
  run.takeTask(task, clock.now());
  ctx.noteText(session, run);
  // An answer's immediate return may still show the question it answers: not a new pause.
  if (isSettled(task.status.state) && !answeredQuestion(session, route, turn, task.status))
    run.settledTask = task;
  return false;
}

/**
 * P-6: a synchronous agent answered with a Message and no task: its text parts are the answer,
 * shown as a stream's artifact would be, and the turn completes. Its context, when it names one,
 * is kept for the thread's next turn. Nothing is recorded to recover it from: a crash before this
 * point sends the turn again (same messageId) and the agent may answer it twice.
 */
async function showMessage(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
  run: TurnRun,
  reply: Message,
): Promise<void> {
  const changed = run.answer.apply({
    kind: 'artifact-update',
    taskId: '',
    contextId: reply.contextId ?? '',
    artifact: { artifactId: `message:${reply.messageId}`, parts: reply.parts },
    append: false,
    lastChunk: true,
  });
  if (changed) {
    run.sink?.update(run.answer);
    ctx.noteText(session, run);
  }
  let current = await ctx.reload(session.id);
  const contextId = reply.contextId ?? '';
  if (contextId !== '' && current.contextId !== contextId) {
    await ctx.commit({ ...current, contextId }, []);
    current = await ctx.reload(session.id);
  }
  await settle(ctx, current, route, turn, run, { state: 'completed' });
}
