import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../core/errors.js';
import { ControllerConfigError, loadControllerSettings } from './config.js';

describe('loadControllerSettings', () => {
  it('reads the namespace, pod name, lease name and channel map', () => {
    const settings = loadControllerSettings({
      AGENTKOURIER_NAMESPACE: 'agentkourier',
      POD_NAME: 'agentkourier-0',
      AGENTKOURIER_NAMESPACE_CHANNELS: '{"team-a":["C0123ABCD","direct-messages"],"team-b":[]}',
    });
    expect(settings).toEqual({
      namespace: 'agentkourier',
      podName: 'agentkourier-0',
      leaseName: 'agentkourier-controller',
      namespaceChannels: { 'team-a': ['C0123ABCD', 'direct-messages'], 'team-b': [] },
      watchNamespaces: [],
      metricsPort: 9090,
      secretAccess: { serviceAccount: undefined, secretReaderRole: undefined },
    });
  });

  it('reads the service account and the Secret-reading ClusterRole a 403 status names', () => {
    const settings = loadControllerSettings({
      AGENTKOURIER_NAMESPACE: 'agentkourier',
      AGENTKOURIER_SERVICE_ACCOUNT: 'ak-agentkourier',
      AGENTKOURIER_SECRET_READER_ROLE: 'ak-agentkourier-secret-reader',
    });
    expect(settings.secretAccess).toEqual({
      serviceAccount: { namespace: 'agentkourier', name: 'ak-agentkourier' },
      secretReaderRole: 'ak-agentkourier-secret-reader',
    });
  });

  it('reads the namespaces to watch (sorted, spaces trimmed) and the metrics port', () => {
    const settings = loadControllerSettings({
      AGENTKOURIER_NAMESPACE: 'agentkourier',
      AGENTKOURIER_WATCH_NAMESPACES: ' team-b, team-a ',
      AGENTKOURIER_METRICS_PORT: '9191',
    });
    expect(settings.watchNamespaces).toEqual(['team-a', 'team-b']);
    expect(settings.metricsPort).toBe(9191);
    // Empty means every namespace, as unset does.
    expect(
      loadControllerSettings({ AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_WATCH_NAMESPACES: ' ' })
        .watchNamespaces,
    ).toEqual([]);
  });

  it.each([
    [{}, 'AGENTKOURIER_NAMESPACE'],
    [{ AGENTKOURIER_NAMESPACE: 'Not_A_Namespace' }, 'AGENTKOURIER_NAMESPACE'],
    [
      { AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_NAMESPACE_CHANNELS: '{team-a' },
      'AGENTKOURIER_NAMESPACE_CHANNELS is not valid JSON',
    ],
    [
      { AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_NAMESPACE_CHANNELS: '{"team-a":["#general"]}' },
      'AGENTKOURIER_NAMESPACE_CHANNELS',
    ],
    [{ AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_LEASE_NAME: 'UPPER' }, 'AGENTKOURIER_LEASE_NAME'],
    [
      { AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_WATCH_NAMESPACES: 'team-a,Team_B' },
      'AGENTKOURIER_WATCH_NAMESPACES',
    ],
    [
      { AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_WATCH_NAMESPACES: 'team-a,,team-b' },
      'AGENTKOURIER_WATCH_NAMESPACES',
    ],
    [
      { AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_WATCH_NAMESPACES: 'team-a,team-a' },
      'AGENTKOURIER_WATCH_NAMESPACES lists a namespace twice',
    ],
    [
      {
        AGENTKOURIER_NAMESPACE: 'ns',
        AGENTKOURIER_WATCH_NAMESPACES: Array.from({ length: 101 }, (_, i) => `ns-${i}`).join(','),
      },
      'AGENTKOURIER_WATCH_NAMESPACES may list at most 100 namespaces',
    ],
    [{ AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_METRICS_PORT: '70000' }, 'AGENTKOURIER_METRICS_PORT'],
    [{ AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_METRICS_PORT: 'http' }, 'AGENTKOURIER_METRICS_PORT'],
    [
      { AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_SERVICE_ACCOUNT: 'system:serviceaccount:ns:x' },
      'AGENTKOURIER_SERVICE_ACCOUNT must be a DNS-1123 subdomain',
    ],
    [
      { AGENTKOURIER_NAMESPACE: 'ns', AGENTKOURIER_SECRET_READER_ROLE: 'Reader' },
      'AGENTKOURIER_SECRET_READER_ROLE must be a DNS-1123 subdomain',
    ],
  ])('names the bad setting: %j', (env, words) => {
    let caught: unknown;
    try {
      loadControllerSettings(env);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ControllerConfigError);
    expect(caught).toBeInstanceOf(InvalidConfigError);
    expect((caught as ControllerConfigError).code).toBe('invalid_config');
    expect((caught as Error).message).toContain(words);
  });
});
