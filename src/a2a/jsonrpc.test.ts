import { describe, expect, it } from 'vitest';
import {
  AgentBusyError,
  AgentThrottledError,
  AgentUnavailableError,
  AnswerRejectedError,
  CredentialsRejectedError,
  IdentityRefusedError,
  MalformedResponseError,
  NotSentError,
  OutcomeUnknownError,
  RedirectRefusedError,
  RpcError,
  TaskNotFoundError,
} from '../core/agent/errors.js';
import { decodeResponse, errorFromRpc, errorFromStatus } from './jsonrpc.js';

const now = 0;
const rpc = (code: number) => ({ code, message: 'agent says: secret internals' });

describe('JSON-RPC envelopes', () => {
  it('reads a result and checks the id', () => {
    expect(decodeResponse('{"jsonrpc":"2.0","id":"7","result":{"a":1}}', '7')).toEqual({
      ok: true,
      result: { a: 1 },
    });
    expect(() => decodeResponse('{"jsonrpc":"2.0","id":"8","result":{}}', '7')).toThrow(
      MalformedResponseError,
    );
  });

  it('reads an error, accepting a null id', () => {
    expect(decodeResponse('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"m"}}', '7')).toEqual({
      ok: false,
      error: { code: -32001, message: 'm', data: undefined },
    });
  });

  it('refuses what is not a JSON-RPC response', () => {
    for (const body of ['nope', '[]', '{"id":"7"}', '{"id":"7","error":{"code":"x"}}']) {
      expect(() => decodeResponse(body, '7')).toThrow(MalformedResponseError);
    }
  });
});

describe('error mapping (the contract Errors table)', () => {
  it('[E-1] HTTP 401 and 403 are rejected credentials, whatever the body says', () => {
    for (const status of [401, 403]) {
      const error = errorFromStatus(status, {}, 'send', rpc(-32004), now);
      expect(error).toBeInstanceOf(CredentialsRejectedError);
      expect(error.code).toBe('credentials_rejected');
    }
  });

  it('[E-2] -31403 is an identity refused, on any call', () => {
    expect(errorFromRpc(rpc(-31403), 'send')).toBeInstanceOf(IdentityRefusedError);
    expect(errorFromRpc(rpc(-31403), 'other')).toBeInstanceOf(IdentityRefusedError);
  });

  it('[E-3] -32004 to a send or an answer is busy; to another method it is an unsupported operation', () => {
    expect(errorFromRpc(rpc(-32004), 'send')).toBeInstanceOf(AgentBusyError);
    expect(errorFromRpc(rpc(-32004), 'answer')).toBeInstanceOf(AgentBusyError);
    const other = errorFromRpc(rpc(-32004), 'other');
    expect(other).toBeInstanceOf(RpcError);
    expect((other as RpcError).isUnsupported).toBe(true);
  });

  it('[E-4] -32603 to an answer is a rejected answer; to a new turn the outcome is unknown', () => {
    expect(errorFromRpc(rpc(-32603), 'answer')).toBeInstanceOf(AnswerRejectedError);
    expect(errorFromRpc(rpc(-32603), 'send')).toBeInstanceOf(OutcomeUnknownError);
    // The JS SDK sends -32603 with HTTP 500: the code wins over the status.
    expect(errorFromStatus(500, {}, 'answer', rpc(-32603), now)).toBeInstanceOf(AnswerRejectedError);
  });

  it('[E-5] -32001 is task not found', () => {
    expect(errorFromRpc(rpc(-32001), 'other')).toBeInstanceOf(TaskNotFoundError);
  });

  it('[E-6] other 4xx are not sent; 408 and 429 are throttling, with Retry-After', () => {
    for (const status of [400, 404, 405, 413, 422]) {
      expect(errorFromStatus(status, {}, 'send', undefined, now)).toBeInstanceOf(NotSentError);
    }
    const throttled = errorFromStatus(429, { retryAfter: '7' }, 'send', undefined, now);
    expect(throttled).toBeInstanceOf(AgentThrottledError);
    expect(throttled.retryAfterMs).toBe(7000);
    expect(errorFromStatus(408, {}, 'send', undefined, now)).toBeInstanceOf(AgentThrottledError);
  });

  it('[E-7] 5xx to a send is an unknown outcome; to another call the agent is unavailable', () => {
    const unknown = errorFromStatus(503, { retryAfter: '30' }, 'send', undefined, now);
    expect(unknown).toBeInstanceOf(OutcomeUnknownError);
    expect(unknown.retryAfterMs).toBe(30_000);
    expect(errorFromStatus(502, {}, 'other', undefined, now)).toBeInstanceOf(AgentUnavailableError);
  });

  it('[DT-5] a 3xx is a refused redirect, which is a call not sent', () => {
    const error = errorFromStatus(307, { location: 'http://evil.example/' }, 'send', undefined, now);
    expect(error).toBeInstanceOf(RedirectRefusedError);
    expect(error).toBeInstanceOf(NotSentError);
    expect(error.code).toBe('redirect_refused');
  });

  it('[E-9] keeps the agent message apart from our own message', () => {
    const error = errorFromRpc(rpc(-32001), 'other');
    expect(error.message).not.toContain('secret internals');
    expect(error.peerMessage).toBe('agent says: secret internals');
  });

  it('other JSON-RPC errors to a send mean the message was refused, not run', () => {
    for (const code of [-32600, -32601, -32602, -32005, -32009]) {
      const error = errorFromRpc(rpc(code), 'send');
      expect(error).toBeInstanceOf(NotSentError);
    }
  });
});
