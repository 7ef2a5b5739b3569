/** Work-queue keys: one per object, kind/namespace/name, as pepr's queueKey. */

export type Kind = 'AgentBackend' | 'Binding';

export interface ObjectKey {
  kind: Kind;
  namespace: string;
  name: string;
}

export function keyOf(kind: Kind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export function parseKey(key: string): ObjectKey | undefined {
  const [kind, namespace, name, ...rest] = key.split('/');
  if (rest.length > 0 || namespace === undefined || name === undefined) return undefined;
  if (kind !== 'AgentBackend' && kind !== 'Binding') return undefined;
  return { kind, namespace, name };
}
