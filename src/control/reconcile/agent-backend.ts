import type { AgentBackend, AgentBackendStatus } from '../crds/agent-backend.js';
import type { BindingStatus } from '../crds/binding.js';
import {
  type ConditionState,
  ConditionTypes,
  falseCondition,
  findCondition,
  isReason,
  Reasons,
  readyCondition,
  stampConditions,
  trueCondition,
  unknownCondition,
} from '../status.js';
import { resolveSecretKey, type SecretLookup } from './secrets.js';

/**
 * AgentBackend reconcile, pure. A backend has no identity of its own (identities are the
 * Bindings'), so its card is read through its Bindings' clients (DT-8: with the same identity
 * headers as every call); its status sums them up. What it checks itself: the static headers
 * and the Secrets they read.
 */

export type HeadersResolution =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; condition: ConditionState };

/** The backend's static headers with Secret values read, or why they cannot be. */
export function resolveBackendHeaders(backend: AgentBackend, secrets: SecretLookup): HeadersResolution {
  const headers: Record<string, string> = {};
  for (const [index, h] of (backend.spec.headers ?? []).entries()) {
    if (h.value !== undefined) {
      headers[h.name] = h.value;
      continue;
    }
    if (h.valueFrom === undefined) continue;
    const resolved = resolveSecretKey(secrets, h.valueFrom.secretKeyRef, `headers[${index}] (${h.name})`);
    if (!resolved.ok) {
      return {
        ok: false,
        condition: falseCondition(ConditionTypes.HeadersResolved, resolved.reason, resolved.message),
      };
    }
    if (/[\r\n\0]/.test(resolved.value)) {
      return {
        ok: false,
        condition: falseCondition(
          ConditionTypes.HeadersResolved,
          Reasons.InvalidSpec,
          `headers[${index}] (${h.name}): the Secret value contains a line break or NUL`,
        ),
      };
    }
    headers[h.name] = resolved.value;
  }
  return { ok: true, headers };
}

export interface BackendBinding {
  /** The Binding's name (same namespace as the backend). */
  name: string;
  status: BindingStatus | undefined;
}

export interface BackendStatusInput {
  backend: AgentBackend;
  headers: HeadersResolution;
  /** The Bindings of this namespace that name this backend. */
  bindings: readonly BackendBinding[];
  now: Date;
}

/**
 * The card condition of a backend, from its Bindings' CardAccepted conditions: accepted when
 * one accepted it, refused when every Binding that tried was refused, unknown otherwise.
 */
export function backendCardCondition(bindings: readonly BackendBinding[]): {
  condition: ConditionState;
  accepted?: BackendBinding;
} {
  if (bindings.length === 0) {
    return {
      condition: unknownCondition(
        ConditionTypes.CardAccepted,
        Reasons.NoBindings,
        'no Binding uses this backend yet; its card is read with a Binding’s identity',
      ),
    };
  }
  const sorted = [...bindings].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const withCard = (b: BackendBinding) => findCondition(b.status?.conditions, ConditionTypes.CardAccepted);
  const accepted = sorted.find((b) => withCard(b)?.status === 'True' && b.status?.card !== undefined);
  if (accepted !== undefined) {
    return {
      condition: trueCondition(
        ConditionTypes.CardAccepted,
        Reasons.CardAccepted,
        `card accepted through Binding ${accepted.name}`,
      ),
      accepted,
    };
  }
  const refused = sorted.find((b) => withCard(b)?.status === 'False');
  if (refused !== undefined) {
    const c = withCard(refused);
    return {
      condition: falseCondition(
        ConditionTypes.CardAccepted,
        isReason(c?.reason) ? c.reason : Reasons.CardFetchFailed,
        `Binding ${refused.name}: ${c?.message ?? 'the card was refused'}`,
      ),
    };
  }
  return {
    condition: unknownCondition(
      ConditionTypes.CardAccepted,
      Reasons.Pending,
      'no Binding has read the card yet',
    ),
  };
}

export function agentBackendStatus(input: BackendStatusInput): AgentBackendStatus {
  const { backend, headers, bindings, now } = input;
  const previous = backend.status;
  const headerCondition = headers.ok
    ? trueCondition(ConditionTypes.HeadersResolved, Reasons.Resolved, 'static headers resolved')
    : headers.condition;
  const card = backendCardCondition(bindings);
  const parts = [headerCondition, card.condition];
  const ready = readyCondition(parts, `${backend.spec.dialect} agent at ${backend.spec.url} accepted`);
  const status: AgentBackendStatus = {
    observedGeneration: backend.metadata.generation,
    conditions: stampConditions(previous?.conditions, [ready, ...parts], backend.metadata.generation, now),
    dialect: backend.spec.dialect,
    bindings: bindings.length,
  };
  const polling = backend.spec.polling;
  if (polling?.enabled === true)
    status.polling = { enabled: true, interval: polling.interval, timeout: polling.timeout };
  const acceptedCard = card.accepted?.status?.card;
  if (card.accepted !== undefined && acceptedCard !== undefined) {
    status.card = { ...acceptedCard, binding: card.accepted.name };
  }
  return status;
}
