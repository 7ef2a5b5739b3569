import { OutcomeUnknownError } from '../agent/errors.js';
import type { Artifact } from '../agent/model.js';
import { labelled, withCarried } from '../compose.js';
import type { AgentRoute } from '../ports.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import { type AnswerTarget, callerOf, callOptions, type DriverContext } from './context.js';
import {
  afterLookupFailure,
  afterSendFailure,
  codeOf,
  endsAcceptedTurn,
  type FailVerdict,
  type HeldNotice,
} from './failure-policy.js';
import { afterStream, pollingOf, readTask } from './following.js';
import { agentRefused, identityExchangeRefused, notice, signInRequired, signInTimeout } from './notices.js';
import { withPeopleNamed } from './person-label.js';
import { sendPolled } from './polling.js';
import { acceptTask, consumeStream } from './reading.js';
import {
  cancelPaused,
  cancelTask,
  decisionNotSent,
  failedEvent,
  failTurn,
  sessionGone,
  settleTurn,
} from './settling.js';

/**
 * Sending a turn: marking it `sending` before the send (its attempt counted, the start of its
 * 15-minute windows set), one attempt and what its stream says, what a failed send means (the
 * verdicts of failure-policy.ts), and a turn whose outcome is unknown — looked up, or sent
 * again with the same messageId.
 */

export async function sendTurn(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
  open: TurnRecord[],
  question?: AnswerTarget,
  baseline?: readonly Artifact[],
): Promise<void> {
  const { clock } = ctx.deps;
  // S-7: replies that did not address the broker, queued before this turn, travel with it.
  const queued = turn.kind === 'message' ? open.filter((t) => t.kind === 'context' && t.seq < turn.seq) : [];
  // S-6: each label names its person as the surface knows them now (person-label.ts).
  const [named = turn, ...carried] = await withPeopleNamed(ctx, session, [turn, ...queued]);
  const text = withCarried(
    named.text,
    carried.map((t) => ({ label: t.label, text: t.text })),
  );
  const now = clock.now();
  const sending: TurnRecord = {
    ...named,
    text,
    state: 'sending',
    attempts: turn.attempts + 1,
    firstSentAt: turn.firstSentAt ?? now,
  };
  const settledCarried = carried.map((t) => ({
    ...t,
    state: 'settled' as const,
    outcome: `carried:${turn.id}`,
  }));
  // Alerts that came for this thread while its trigger turn waited go with it: one agent run for
  // a burst of deliveries, not one each, back to back.
  const merged = turn.kind === 'trigger' ? mergeableTriggers(turn, open, ctx.deps.maxTextLength) : [];
  if (merged.length > 0) sending.text = withMerged(sending.text, merged);
  const settledMerged = merged.map((t) => ({
    ...t,
    state: 'settled' as const,
    outcome: `merged:${turn.id}`,
  }));
  await ctx.commit(session, [sending, ...settledCarried, ...settledMerged]);
  // Counted as merged (a bounded label); the stored outcome names the turn it went with.
  for (const t of settledMerged) failedEvent(ctx, session, t, 'merged');
  const fresh = await ctx.reload(session.id);
  await attemptSend(ctx, fresh, route, sending, question, baseline);
}

/**
 * The trigger turns queued right behind a trigger turn (before any person's message, so nothing
 * is sent ahead of what a person wrote), as many as fit in one turn's text.
 */
function mergeableTriggers(turn: TurnRecord, open: readonly TurnRecord[], maxLength: number): TurnRecord[] {
  const merged: TurnRecord[] = [];
  let length = turn.text.length;
  for (const t of open) {
    if (t.seq <= turn.seq || t.kind === 'context') continue;
    if (t.kind !== 'trigger' || t.state !== 'queued') break;
    length += t.text.length + MERGED_SEPARATOR.length;
    if (length > maxLength) break;
    merged.push(t);
  }
  return merged;
}

const MERGED_SEPARATOR = '\n\nMore for this thread arrived while that waited:\n\n';

function withMerged(text: string, merged: readonly TurnRecord[]): string {
  return [text, ...merged.map((t) => t.text)].join(MERGED_SEPARATOR);
}

/** One send of a turn already marked `sending`, and what follows from its stream. */
export async function attemptSend(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  stored: TurnRecord,
  question?: AnswerTarget,
  baseline?: readonly Artifact[],
): Promise<void> {
  const { clock } = ctx.deps;
  // A turn stored `sending` as it was taken has not had its person looked up (person-label.ts).
  const [turn = stored] = await withPeopleNamed(ctx, session, [stored]);
  ctx.emit(session, {
    type: 'turn.sending',
    turnId: turn.id,
    attempt: turn.attempts,
    contextId: session.contextId,
  });
  const run = ctx.runFor(session, turn);
  if (baseline !== undefined) run.answer.setBaseline(baseline);
  const isAnswer = turn.kind === 'answer';
  const message = {
    messageId: turn.id,
    // S-6: the label line goes in front here, at every send, so a resend sends the same text.
    text: labelled(turn.label, turn.text),
    ...(isAnswer
      ? { taskId: turn.taskId ?? '', contextId: question?.contextId ?? session.contextId ?? '' }
      : session.contextId === null
        ? {}
        : { contextId: session.contextId }),
    ...(turn.metadata === null ? {} : { metadata: turn.metadata }),
  };
  const extensions = route.dialect.messageExtensions(turn.metadata);
  if (extensions.length > 0) Object.assign(message, { extensions });
  const started = clock.now();
  let failure: unknown;
  try {
    // P-1: a Binding that polls sends an agent that does not stream its turn without a stream.
    if ((await pollingOf(route)) !== undefined) {
      if (await sendPolled(ctx, session, route, turn, run, message, started)) return;
    } else {
      await consumeStream(
        ctx,
        session,
        route,
        turn,
        run,
        (signal) => route.client.sendStreamingMessage(message, callOptions(signal, run.trace, run.caller)),
        started,
      );
    }
  } catch (error) {
    failure = error;
  }
  ctx.checkStop();
  // An answer names its task before any event; only events say the agent took the send.
  if (run.taskId !== null && run.eventsSeen > 0) {
    // The agent took the turn: whatever happened to the stream, follow the task to its end,
    // unless what ended the stream ends the turn (E-1, E-2, E-4, E-5).
    const current = await ctx.reload(session.id);
    // Accepted by this driver a moment ago (or still `sending`, an answer): known, not read.
    const accepted = ctx.writtenTurn(turn.id) ?? (await ctx.deps.store.getTurn(turn.id)) ?? turn;
    if (failure !== undefined)
      ctx.emit(session, { type: 'agent.error', turnId: turn.id, code: codeOf(failure) });
    if (endsAcceptedTurn(failure)) {
      await sendFailed(ctx, current, route, accepted, failure, question);
      return;
    }
    if (failure !== undefined)
      ctx.emit(session, {
        type: 'stream.lost',
        turnId: turn.id,
        taskId: run.taskId,
        code: codeOf(failure),
      });
    await afterStream(ctx, current, route, accepted, run, failure !== undefined);
    return;
  }
  if (failure === undefined) {
    // a bare Message, events naming no task, or a stream that closed empty: the
    // outcome is unknown.
    failure = new OutcomeUnknownError(
      run.sawUnnamedEvents
        ? 'the agent answered without naming a task'
        : 'the agent closed the stream without any event',
    );
  }
  ctx.emit(session, { type: 'agent.error', turnId: turn.id, code: codeOf(failure) });
  await sendFailed(ctx, session, route, turn, failure, question);
}

/**
 * An answer the agent did not take (sent again after a failed send): its task is read first,
 * and the answer goes again while the task still waits for it, with what the task already
 * shows not shown again. A task that moved on meanwhile takes no answer: the thread is told.
 */
export async function resendAnswer(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
  open: TurnRecord[],
): Promise<void> {
  const taskId = turn.taskId ?? '';
  const current = await readTask(ctx, session, route, ctx.runFor(session, null), taskId);
  if (current === 'gone') return;
  if (current.status.state !== 'input-required') return decisionNotSent(ctx, session, turn);
  const question: AnswerTarget = { taskId, contextId: current.contextId };
  await sendTurn(ctx, session, route, turn, open, question, current.artifacts);
}

/** A send that did not get the agent to name a task: retry, look up, or fail the turn. */
export async function sendFailed(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
  failure: unknown,
  question?: AnswerTarget,
): Promise<void> {
  const verdict = afterSendFailure(
    failure,
    {
      attempts: turn.attempts,
      sinceFirstSentMs: ctx.sinceFirstSent(turn),
      toldBusy: turn.busyNoticeAt !== null,
      answering: question !== undefined,
    },
    ctx.deps.timings,
  );
  switch (verdict.kind) {
    case 'fail':
      return failWith(ctx, session, route, turn, verdict);
    case 'answer-rejected':
      // E-4: the paused task is cancelled and the thread told.
      await settleTurn(ctx, session, turn, `error:${verdict.code}`);
      if (question !== undefined)
        await cancelPaused(ctx, await ctx.reload(session.id), route, question, 'answer-rejected', turn.id);
      return;
    case 'session-gone':
      return sessionGone(ctx, session, turn, turn.taskId ?? '');
    case 'busy': {
      // E-3: sent again after a backoff, for as long as it takes; the thread is told once.
      ctx.emit(session, { type: 'agent.busy', turnId: turn.id, code: verdict.code, delayMs: verdict.waitMs });
      let told = turn;
      let waitLeft = verdict.waitMs;
      if (verdict.tellAfterMs !== null) {
        if (verdict.tellAfterMs > 0) await retryLater(ctx, session, turn, verdict.code, verdict.tellAfterMs);
        waitLeft = verdict.waitMs - verdict.tellAfterMs;
        told = await busyNotice(ctx, session, turn, verdict.told);
      }
      await retryLater(ctx, session, told, verdict.code, waitLeft);
      return;
    }
    case 'resend': {
      // NotSent, card fetch failures: simply sent again.
      await retryLater(ctx, session, turn, verdict.code, verdict.waitMs);
      const fresh = (await ctx.deps.store.getTurn(turn.id)) ?? turn;
      if (fresh.state === 'sending')
        await ctx.commit(await ctx.reload(session.id), [{ ...fresh, state: 'queued' }]);
      return;
    }
    case 'look-up':
      // Looked up first, which the next step does because the turn is still `sending`.
      await retryLater(ctx, session, turn, verdict.code, verdict.waitMs);
      return;
  }
}

/** The turn fails as the verdict says; the thread is told. */
async function failWith(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
  verdict: FailVerdict,
): Promise<void> {
  if (verdict.credentialsStatus !== undefined)
    ctx.emit(session, { type: 'credentials.rejected', status: verdict.credentialsStatus });
  const said = verdict.notice;
  const told =
    said.kind === 'agent-refused'
      ? agentRefused(said.reason, turn.id)
      : said.kind === 'identity-exchange-refused'
        ? identityExchangeRefused(said.agent, said.providerError, turn.id)
        : said.kind === 'sign-in-timeout'
          ? signInTimeout(said.agent, turn.id)
          : notice(said.kind, turn.id);
  await failTurn(ctx, session, turn, verdict.code, told);
  await dropAnsweredTask(ctx, session, route, turn);
}

/**
 * An answer that never reached its task leaves the task waiting for it, its question already
 * taken: the task is cancelled, so that it is not read later as asking again. The failed turn's
 * notice has told the thread.
 */
async function dropAnsweredTask(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
): Promise<void> {
  if (turn.kind !== 'answer' || turn.taskId === null) return;
  const fresh = await ctx.reload(session.id);
  if (fresh.task?.taskId !== turn.taskId) return;
  await cancelTask(ctx, fresh, route, turn.taskId, 'answer-not-delivered');
  await ctx.commit({ ...(await ctx.reload(session.id)), task: null, question: null }, []);
}

/**
 * E-3: tells the thread the agent is busy (or the identity provider is not answering), once per
 * turn; returns the turn as written.
 */
export async function busyNotice(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
  held: HeldNotice = { kind: 'agent-busy' },
): Promise<TurnRecord> {
  await ctx.notice(
    session,
    held.kind === 'sign-in-required'
      ? signInRequired(held.agent, held.url, turn.id)
      : notice(held.kind, turn.id),
  );
  const told = { ...turn, busyNoticeAt: ctx.deps.clock.now() };
  await ctx.commit(await ctx.reload(session.id), [told]);
  return told;
}

export async function retryLater(
  ctx: DriverContext,
  session: SessionRecord,
  turn: TurnRecord,
  reason: string,
  delayMs: number,
): Promise<void> {
  ctx.emit(session, { type: 'turn.retry', turnId: turn.id, reason, delayMs });
  await ctx.sleep(delayMs);
}

/**
 * A turn whose send may or may not have reached the agent (E-7, R-1, R-8, after a crash):
 * on 1.0 with a context, look for it with ListTasks (M-5, M-6); otherwise, or when it is not
 * found, send it again with the same messageId.
 */
export async function resolveUnknown(
  ctx: DriverContext,
  session: SessionRecord,
  route: AgentRoute,
  turn: TurnRecord,
): Promise<void> {
  const { clock, timings } = ctx.deps;
  ctx.emit(session, { type: 'turn.unknown', turnId: turn.id });
  if (turn.kind === 'answer' && turn.taskId !== null) {
    // An answer names its task: read it and see whether the answer arrived.
    const run = ctx.runFor(session, turn);
    run.taskId = turn.taskId;
    const task = await readTask(ctx, session, route, run, turn.taskId);
    if (task === 'gone') return;
    if (task.history.some((m) => m.messageId === turn.id) || task.status.state !== 'input-required') {
      await acceptTask(ctx, session, turn, run, turn.taskId, task.contextId, clock.now());
      return;
    }
  } else if (session.contextId !== null) {
    let found: Awaited<ReturnType<typeof route.client.findTaskByMessageId>>;
    try {
      if (await route.client.canListTasks()) {
        found = await route.client.findTaskByMessageId(
          session.contextId,
          turn.id,
          callOptions(ctx.signal, ctx.traceOf(session, turn), callerOf(session, turn)),
        );
        ctx.emit(session, {
          type: 'turn.lookup',
          turnId: turn.id,
          result: found === undefined ? 'absent' : 'found',
        });
      } else {
        ctx.emit(session, { type: 'turn.lookup', turnId: turn.id, result: 'unsupported' });
      }
    } catch (error) {
      ctx.checkStop();
      ctx.emit(session, { type: 'turn.lookup', turnId: turn.id, result: 'failed' });
      // M-5: the lookup is retried, then the turn fails after 15 minutes.
      const lookups = (ctx.lookups.get(turn.id) ?? 0) + 1;
      const verdict = afterLookupFailure(
        error,
        { sinceFirstSentMs: ctx.sinceFirstSent(turn), lookups },
        timings,
      );
      if (verdict.kind === 'fail') return failWith(ctx, session, route, turn, verdict);
      ctx.lookups.set(turn.id, lookups);
      await retryLater(ctx, session, turn, verdict.reason, verdict.waitMs);
      return;
    }
    if (found !== undefined) {
      ctx.emit(session, { type: 'turn.found', turnId: turn.id, taskId: found.id });
      const run = ctx.runFor(session, turn);
      await acceptTask(ctx, session, turn, run, found.id, found.contextId, clock.now());
      return;
    }
  }
  if (ctx.sinceFirstSent(turn) >= timings.giveUpAfterMs) {
    await failTurn(ctx, session, turn, 'outcome_unknown', notice('agent-unreachable', turn.id));
    return dropAnsweredTask(ctx, session, route, turn);
  }
  // sent again with the same messageId.
  const again: TurnRecord = { ...turn, attempts: turn.attempts + 1 };
  await ctx.commit(session, [again]);
  ctx.emit(session, { type: 'turn.resent', turnId: turn.id, attempt: again.attempts });
  const question: AnswerTarget | undefined =
    turn.kind === 'answer' && turn.taskId !== null
      ? { taskId: turn.taskId, contextId: session.contextId ?? '' }
      : undefined;
  await attemptSend(ctx, await ctx.reload(session.id), route, again, question);
}
