import { describe, expect, it } from 'vitest';
import { backendObject, secrets } from '../../../test/control/objects.js';
import type { BindingStatus } from '../crds/binding.js';
import { findCondition } from '../status.js';
import { agentBackendStatus, resolveBackendHeaders } from './agent-backend.js';

const now = new Date('2026-11-30T10:00:00Z');

const cardOf = (status: 'True' | 'False', reason: string, withCard = status === 'True'): BindingStatus => ({
  conditions: [
    {
      type: 'CardAccepted',
      status,
      reason,
      message: `card ${reason}`,
      lastTransitionTime: '2026-11-30T09:00:00Z',
    },
  ],
  ...(withCard
    ? {
        card: {
          name: 'Echo',
          version: '1',
          protocolVersion: '0.3',
          streaming: true,
          extensions: [],
          fetchedAt: '2026-11-30T09:00:00Z',
        },
      }
    : {}),
});

describe('resolveBackendHeaders', () => {
  it('reads values from Secrets of the namespace', () => {
    const result = resolveBackendHeaders(
      backendObject({ headers: [{ name: 'X-Key', valueFrom: { secretKeyRef: { name: 'k', key: 'v' } } }] }),
      secrets({ k: { v: 'abc' } }),
    );
    expect(result).toEqual({ ok: true, headers: { 'X-Key': 'abc' } });
  });

  it('refuses a Secret value that would split the header, without echoing it', () => {
    const result = resolveBackendHeaders(
      backendObject({ headers: [{ name: 'X-Key', valueFrom: { secretKeyRef: { name: 'k', key: 'v' } } }] }),
      secrets({ k: { v: 'a\r\nInjected: 1' } }),
    );
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.condition.reason).toBe('InvalidSpec');
      expect(result.condition.message).not.toContain('Injected');
    }
  });
});

describe('agentBackendStatus', () => {
  const headers = { ok: true as const, headers: {} };

  it('is Ready with the card one of its Bindings accepted', () => {
    const status = agentBackendStatus({
      backend: backendObject(),
      headers,
      bindings: [
        { name: 'b', status: cardOf('False', 'CredentialsRejected') },
        { name: 'a', status: cardOf('True', 'CardAccepted') },
      ],
      now,
    });
    expect(findCondition(status.conditions, 'Ready')).toMatchObject({
      status: 'True',
      observedGeneration: 1,
    });
    expect(status.card).toMatchObject({ name: 'Echo', protocolVersion: '0.3', binding: 'a' });
    expect(status.bindings).toBe(2);
    expect(status.dialect).toBe('a2a');
  });

  it('[DT-3] takes the refusal reason when every Binding was refused', () => {
    const status = agentBackendStatus({
      backend: backendObject(),
      headers,
      bindings: [{ name: 'a', status: cardOf('False', 'StreamingNotAdvertised') }],
      now,
    });
    expect(findCondition(status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'StreamingNotAdvertised',
    });
    expect(findCondition(status.conditions, 'Ready')?.message).toContain('Binding a');
  });

  it('[P-1] shows the polling in force in its status, and none when it is off', () => {
    const polled = agentBackendStatus({
      backend: backendObject({ polling: { enabled: true, interval: '2s', timeout: '1h' } }),
      headers,
      bindings: [],
      now,
    });
    expect(polled.polling).toEqual({ enabled: true, interval: '2s', timeout: '1h' });
    const off = agentBackendStatus({
      backend: backendObject({ polling: { enabled: false, interval: '2s', timeout: '1h' } }),
      headers,
      bindings: [],
      now,
    });
    expect(off.polling).toBeUndefined();
  });

  it('says why it cannot be checked before any Binding uses it', () => {
    const status = agentBackendStatus({ backend: backendObject(), headers, bindings: [], now });
    expect(findCondition(status.conditions, 'Ready')).toMatchObject({
      status: 'Unknown',
      reason: 'NoBindings',
    });
  });

  it('reports a header Secret that is missing', () => {
    const backend = backendObject({
      headers: [{ name: 'X-Key', valueFrom: { secretKeyRef: { name: 'k', key: 'v' } } }],
    });
    const status = agentBackendStatus({
      backend,
      headers: resolveBackendHeaders(backend, secrets({})),
      bindings: [{ name: 'a', status: cardOf('True', 'CardAccepted') }],
      now,
    });
    expect(findCondition(status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'SecretNotFound',
    });
    expect(findCondition(status.conditions, 'HeadersResolved')?.message).toContain('Secret "k" not found');
  });
});
