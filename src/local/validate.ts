import { z } from 'zod';
import { type AgentBackend, agentBackend } from '../control/crds/agent-backend.js';
import { type Binding, binding } from '../control/crds/binding.js';
import { API_VERSION, namespaceName, objectName } from '../control/crds/common.js';
import type { ManifestProblem } from './errors.js';
import { fieldPath, unknownFieldMessage, unknownFields } from './fields.js';
import { type LocalAdaptation, localAdaptations } from './local-rules.js';
import { type SecretManifest, secretManifest } from './secret.js';

/**
 * One YAML document to one typed object, with the CRD schemas of ../control/crds (the one
 * definition of AgentBackend and Binding) and a small Secret schema of our own. What the API
 * server checks besides the CRD schema (metadata names, strict fields) is checked here too.
 */

/** Where a document without metadata.namespace lands, as with `kubectl apply` on a fresh context. */
export const DEFAULT_NAMESPACE = 'default';

export type LocalObject =
  | { kind: 'AgentBackend'; value: AgentBackend }
  | { kind: 'Binding'; value: Binding }
  | { kind: 'Secret'; namespace: string; name: string; value: SecretManifest };

export type Validated = { ok: true; object: LocalObject } | { ok: false; problems: ManifestProblem[] };

const KINDS = { AgentBackend: API_VERSION, Binding: API_VERSION, Secret: 'v1' } as const;
type Kind = keyof typeof KINDS;

function isKind(kind: string): kind is Kind {
  return Object.hasOwn(KINDS, kind);
}

const envelope = z.looseObject({
  apiVersion: z.string({ error: 'must be set (agentkourier.dev/v1alpha1, or v1 for a Secret)' }),
  kind: z.string({ error: 'must be set (AgentBackend, Binding or Secret)' }),
});

/**
 * The metadata the API server itself checks (names) plus the namespace default. Other metadata
 * (labels, uid, …) is let through and ignored, so `kubectl get -o yaml` output can be pasted in.
 */
const metadata = z.looseObject({
  name: objectName,
  namespace: namespaceName.default(DEFAULT_NAMESPACE),
});

const SCHEMAS = { AgentBackend: agentBackend, Binding: binding, Secret: secretManifest } as const;

function problem(
  document: number,
  object: string | undefined,
  path: string,
  message: string,
): ManifestProblem {
  return { document, object, path, message };
}

function issues(
  document: number,
  object: string | undefined,
  prefix: string,
  error: z.ZodError,
): ManifestProblem[] {
  return error.issues.map((i) => problem(document, object, fieldPath(prefix, i.path), i.message));
}

export interface ValidateOptions {
  /** The demo agent's base URL, for `${DEMO_AGENT_URL}` in an AgentBackend's url. */
  demoAgentUrl: string | undefined;
}

function withoutMetadata(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'metadata'));
}

/** Validates the `index`-th document (1-based) of the file. */
export function validateDocument(raw: unknown, index: number, options: ValidateOptions): Validated {
  const fail = (p: ManifestProblem[]): Validated => ({ ok: false, problems: p });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return fail([
      problem(index, undefined, '', 'must be a mapping (a Kubernetes object), not a list or a scalar'),
    ]);
  }
  const head = envelope.safeParse(raw);
  if (!head.success) return fail(issues(index, undefined, '', head.error));
  const { apiVersion, kind } = head.data;
  if (!isKind(kind)) {
    return fail([
      problem(
        index,
        undefined,
        'kind',
        `unknown kind "${kind}" (apiVersion ${apiVersion}): local mode reads AgentBackend and Binding ` +
          `(${API_VERSION}) and Secret (v1)`,
      ),
    ]);
  }
  const meta = metadata.safeParse(head.data.metadata ?? {});
  if (!meta.success) return fail(issues(index, kind, 'metadata', meta.error));
  const { name, namespace } = meta.data;
  const object = `${kind} ${namespace}/${name}`;
  if (apiVersion !== KINDS[kind]) {
    return fail([problem(index, object, 'apiVersion', `${kind} is ${KINDS[kind]}, not "${apiVersion}"`)]);
  }

  // status is the controller's to write; a file copied from `kubectl get` may carry one.
  const { status: _status, ...rest } = head.data;
  const input: Record<string, unknown> = { ...rest, metadata: { ...meta.data } };
  const adapted: LocalAdaptation = localAdaptations(kind, input, options);
  if (adapted.problems.length > 0) {
    return fail(adapted.problems.map((p) => problem(index, object, p.path, p.message)));
  }
  const parsed = SCHEMAS[kind].safeParse(adapted.input);
  if (!parsed.success) return fail(issues(index, object, '', parsed.error));
  const value = parsed.data;

  // metadata was checked above; beyond its names it is the API server's, not ours.
  const unknown = unknownFields(withoutMetadata(input), withoutMetadata(parsed.data), '');
  if (unknown.length > 0) return fail(unknown.map((p) => problem(index, object, p, unknownFieldMessage(p))));

  switch (value.kind) {
    case 'AgentBackend':
      return { ok: true, object: { kind: 'AgentBackend', value } };
    case 'Binding':
      return { ok: true, object: { kind: 'Binding', value: adapted.restoreBinding(value) } };
    case 'Secret':
      return { ok: true, object: { kind: 'Secret', namespace, name, value } };
  }
}
