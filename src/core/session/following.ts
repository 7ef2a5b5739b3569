import { isSettled, type Task } from '../agent/model.js';
import type { AgentRoute, PollingSettings } from '../ports.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import { callOptions, type DriverContext } from './context.js';
import { afterReadFailure, afterSubscribeFailure, nextPoll } from './failure-policy.js';
import { notice } from './notices.js';
import { answeredQuestion, consumeStream } from './reading.js';
import { cancelTask, sessionGone, settle, taskRefused, taskUnreachable } from './settling.js';
import { backoff } from './timings.js';
import type { TurnRun } from './turn-run.js';

/**
 * Following a task the agent named, after a stream: settling from what the stream said, or
 * following the task to its end with GetTask and SubscribeToTask, or by polling (M-2, M-3, R-5,
 * Reading a stream, and recording the task it names, is reading.ts.
 */

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
          (signal) => route.client.subscribeToTask(taskId, callOptions(signal, run.trace, run.caller)),
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
  await cancelTask(ctx, session, route, taskId, reason, run.trace, run.caller);
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
      const task = await route.client.getTask(taskId, callOptions(ctx.signal, run.trace, run.caller));
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
