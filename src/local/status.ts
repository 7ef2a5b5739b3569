import type { BindingStatus } from '../control/crds/binding.js';
import type { CardSummary, Condition } from '../control/crds/common.js';
import { ConditionTypes, findCondition } from '../control/status.js';
import type { DialectName } from '../dialects/index.js';

/**
 * What local mode tells about a Binding: the status the controller would write to the cluster
 * (the same pure bindingStatus()), flattened to what a page or a log line shows.
 */
export interface LocalBindingStatus {
  /** 'namespace/name', the registry's ref. */
  ref: string;
  namespace: string;
  name: string;
  ready: boolean;
  /** Ready's reason: 'Ready', or why not (BackendNotFound, SecretNotFound, CardFetchFailed, Pending, …). */
  reason: string;
  /** For people: what is wrong, or that the agent is reachable. */
  message: string;
  backend?: { name: string; dialect: DialectName; endpoint: string };
  /** The agent card last accepted for the current client configuration. */
  card?: CardSummary;
  /** Ready and one condition per aspect, as `kubectl get -o yaml` would show them. */
  conditions: Condition[];
  /** Its triggers: kind, path (webhooks), whether ready and why not. */
  triggers?: NonNullable<BindingStatus['triggers']>;
}

export function localStatus(namespace: string, name: string, status: BindingStatus): LocalBindingStatus {
  const ready = findCondition(status.conditions, ConditionTypes.Ready);
  const out: LocalBindingStatus = {
    ref: `${namespace}/${name}`,
    namespace,
    name,
    ready: ready?.status === 'True',
    reason: ready?.reason ?? 'Pending',
    message: ready?.message ?? '',
    conditions: status.conditions ?? [],
  };
  if (status.backend !== undefined) out.backend = status.backend;
  if (status.card !== undefined) out.card = status.card;
  if (status.triggers !== undefined) out.triggers = status.triggers;
  return out;
}
