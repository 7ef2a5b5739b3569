import type { AgentBackend } from '../../src/control/crds/agent-backend.js';
import type { Binding, BindingSpec } from '../../src/control/crds/binding.js';
import { API_VERSION } from '../../src/control/crds/common.js';
import type { SecretLookup, SecretView } from '../../src/control/reconcile/secrets.js';

/** Plain objects for the pure reconcile tests. */

export function backendObject(
  spec: Partial<AgentBackend['spec']> = {},
  name = 'agents',
  namespace = 'team-a',
): AgentBackend {
  return {
    apiVersion: API_VERSION,
    kind: 'AgentBackend',
    metadata: { name, namespace, uid: `uid-${name}`, generation: 1 },
    spec: { dialect: 'a2a', url: 'http://agent.example/a2a', ...spec },
  };
}

export function bindingObject(spec: Partial<BindingSpec> = {}, name = 'chat', namespace = 'team-a'): Binding {
  return {
    apiVersion: API_VERSION,
    kind: 'Binding',
    metadata: { name, namespace, uid: `uid-${name}`, generation: 2 },
    spec: { backendRef: { name: 'agents' }, identity: { userId: 'U123' }, ...spec },
  };
}

/** Secrets by name (decoded data); names in `unreadable` could not be read. */
export function secrets(
  map: Record<string, Record<string, string>>,
  unreadable: readonly string[] = [],
): SecretLookup {
  return (name): SecretView => {
    if (unreadable.includes(name)) return { kind: 'unreadable', message: 'forbidden' };
    const entry = map[name];
    if (entry === undefined) return { kind: 'missing' };
    return { kind: 'found', data: new Map(Object.entries(entry)) };
  };
}
