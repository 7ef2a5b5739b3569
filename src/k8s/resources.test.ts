import { describe, expect, it } from 'vitest';
import { bindingObject } from '../../test/control/objects.js';
import { bindingSecretRefs } from './resources.js';

describe('the Secrets a Binding reads (their changes reconcile it)', () => {
  it('names its token, its exchange client’s secret and its triggers’ tokens, each once', () => {
    const exchanged = bindingObject({
      identity: {
        perPerson: {
          exchange: {
            tokenUrl: 'https://idp.example/token',
            clientId: 'agentkourier',
            clientSecretRef: { name: 'idp', key: 'secret' },
          },
        },
      },
    });
    expect(bindingSecretRefs(exchanged)).toEqual([`${exchanged.metadata.namespace}/idp`]);
    const bearer = bindingObject({ identity: { tokenSecretRef: { name: 'tok', key: 'token' } } });
    expect(bindingSecretRefs(bearer)).toEqual([`${bearer.metadata.namespace}/tok`]);
    expect(bindingSecretRefs(bindingObject({ identity: { perPerson: {} } }))).toEqual([]);
  });
});
