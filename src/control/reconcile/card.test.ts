import { describe, expect, it } from 'vitest';
import {
  CardFetchError,
  CredentialsRejectedError,
  LostConnectionError,
  NoJsonRpcInterfaceError,
  StreamingNotAdvertisedError,
  UnsupportedExtensionRequiredError,
} from '../../core/agent/errors.js';
import { refusedCard, sameOutcome } from './card.js';

describe('refusedCard', () => {
  it.each([
    [
      '[DT-1] NoJsonRpcInterfaceError',
      new NoJsonRpcInterfaceError(),
      'NoJSONRPCInterface',
      'no JSON-RPC interface',
    ],
    [
      '[DT-3] StreamingNotAdvertisedError',
      new StreamingNotAdvertisedError(),
      'StreamingNotAdvertised',
      'capabilities.streaming',
    ],
    [
      '[DT-4] UnsupportedExtensionRequiredError',
      new UnsupportedExtensionRequiredError(['urn:x']),
      'UnsupportedExtensionRequired',
      'urn:x',
    ],
    ['[E-1] CredentialsRejectedError', new CredentialsRejectedError(401), 'CredentialsRejected', 'HTTP 401'],
    [
      '[DT-2] CardFetchError',
      new CardFetchError('the agent card could not be fetched (HTTP 404)'),
      'CardFetchFailed',
      'HTTP 404',
    ],
  ])('%s maps the client error to its reason', (_row, error, reason, words) => {
    const outcome = refusedCard(error);
    expect(outcome).toMatchObject({ ok: false, reason });
    if (!outcome.ok) expect(outcome.message).toContain(words);
  });

  it('adds a network cause in a few words (errno code, or our own error)', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const a = refusedCard(new CardFetchError('the agent card could not be fetched', { cause: refused }));
    expect(a.ok ? '' : a.message).toBe('the agent card could not be fetched (ECONNREFUSED)');
    const b = refusedCard(
      new CardFetchError('the agent card could not be fetched', {
        cause: new LostConnectionError('headers-timeout', 0),
      }),
    );
    expect(b.ok ? '' : b.message).toContain('no response headers in time');
  });

  it('compares outcomes by reason and message', () => {
    expect(
      sameOutcome(
        refusedCard(new StreamingNotAdvertisedError()),
        refusedCard(new StreamingNotAdvertisedError()),
      ),
    ).toBe(true);
    expect(
      sameOutcome(refusedCard(new StreamingNotAdvertisedError()), refusedCard(new NoJsonRpcInterfaceError())),
    ).toBe(false);
  });
});
