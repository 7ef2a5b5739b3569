import { parseAllDocuments } from 'yaml';
import type { AgentBackend } from '../control/crds/agent-backend.js';
import type { Binding } from '../control/crds/binding.js';
import type { SecretLookup } from '../control/reconcile/secrets.js';
import { LocalManifestError, type ManifestProblem } from './errors.js';
import { secretValues } from './secret.js';
import { type LocalObject, type ValidateOptions, validateDocument } from './validate.js';

/**
 * A whole file to a configuration, or an error: all or nothing, so a half-edited file is never
 * served. Objects are keyed by namespace and name as in a cluster; lookups from a Binding reach
 * its own namespace only, exactly as the controller's caches are read.
 */

export interface LocalManifests {
  backends: ReadonlyMap<string, AgentBackend>;
  bindings: readonly Binding[];
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>;
}

const key = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The AgentBackend a Binding names: in the Binding's namespace only. */
export function backendFor(manifests: LocalManifests, b: Binding): AgentBackend | undefined {
  return manifests.backends.get(key(b.metadata.namespace, b.spec.backendRef.name));
}

/** Secrets of one namespace, as planBinding reads them; other namespaces are out of reach. */
export function secretLookup(manifests: LocalManifests, namespace: string): SecretLookup {
  return (name) => {
    const data = manifests.secrets.get(key(namespace, name));
    return data === undefined ? { kind: 'missing' } : { kind: 'found', data };
  };
}

function identify(o: LocalObject): { kind: string; namespace: string; name: string } {
  if (o.kind === 'Secret') return { kind: o.kind, namespace: o.namespace, name: o.name };
  return { kind: o.kind, namespace: o.value.metadata.namespace, name: o.value.metadata.name };
}

/** Parses the text of `file` (named in errors). Throws LocalManifestError listing every problem. */
export function parseManifests(text: string, file: string, options: ValidateOptions): LocalManifests {
  const problems: ManifestProblem[] = [];
  const objects: LocalObject[] = [];
  const seen = new Map<string, number>();
  let index = 0;
  for (const doc of parseAllDocuments(text, { uniqueKeys: true })) {
    index += 1;
    const syntax = doc.errors[0];
    if (syntax !== undefined) {
      problems.push({ document: index, object: undefined, path: '', message: `YAML: ${syntax.message}` });
      continue;
    }
    let raw: unknown;
    try {
      raw = doc.toJS();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      problems.push({ document: index, object: undefined, path: '', message: `YAML: ${message}` });
      continue;
    }
    // An empty document (a stray `---`, or only comments) holds nothing.
    if (raw === null || raw === undefined) continue;
    const result = validateDocument(raw, index, options);
    if (!result.ok) {
      problems.push(...result.problems);
      continue;
    }
    const id = identify(result.object);
    const label = `${id.kind} ${id.namespace}/${id.name}`;
    const first = seen.get(label);
    if (first !== undefined) {
      problems.push({
        document: index,
        object: label,
        path: '',
        message: `also defined by document ${first}`,
      });
      continue;
    }
    seen.set(label, index);
    objects.push(result.object);
  }
  if (problems.length > 0) throw new LocalManifestError(file, problems);

  const backends = new Map<string, AgentBackend>();
  const bindings: Binding[] = [];
  const secrets = new Map<string, ReadonlyMap<string, string>>();
  for (const o of objects) {
    if (o.kind === 'AgentBackend')
      backends.set(key(o.value.metadata.namespace, o.value.metadata.name), o.value);
    else if (o.kind === 'Binding') bindings.push(o.value);
    else secrets.set(key(o.namespace, o.name), secretValues(o.value));
  }
  return { backends, bindings, secrets };
}
