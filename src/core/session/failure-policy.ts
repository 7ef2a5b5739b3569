import {
  AgentBusyError,
  AgentCallError,
  AgentThrottledError,
  AnswerRejectedError,
  CardFetchError,
  CredentialsRejectedError,
  IdentityExchangeRefusedError,
  IdentityProviderUnavailableError,
  IdentityRefusedError,
  NoJsonRpcInterfaceError,
  NotSentError,
  RpcError,
  SignInRequiredError,
  StreamingNotAdvertisedError,
  TaskNotFoundError,
  UnsupportedExtensionRequiredError,
} from '../agent/errors.js';
import { backoff, type EngineTimings } from './timings.js';

/**
 * What a failed call to an agent means for the turn, by the contract's Errors table (E-*) and
 * its discovery rows (DT-*): fail the turn, retry, look the turn up, send it again, or wait for
 * a busy agent. Pure: the driver does what a verdict says, and failure-policy.test.ts holds the
 * table, one row per error class and situation.
 */

/** The error's stable code, for events and a turn's `error:<code>` outcome. */
export function codeOf(error: unknown): string {
  return error instanceof AgentCallError ? error.code : 'error';
}

/** How the thread is told that its turn failed. */
export type FailNotice =
  | { kind: 'credentials-rejected' | 'identity-refused' | 'agent-unreachable' }
  /** DT-1, DT-3, DT-4: the card makes the agent unusable; `reason` is our own error message. */
  | { kind: 'agent-refused'; reason: string }
  /** A per-person identity's exchange refused at the identity provider (docs/identity.md). */
  | { kind: 'identity-exchange-refused'; agent: string; providerError: string }
  /** A person asked to sign in did not within the turn's 15 minutes. */
  | { kind: 'sign-in-timeout'; agent: string };

/** What a held turn's thread is told, once per turn. */
export type HeldNotice =
  | { kind: 'agent-busy' }
  | { kind: 'identity-provider-unavailable' }
  | { kind: 'sign-in-required'; agent: string; url: string };

/** The turn fails and the thread is told. `credentialsStatus`: E-1, with the HTTP status. */
export interface FailVerdict {
  kind: 'fail';
  code: string;
  notice: FailNotice;
  credentialsStatus?: number;
}

export type SendVerdict =
  | FailVerdict
  /** E-4: the agent rejected an answer: its paused task is cancelled and the thread told. */
  | { kind: 'answer-rejected'; code: string }
  /** E-5: the agent no longer knows the task: the next turn starts a new context. */
  | { kind: 'session-gone' }
  /**
   * E-3: sent again after `waitMs`, for as long as it takes. `tellAfterMs`: when within this
   * wait the thread is told (`told`, once per turn: the agent is busy, after 2 minutes; the
   * identity provider is not answering, at once); null: not now.
   */
  | {
      kind: 'busy';
      code: string;
      waitMs: number;
      tellAfterMs: number | null;
      told: HeldNotice;
    }
  /** Not sent (E-6, DT-2's card): sent again after `waitMs`. */
  | { kind: 'resend'; code: string; waitMs: number }
  /** The outcome is unknown (E-7, R-1, R-2): after `waitMs` the turn is looked up first. */
  | { kind: 'look-up'; code: string; waitMs: number };

export interface SendSituation {
  /** How many times the turn was sent, this attempt included. */
  attempts: number;
  /** Time since the turn was first sent: the start of the 15-minute windows (R-1, E-6). */
  sinceFirstSentMs: number;
  /** The thread was told already that the agent is busy (E-3: once per turn). */
  toldBusy: boolean;
  /** The turn answers a paused task (an answer's rejection cancels that task, E-4). */
  answering: boolean;
}

/** E-1, E-2 at any call, DT-1/3/4 from the card: the turn fails without a retry. */
function refusal(error: unknown): FailVerdict | undefined {
  if (error instanceof CredentialsRejectedError)
    return {
      kind: 'fail',
      code: error.code,
      notice: { kind: 'credentials-rejected' },
      credentialsStatus: error.status,
    };
  if (error instanceof IdentityRefusedError)
    return { kind: 'fail', code: error.code, notice: { kind: 'identity-refused' } };
  if (error instanceof IdentityExchangeRefusedError)
    return {
      kind: 'fail',
      code: error.code,
      notice: { kind: 'identity-exchange-refused', agent: error.agent, providerError: error.providerError },
    };
  if (
    error instanceof NoJsonRpcInterfaceError ||
    error instanceof StreamingNotAdvertisedError ||
    error instanceof UnsupportedExtensionRequiredError
  )
    return { kind: 'fail', code: error.code, notice: { kind: 'agent-refused', reason: error.message } };
  return undefined;
}

function retryAfterOf(error: unknown): number | undefined {
  return error instanceof AgentCallError ? error.retryAfterMs : undefined;
}

/** A send that did not get the agent to name a task (or one the agent ended at once). */
export function afterSendFailure(
  failure: unknown,
  situation: SendSituation,
  timings: EngineTimings,
): SendVerdict {
  const refused = refusal(failure);
  if (refused !== undefined) return refused;
  if (failure instanceof AnswerRejectedError && situation.answering)
    return { kind: 'answer-rejected', code: failure.code };
  if (failure instanceof TaskNotFoundError) return { kind: 'session-gone' };
  const waitMs = backoff(timings, situation.attempts - 1, retryAfterOf(failure));
  if (failure instanceof AgentBusyError || failure instanceof AgentThrottledError) {
    // The notice keeps its own time: a wait longer than that (a Retry-After of up to a day,
    // E-8) is split, so the thread hears it on time, not at the next retry.
    const noticeIn = timings.busyNoticeAfterMs - situation.sinceFirstSentMs;
    const tellAfterMs = !situation.toldBusy && noticeIn < waitMs ? Math.max(0, noticeIn) : null;
    return { kind: 'busy', code: failure.code, waitMs, tellAfterMs, told: { kind: 'agent-busy' } };
  }
  // The identity provider down: the turn is never sent under a weaker identity, so it waits for
  // the provider as for a busy agent, and the thread hears why at once.
  if (failure instanceof IdentityProviderUnavailableError)
    return {
      kind: 'busy',
      code: failure.code,
      waitMs,
      tellAfterMs: situation.toldBusy ? null : 0,
      told: { kind: 'identity-provider-unavailable' },
    };
  // Not signed in: held (never sent under another identity) while the person signs in, for the
  // turn's 15 minutes; the sign-in kicks the session, so the turn goes at once.
  if (failure instanceof SignInRequiredError)
    return situation.sinceFirstSentMs >= timings.giveUpAfterMs
      ? { kind: 'fail', code: failure.code, notice: { kind: 'sign-in-timeout', agent: failure.agent } }
      : {
          kind: 'busy',
          code: failure.code,
          waitMs,
          tellAfterMs: situation.toldBusy ? null : 0,
          told: { kind: 'sign-in-required', agent: failure.agent, url: failure.url },
        };
  // R-1, E-6, DT-2: after 15 minutes, "the agent could not be reached".
  if (situation.sinceFirstSentMs >= timings.giveUpAfterMs)
    return { kind: 'fail', code: codeOf(failure), notice: { kind: 'agent-unreachable' } };
  if (failure instanceof NotSentError || failure instanceof CardFetchError)
    return { kind: 'resend', code: codeOf(failure), waitMs };
  return { kind: 'look-up', code: codeOf(failure), waitMs };
}

/**
 * A stream the agent named a task on, and that ended with `failure`: whether the failure ends
 * the turn (E-1, E-2, E-4, E-5) rather than the task being followed to its end.
 */
export function endsAcceptedTurn(failure: unknown): boolean {
  return (
    failure instanceof AnswerRejectedError ||
    failure instanceof TaskNotFoundError ||
    failure instanceof CredentialsRejectedError ||
    failure instanceof IdentityRefusedError
  );
}

export type LookupVerdict = FailVerdict | { kind: 'retry'; reason: string; waitMs: number };

/**
 * M-5: a ListTasks lookup of a turn whose outcome is unknown failed; `lookups` counts the failed
 * ones, this one included. Retried with a growing backoff, then the turn fails after 15 minutes.
 */
export function afterLookupFailure(
  error: unknown,
  situation: { sinceFirstSentMs: number; lookups: number },
  timings: EngineTimings,
): LookupVerdict {
  if (situation.sinceFirstSentMs >= timings.giveUpAfterMs)
    return { kind: 'fail', code: codeOf(error), notice: { kind: 'agent-unreachable' } };
  if (error instanceof CredentialsRejectedError || error instanceof IdentityRefusedError) {
    const refused = refusal(error);
    if (refused !== undefined) return refused;
  }
  return {
    kind: 'retry',
    reason: `lookup:${codeOf(error)}`,
    waitMs: backoff(timings, situation.lookups, retryAfterOf(error)),
  };
}

/** E-1 or E-2 while a task is followed: the task is let go and its turn fails. */
export interface TaskRefusal {
  kind: 'refused';
  code: string;
  notice: 'credentials-rejected' | 'identity-refused';
  credentialsStatus?: number;
}

function taskRefusal(error: unknown): TaskRefusal | undefined {
  if (error instanceof CredentialsRejectedError)
    return {
      kind: 'refused',
      code: error.code,
      notice: 'credentials-rejected',
      credentialsStatus: error.status,
    };
  if (error instanceof IdentityRefusedError)
    return { kind: 'refused', code: error.code, notice: 'identity-refused' };
  return undefined;
}

export type ReadVerdict =
  /** E-5: the agent no longer knows the task. */
  | { kind: 'gone' }
  | TaskRefusal
  /** Every read failed for as long as a task may go quiet (M-4's hour): its turn fails. */
  | { kind: 'unreachable'; code: string }
  | { kind: 'retry'; waitMs: number };

/** GetTask failed; `attempt` counts the reads of this task before this one (0-based). */
export function afterReadFailure(
  error: unknown,
  situation: { attempt: number; sinceActivityMs: number },
  timings: EngineTimings,
): ReadVerdict {
  if (error instanceof TaskNotFoundError) return { kind: 'gone' };
  const refused = taskRefusal(error);
  if (refused !== undefined) return refused;
  if (situation.sinceActivityMs >= timings.noSignOfLifeMs)
    return { kind: 'unreachable', code: codeOf(error) };
  return { kind: 'retry', waitMs: backoff(timings, situation.attempt, retryAfterOf(error)) };
}

export type SubscribeVerdict =
  | { kind: 'gone' }
  | TaskRefusal
  /** M-3: no SubscribeToTask: live text stops and the task is polled. */
  | { kind: 'poll' }
  /** The stream was lost: the task is read again and subscribed to again. */
  | { kind: 'lost'; code: string };

/** SubscribeToTask failed, or its stream broke. */
export function afterSubscribeFailure(error: unknown): SubscribeVerdict {
  if (error instanceof TaskNotFoundError) return { kind: 'gone' };
  const refused = taskRefusal(error);
  if (refused !== undefined) return refused;
  if (error instanceof RpcError && error.isUnsupported) return { kind: 'poll' };
  return { kind: 'lost', code: codeOf(error) };
}

export type CancelVerdict =
  /** The agent no longer has the task: nothing is left running to cancel. */
  | { kind: 'done' }
  /** E-1, E-2: not retried; the cancel is reported as failed. */
  | { kind: 'give-up'; credentialsStatus?: number }
  | { kind: 'retry'; waitMs: number }
  /** M-4: the tries are used up. */
  | { kind: 'exhausted' };

/** CancelTask failed; `attempt` counts the tries before this one (0-based). */
export function afterCancelFailure(error: unknown, attempt: number, timings: EngineTimings): CancelVerdict {
  if (error instanceof TaskNotFoundError) return { kind: 'done' };
  if (error instanceof CredentialsRejectedError) return { kind: 'give-up', credentialsStatus: error.status };
  if (error instanceof IdentityRefusedError) return { kind: 'give-up' };
  if (attempt + 1 < timings.cancelAttempts) return { kind: 'retry', waitMs: backoff(timings, attempt) };
  return { kind: 'exhausted' };
}

export type PollVerdict =
  /** Read the task again after `waitMs`. */
  | { kind: 'poll'; waitMs: number }
  /** P-4: the task ran past the backend's polling timeout: it is cancelled and the thread told. */
  | { kind: 'timeout' };

export interface PollSituation {
  /** Time since the turn was first sent (the polling timeout counts from there). */
  sinceFirstSentMs: number;
  /** Reads in a row that showed no change in the task (state, status time, answer text). */
  unchanged: number;
}

/**
 * P-3, P-4: after a GetTask read of a polled task that has not settled: when to read it again,
 * or that its time is up. A task that shows progress is read at the backend's interval; one that
 * stays the same is read less often (the interval doubles per unchanged read, up to 8 times it
 * or the engine's retry cap when that is longer). No wait runs past the timeout.
 */
export function nextPoll(
  situation: PollSituation,
  polling: { intervalMs: number; timeoutMs: number },
  timings: EngineTimings,
): PollVerdict {
  const left = polling.timeoutMs - situation.sinceFirstSentMs;
  if (left <= 0) return { kind: 'timeout' };
  const cap = Math.max(polling.intervalMs, Math.min(polling.intervalMs * 8, timings.retryMaxMs));
  const grown = polling.intervalMs * 2 ** Math.min(situation.unchanged, 3);
  return { kind: 'poll', waitMs: Math.min(Math.min(grown, cap), left) };
}
