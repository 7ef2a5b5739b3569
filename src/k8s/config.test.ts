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
    });
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
