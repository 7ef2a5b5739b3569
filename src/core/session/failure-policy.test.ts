// Over our ~450-line rule as one piece: the failure policy's table, one row per error class and
// situation, read as the contract's Errors table is, in one place.
import { describe, expect, it } from 'vitest';
import {
  AgentBusyError,
  AgentThrottledError,
  AgentUnavailableError,
  AnswerRejectedError,
  CardFetchError,
  CredentialsRejectedError,
  IdentityExchangeRefusedError,
  IdentityProviderUnavailableError,
  IdentityRefusedError,
  LostConnectionError,
  MalformedResponseError,
  NoJsonRpcInterfaceError,
  NotSentError,
  OutcomeUnknownError,
  RedirectRefusedError,
  RpcError,
  StreamIdleError,
  StreamingNotAdvertisedError,
  TaskNotFoundError,
  UnsupportedExtensionRequiredError,
} from '../agent/errors.js';
import {
  afterCancelFailure,
  afterLookupFailure,
  afterReadFailure,
  afterSendFailure,
  afterSubscribeFailure,
  codeOf,
  endsAcceptedTurn,
  nextPoll,
  type SendSituation,
} from './failure-policy.js';
import { DEFAULT_TIMINGS } from './timings.js';

// The contract's durations: 1 s doubling to 1 min, 15 min to give up, 2 min before "busy", 1 h
// without a sign of life, 3 cancel tries.
const timings = DEFAULT_TIMINGS;
const MIN = 60_000;
const early: SendSituation = { attempts: 1, sinceFirstSentMs: 0, toldBusy: false, answering: false };
const late: SendSituation = { ...early, attempts: 9, sinceFirstSentMs: 15 * MIN };

describe('what a failed send means', () => {
  it.each([
    [
      'E-1 credentials rejected: fails, told why, with the status',
      new CredentialsRejectedError(401),
      early,
      {
        kind: 'fail',
        code: 'credentials_rejected',
        notice: { kind: 'credentials-rejected' },
        credentialsStatus: 401,
      },
    ],
    [
      'E-1 even after 15 minutes: still the credentials, not "unreachable"',
      new CredentialsRejectedError(403),
      late,
      {
        kind: 'fail',
        code: 'credentials_rejected',
        notice: { kind: 'credentials-rejected' },
        credentialsStatus: 403,
      },
    ],
    [
      'E-2 identity refused: fails',
      new IdentityRefusedError(),
      early,
      { kind: 'fail', code: 'identity_refused', notice: { kind: 'identity-refused' } },
    ],
    [
      'a per-person exchange refused at the identity provider: fails, told which agent and what it said',
      new IdentityExchangeRefusedError('invalid_grant', 'support-agent'),
      early,
      {
        kind: 'fail',
        code: 'identity_exchange_refused',
        notice: { kind: 'identity-exchange-refused', agent: 'support-agent', providerError: 'invalid_grant' },
      },
    ],
    [
      'the identity provider down: waited for as for a busy agent, the thread told at once',
      new IdentityProviderUnavailableError('unreachable'),
      { ...early, attempts: 2 },
      {
        kind: 'busy',
        code: 'identity_provider_unavailable',
        waitMs: 2_000,
        tellAfterMs: 0,
        told: { kind: 'identity-provider-unavailable' },
      },
    ],
    [
      'the identity provider still down after 15 minutes: still waited for, told once',
      new IdentityProviderUnavailableError('HTTP 503'),
      { ...late, toldBusy: true },
      {
        kind: 'busy',
        code: 'identity_provider_unavailable',
        waitMs: MIN,
        tellAfterMs: null,
        told: { kind: 'identity-provider-unavailable' },
      },
    ],
    [
      'DT-1 no JSON-RPC interface: fails, told our reason',
      new NoJsonRpcInterfaceError(),
      early,
      {
        kind: 'fail',
        code: 'no_jsonrpc_interface',
        notice: { kind: 'agent-refused', reason: 'agent card lists no JSON-RPC interface' },
      },
    ],
    [
      'DT-3 streaming not advertised: fails',
      new StreamingNotAdvertisedError(),
      early,
      {
        kind: 'fail',
        code: 'streaming_not_advertised',
        notice: {
          kind: 'agent-refused',
          reason:
            'agent card does not advertise capabilities.streaming: true (enable spec.polling on its AgentBackend to reach it by polling)',
        },
      },
    ],
    [
      'DT-4 an unsupported extension required: fails',
      new UnsupportedExtensionRequiredError(['urn:x']),
      early,
      {
        kind: 'fail',
        code: 'unsupported_extension_required',
        notice: { kind: 'agent-refused', reason: 'agent requires an unsupported extension' },
      },
    ],
    [
      'E-4 an answer rejected: its paused task is cancelled',
      new AnswerRejectedError(),
      { ...early, answering: true },
      { kind: 'answer-rejected', code: 'answer_rejected' },
    ],
    [
      'E-4 to a turn that answers nothing: an unknown outcome, looked up',
      new AnswerRejectedError(),
      early,
      { kind: 'look-up', code: 'answer_rejected', waitMs: 1_000 },
    ],
    ['E-5 the task is gone: the session is gone', new TaskNotFoundError(), early, { kind: 'session-gone' }],
    [
      'E-3 busy: waits the backoff, too soon to tell the thread',
      new AgentBusyError(),
      { ...early, attempts: 2, sinceFirstSentMs: 10_000 },
      { kind: 'busy', code: 'agent_busy', waitMs: 2_000, tellAfterMs: null, told: { kind: 'agent-busy' } },
    ],
    [
      'E-3 busy past 2 minutes: the thread is told at once',
      new AgentBusyError(),
      { ...early, attempts: 6, sinceFirstSentMs: 3 * MIN },
      { kind: 'busy', code: 'agent_busy', waitMs: 32_000, tellAfterMs: 0, told: { kind: 'agent-busy' } },
    ],
    [
      'E-3 busy, the thread told before: not told again',
      new AgentBusyError(),
      { ...early, attempts: 6, sinceFirstSentMs: 3 * MIN, toldBusy: true },
      { kind: 'busy', code: 'agent_busy', waitMs: 32_000, tellAfterMs: null, told: { kind: 'agent-busy' } },
    ],
    [
      'E-3 busy after 15 minutes: still waited for, never "unreachable"',
      new AgentBusyError(),
      { ...late, toldBusy: true },
      { kind: 'busy', code: 'agent_busy', waitMs: MIN, tellAfterMs: null, told: { kind: 'agent-busy' } },
    ],
    [
      'E-8 a Retry-After of a day: waited, the notice split off at 2 minutes',
      new AgentBusyError({ retryAfterMs: 24 * 60 * MIN }),
      early,
      {
        kind: 'busy',
        code: 'agent_busy',
        waitMs: 24 * 60 * MIN,
        tellAfterMs: 2 * MIN,
        told: { kind: 'agent-busy' },
      },
    ],
    [
      'HTTP 429: throttled is waited for like busy',
      new AgentThrottledError(429, { retryAfterMs: 5_000 }),
      early,
      {
        kind: 'busy',
        code: 'agent_throttled',
        waitMs: 5_000,
        tellAfterMs: null,
        told: { kind: 'agent-busy' },
      },
    ],
    [
      'E-6 not sent: sent again after the backoff',
      new NotSentError('HTTP 400'),
      { ...early, attempts: 3 },
      { kind: 'resend', code: 'not_sent', waitMs: 4_000 },
    ],
    [
      'DT-5 a redirect: not sent, so sent again',
      new RedirectRefusedError(302, 'https://elsewhere.example'),
      early,
      { kind: 'resend', code: 'redirect_refused', waitMs: 1_000 },
    ],
    [
      'DT-2 the card could not be read: sent again',
      new CardFetchError('HTTP 503 from the card'),
      early,
      { kind: 'resend', code: 'card_fetch_failed', waitMs: 1_000 },
    ],
    [
      'E-6 not sent for 15 minutes: "the agent could not be reached"',
      new NotSentError('HTTP 400'),
      late,
      { kind: 'fail', code: 'not_sent', notice: { kind: 'agent-unreachable' } },
    ],
    [
      'E-7 outcome unknown: looked up, the backoff capped at a minute',
      new OutcomeUnknownError('HTTP 502'),
      { ...early, attempts: 30 },
      { kind: 'look-up', code: 'outcome_unknown', waitMs: MIN },
    ],
    [
      'E-7 a Retry-After longer than the backoff wins',
      new OutcomeUnknownError('HTTP 503', { retryAfterMs: 30_000 }),
      early,
      { kind: 'look-up', code: 'outcome_unknown', waitMs: 30_000 },
    ],
    [
      'DT-6 the connection lost before any event: looked up',
      new LostConnectionError('headers-timeout', 0),
      early,
      { kind: 'look-up', code: 'lost_connection', waitMs: 1_000 },
    ],
    [
      'a stream idle before the task was named: looked up',
      new StreamIdleError(30_000, 0),
      early,
      { kind: 'look-up', code: 'stream_idle', waitMs: 1_000 },
    ],
    [
      'a malformed answer: looked up',
      new MalformedResponseError('not JSON'),
      early,
      { kind: 'look-up', code: 'malformed_response', waitMs: 1_000 },
    ],
    [
      'an error that is not the agent’s: looked up, code "error"',
      new TypeError('boom'),
      early,
      { kind: 'look-up', code: 'error', waitMs: 1_000 },
    ],
    [
      'R-1 outcome unknown for 15 minutes: "the agent could not be reached"',
      new OutcomeUnknownError('no task named'),
      late,
      { kind: 'fail', code: 'outcome_unknown', notice: { kind: 'agent-unreachable' } },
    ],
  ] as const)('%s', (_name, failure, situation, verdict) => {
    expect(afterSendFailure(failure, situation, timings)).toStrictEqual(verdict);
  });
});

describe('a stream that ended after the agent named the task', () => {
  it.each([
    ['E-4 an answer rejected ends the turn', new AnswerRejectedError(), true],
    ['E-5 the task gone ends the turn', new TaskNotFoundError(), true],
    ['E-1 credentials rejected end the turn', new CredentialsRejectedError(401), true],
    ['E-2 identity refused ends the turn', new IdentityRefusedError(), true],
    ['a lost connection: the task is followed', new LostConnectionError('connection-dropped', 3), false],
    ['an idle stream: the task is followed', new StreamIdleError(30_000, 2), false],
    ['a malformed event: the task is followed', new MalformedResponseError('bad SSE'), false],
    ['no failure: the task is followed', undefined, false],
  ] as const)('%s', (_name, failure, ends) => {
    expect(endsAcceptedTurn(failure)).toBe(ends);
  });
});

describe('what a failed ListTasks lookup means', () => {
  it.each([
    [
      'M-5 a lookup failed: tried again, the backoff growing per failed lookup',
      new AgentUnavailableError(503),
      { sinceFirstSentMs: 0, lookups: 3 },
      { kind: 'retry', reason: 'lookup:agent_unavailable', waitMs: 8_000 },
    ],
    [
      'M-5 with a Retry-After: waited that long',
      new AgentUnavailableError(503, { retryAfterMs: 20_000 }),
      { sinceFirstSentMs: 0, lookups: 1 },
      { kind: 'retry', reason: 'lookup:agent_unavailable', waitMs: 20_000 },
    ],
    [
      'E-1 credentials rejected to a lookup: the turn fails',
      new CredentialsRejectedError(401),
      { sinceFirstSentMs: 0, lookups: 1 },
      {
        kind: 'fail',
        code: 'credentials_rejected',
        notice: { kind: 'credentials-rejected' },
        credentialsStatus: 401,
      },
    ],
    [
      'E-2 identity refused to a lookup: the turn fails',
      new IdentityRefusedError(),
      { sinceFirstSentMs: 0, lookups: 1 },
      { kind: 'fail', code: 'identity_refused', notice: { kind: 'identity-refused' } },
    ],
    [
      'M-5 lookups failing for 15 minutes: "the agent could not be reached", whatever the error',
      new CredentialsRejectedError(401),
      { sinceFirstSentMs: 15 * MIN, lookups: 9 },
      { kind: 'fail', code: 'credentials_rejected', notice: { kind: 'agent-unreachable' } },
    ],
  ] as const)('%s', (_name, error, situation, verdict) => {
    expect(afterLookupFailure(error, situation, timings)).toStrictEqual(verdict);
  });
});

describe('what a failed GetTask means', () => {
  it.each([
    ['E-5 the task is gone', new TaskNotFoundError(), { attempt: 0, sinceActivityMs: 0 }, { kind: 'gone' }],
    [
      'E-1 credentials rejected: the task is let go',
      new CredentialsRejectedError(403),
      { attempt: 0, sinceActivityMs: 0 },
      {
        kind: 'refused',
        code: 'credentials_rejected',
        notice: 'credentials-rejected',
        credentialsStatus: 403,
      },
    ],
    [
      'E-2 identity refused: the task is let go',
      new IdentityRefusedError(),
      { attempt: 0, sinceActivityMs: 0 },
      { kind: 'refused', code: 'identity_refused', notice: 'identity-refused' },
    ],
    [
      'M-2 a failed read: read again after the backoff',
      new AgentUnavailableError(500),
      { attempt: 2, sinceActivityMs: 10 * MIN },
      { kind: 'retry', waitMs: 4_000 },
    ],
    [
      'a failed read with a Retry-After: waited that long',
      new AgentUnavailableError(503, { retryAfterMs: 45_000 }),
      { attempt: 0, sinceActivityMs: 0 },
      { kind: 'retry', waitMs: 45_000 },
    ],
    [
      'M-4 reads failing for an hour without a sign of life: the turn fails',
      new LostConnectionError('connection-dropped', 0),
      { attempt: 70, sinceActivityMs: 60 * MIN },
      { kind: 'unreachable', code: 'lost_connection' },
    ],
  ] as const)('%s', (_name, error, situation, verdict) => {
    expect(afterReadFailure(error, situation, timings)).toStrictEqual(verdict);
  });
});

describe('what a failed SubscribeToTask means', () => {
  it.each([
    ['E-5 the task is gone', new TaskNotFoundError(), { kind: 'gone' }],
    [
      'E-1 credentials rejected: the task is let go',
      new CredentialsRejectedError(401),
      {
        kind: 'refused',
        code: 'credentials_rejected',
        notice: 'credentials-rejected',
        credentialsStatus: 401,
      },
    ],
    [
      'E-2 identity refused: the task is let go',
      new IdentityRefusedError(),
      { kind: 'refused', code: 'identity_refused', notice: 'identity-refused' },
    ],
    ['M-3 method not found: the task is polled', new RpcError(-32601), { kind: 'poll' }],
    ['M-3 unsupported operation: the task is polled', new RpcError(-32004), { kind: 'poll' }],
    [
      'another JSON-RPC error: the stream is lost, subscribed again',
      new RpcError(-32000),
      { kind: 'lost', code: 'rpc_error' },
    ],
    [
      'a dropped stream: subscribed again',
      new LostConnectionError('connection-dropped', 4),
      { kind: 'lost', code: 'lost_connection' },
    ],
  ] as const)('%s', (_name, error, verdict) => {
    expect(afterSubscribeFailure(error)).toStrictEqual(verdict);
  });
});

describe('what a failed CancelTask means', () => {
  it.each([
    ['the task is gone: nothing left to cancel', new TaskNotFoundError(), 0, { kind: 'done' }],
    [
      'E-1 credentials rejected: not tried again',
      new CredentialsRejectedError(401),
      0,
      { kind: 'give-up', credentialsStatus: 401 },
    ],
    ['E-2 identity refused: not tried again', new IdentityRefusedError(), 0, { kind: 'give-up' }],
    ['M-4 a failed try: tried again', new AgentUnavailableError(503), 1, { kind: 'retry', waitMs: 2_000 }],
    [
      'M-4 the last of three tries: reported as failed',
      new AgentUnavailableError(503),
      2,
      { kind: 'exhausted' },
    ],
  ] as const)('%s', (_name, error, attempt, verdict) => {
    expect(afterCancelFailure(error, attempt, timings)).toStrictEqual(verdict);
  });
});

describe('codeOf', () => {
  it('is the agent error’s own code, or "error" for anything else', () => {
    expect(codeOf(new StreamIdleError(1, 0))).toBe('stream_idle');
    expect(codeOf(new RangeError('x'))).toBe('error');
    expect(codeOf('a string')).toBe('error');
  });
});

describe('when a polled task is read again', () => {
  const polling = { intervalMs: 2_000, timeoutMs: 60 * MIN };
  it.each([
    [
      '[P-3] a task that moved: the interval',
      { sinceFirstSentMs: 10_000, unchanged: 0 },
      { kind: 'poll', waitMs: 2_000 },
    ],
    [
      '[P-3] one unchanged read: twice the interval',
      { sinceFirstSentMs: 10_000, unchanged: 1 },
      { kind: 'poll', waitMs: 4_000 },
    ],
    [
      '[P-3] a task that stays the same: at most 8 times the interval',
      { sinceFirstSentMs: 10_000, unchanged: 40 },
      { kind: 'poll', waitMs: 16_000 },
    ],
    [
      '[P-4] no wait runs past the timeout',
      { sinceFirstSentMs: 60 * MIN - 500, unchanged: 3 },
      { kind: 'poll', waitMs: 500 },
    ],
    [
      '[P-4] the timeout has passed: cancelled',
      { sinceFirstSentMs: 60 * MIN, unchanged: 0 },
      { kind: 'timeout' },
    ],
  ] as const)('%s', (_name, situation, verdict) => {
    expect(nextPoll(situation, polling, timings)).toEqual(verdict);
  });

  it('[P-3] the growth stops at the engine retry cap when 8 intervals would pass it', () => {
    const slow = { intervalMs: 20_000, timeoutMs: 60 * MIN };
    expect(nextPoll({ sinceFirstSentMs: 0, unchanged: 5 }, slow, timings)).toEqual({
      kind: 'poll',
      waitMs: 60_000,
    });
    // An interval longer than the cap is still the interval.
    const slower = { intervalMs: 5 * MIN, timeoutMs: 60 * MIN };
    expect(nextPoll({ sinceFirstSentMs: 0, unchanged: 5 }, slower, timings)).toEqual({
      kind: 'poll',
      waitMs: 5 * MIN,
    });
  });
});
