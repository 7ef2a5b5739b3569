import { z } from 'zod';
import { type AgentBackend, agentBackend } from '../control/crds/agent-backend.js';
import { type Binding, binding } from '../control/crds/binding.js';
import { type ObjectMeta, objectMeta } from '../control/crds/common.js';

/**
 * Objects from the informers' caches, parsed with the CRD schemas at the edge. The API server
 * validated them already; parsing again catches objects stored under an older CRD and gives
 * reconcile typed values, never casts.
 */

export type Parsed<T> = { ok: true; value: T } | { ok: false; meta: ObjectMeta; message: string };

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'the resource is invalid';
  const path = issue.path.join('.');
  return `${path === '' ? 'the resource' : path}: ${issue.message}`;
}

const withMeta = z.object({ metadata: objectMeta });

function parseWith<T>(schema: z.ZodType<T>, raw: unknown): Parsed<T> | undefined {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { ok: true, value: parsed.data };
  const named = withMeta.safeParse(raw);
  if (!named.success) return undefined;
  return { ok: false, meta: named.data.metadata, message: firstIssue(parsed.error) };
}

/** undefined: not even a named, namespaced object (never from a working API server). */
export function parseAgentBackend(raw: unknown): Parsed<AgentBackend> | undefined {
  return parseWith(agentBackend, raw);
}

export function parseBinding(raw: unknown): Parsed<Binding> | undefined {
  return parseWith(binding, raw);
}

/** Secrets (namespace/name) an AgentBackend reads: its headers' valueFrom. */
export function backendSecretRefs(backend: AgentBackend): string[] {
  const ns = backend.metadata.namespace;
  return (backend.spec.headers ?? []).flatMap((h) =>
    h.valueFrom === undefined ? [] : [`${ns}/${h.valueFrom.secretKeyRef.name}`],
  );
}

/** Secrets (namespace/name) a Binding reads: its token or exchange client's, and its triggers' tokens. */
export function bindingSecretRefs(b: Binding): string[] {
  const names = [
    b.spec.identity.tokenSecretRef?.name,
    b.spec.identity.perPerson?.exchange?.clientSecretRef.name,
    b.spec.identity.perPerson?.signIn?.clientSecretRef?.name,
    ...(b.spec.triggers ?? []).map((t) => t.tokenSecretRef?.name),
  ].filter((n): n is string => n !== undefined);
  return [...new Set(names)].map((name) => `${b.metadata.namespace}/${name}`);
}
