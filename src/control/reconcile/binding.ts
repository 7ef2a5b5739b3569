import type { A2AClientOptions } from '../../a2a/options.js';
import { resolveOptions } from '../../a2a/options.js';
import { InvalidConfigError } from '../../core/errors.js';
import type { BindingSettings, PollingSettings } from '../../core/ports.js';
import type { SurfaceRouting, ToolApprovalSettings } from '../../core/registry.js';
import { type DialectName, dialectSpec } from '../../dialects/index.js';
import { type ClaimConflict, DIRECT_MESSAGES, mayTakeDirectMessages, splitClaims } from '../channels.js';
import type { AgentBackend } from '../crds/agent-backend.js';
import type { Binding, BindingStatus } from '../crds/binding.js';
import type { CardSummary } from '../crds/common.js';
import { parseDuration } from '../crds/duration.js';
import {
  type ConditionState,
  ConditionTypes,
  falseCondition,
  Reasons,
  readyCondition,
  sameJson,
  stampConditions,
  trueCondition,
  unknownCondition,
} from '../status.js';
import { type HeadersResolution, resolveBackendHeaders } from './agent-backend.js';
import type { CardOutcome } from './card.js';
import { identityOf } from './identity.js';
import type { SecretLookup } from './secrets.js';
import { planTriggers, type TriggerActivityView, type TriggersPlan, triggerStatuses } from './triggers.js';

/**
 * Binding reconcile, pure: from the Binding, its AgentBackend and Secrets (all in its own
 * namespace) to the live client the registry should hold, and from that plus the card check and
 * the channel conflicts to the status. The controller does the I/O in between.
 */

export interface BindingObservation {
  binding: Binding;
  /** The AgentBackend named by spec.backendRef, looked up in the Binding's namespace only. */
  backend: AgentBackend | undefined;
  /** Set when the AgentBackend exists but does not parse (stored under an older CRD). */
  backendInvalid?: string;
  /** Secrets of the Binding's namespace. */
  secrets: SecretLookup;
  /** Channels the namespace may claim; undefined: any. */
  allowedChannels: readonly string[] | undefined;
}

/** What the registry should hold for a Binding. */
export interface LiveSpec {
  ref: string;
  dialect: DialectName;
  client: A2AClientOptions;
  settings: BindingSettings;
  slack: SurfaceRouting;
  /** Microsoft Teams' routing, when the Binding has a spec.teams: its tenant is the workspace. */
  teams?: SurfaceRouting;
  toolApprovals: ToolApprovalSettings;
}

export interface ResolvedBackend {
  name: string;
  dialect: DialectName;
  endpoint: string;
  /** P-1: the backend's polling, when it is enabled. */
  polling?: PollingSettings;
}

export interface BindingPlan {
  /** undefined: the Binding cannot be served; it is removed from the registry. */
  live: LiveSpec | undefined;
  backend: ResolvedBackend | undefined;
  backendCondition: ConditionState;
  credentialsCondition: ConditionState;
  /** Channels the namespace may not claim (kept out of the registry). */
  refusedChannels: string[];
  /** The Binding asks for direct messages the namespace may not take (not served either). */
  refusedDirectMessages: boolean;
  /** Its triggers, for the trigger directory (every replica) and status. */
  triggers: TriggersPlan;
}

export function bindingRef(binding: Binding): string {
  return `${binding.metadata.namespace}/${binding.metadata.name}`;
}

function resolveBackend(
  binding: Binding,
  backend: AgentBackend | undefined,
  backendInvalid: string | undefined,
): { ok: true; resolved: ResolvedBackend } | { ok: false; condition: ConditionState } {
  const name = binding.spec.backendRef.name;
  if (backendInvalid !== undefined) {
    return {
      ok: false,
      condition: falseCondition(
        ConditionTypes.BackendResolved,
        Reasons.InvalidSpec,
        `AgentBackend "${name}" is invalid: ${backendInvalid}`,
      ),
    };
  }
  if (backend === undefined) {
    return {
      ok: false,
      condition: falseCondition(
        ConditionTypes.BackendResolved,
        Reasons.BackendNotFound,
        `AgentBackend "${name}" not found in namespace ${binding.metadata.namespace}`,
      ),
    };
  }
  const dialect = backend.spec.dialect;
  // Cross-object rule the CRD cannot check with CEL: kagent-v1 reaches one agent per Binding.
  if (dialect === 'kagent-v1' && binding.spec.agent === undefined) {
    return {
      ok: false,
      condition: falseCondition(
        ConditionTypes.BackendResolved,
        Reasons.InvalidSpec,
        `spec.agent (namespace and name) is required: AgentBackend "${name}" has dialect kagent-v1`,
      ),
    };
  }
  const endpoint = dialectSpec(dialect).endpoint(backend.spec.url, binding.spec.agent);
  const resolved: ResolvedBackend = { name, dialect, endpoint };
  const polling = pollingSettings(backend);
  if (polling !== undefined) resolved.polling = polling;
  return { ok: true, resolved };
}

/** P-1: spec.polling in milliseconds, when enabled (the schema has checked both durations). */
function pollingSettings(backend: AgentBackend): PollingSettings | undefined {
  const polling = backend.spec.polling;
  if (polling?.enabled !== true) return undefined;
  const intervalMs = parseDuration(polling.interval);
  const timeoutMs = parseDuration(polling.timeout);
  if (intervalMs === undefined || timeoutMs === undefined) return undefined;
  return { intervalMs, timeoutMs };
}

function questionTimeoutMs(binding: Binding): number | null {
  const text = binding.spec.interactions?.questionTimeout;
  if (text === undefined) return null;
  return parseDuration(text) ?? null;
}

export function planBinding(observed: BindingObservation): BindingPlan {
  const plan = planClient(observed);
  const blocking = [plan.backendCondition, plan.credentialsCondition].find((c) => c.status !== 'True');
  plan.triggers = planTriggers({
    binding: observed.binding,
    secrets: observed.secrets,
    bindingProblem:
      plan.live === undefined
        ? {
            reason: blocking?.reason ?? Reasons.Pending,
            message: `the Binding is not ready: ${blocking?.message ?? 'it cannot be served'}`,
          }
        : undefined,
    grantedChannels: plan.live?.slack.channels ?? [],
  });
  return plan;
}

function planClient(observed: BindingObservation): BindingPlan {
  const { binding, secrets } = observed;
  const teamId = binding.spec.slack?.teamId;
  const claims = splitClaims(binding.spec.slack?.channels ?? [], observed.allowedChannels, teamId);
  // DMs are an allowlist entry of their own: a namespace allowed no DMs neither receives the
  // app's direct messages nor, by asking for them, blocks another Binding's with a conflict.
  const wantsDirectMessages = binding.spec.slack?.allowDirectMessages ?? false;
  const directMessages = wantsDirectMessages && mayTakeDirectMessages(observed.allowedChannels, teamId);
  const backend = resolveBackend(binding, observed.backend, observed.backendInvalid);
  const identity = identityOf(binding, secrets);
  const headers: HeadersResolution =
    observed.backend === undefined
      ? { ok: true, headers: {} }
      : resolveBackendHeaders(observed.backend, secrets);

  const backendCondition = backend.ok
    ? trueCondition(
        ConditionTypes.BackendResolved,
        Reasons.Resolved,
        `AgentBackend "${backend.resolved.name}" resolved`,
      )
    : backend.condition;
  let credentialsCondition = identity.ok
    ? trueCondition(
        ConditionTypes.CredentialsResolved,
        Reasons.Resolved,
        'identity and static headers resolved',
      )
    : identity.condition;
  if (identity.ok && !headers.ok) {
    credentialsCondition = falseCondition(
      ConditionTypes.CredentialsResolved,
      headers.condition.reason,
      `AgentBackend "${binding.spec.backendRef.name}" ${headers.condition.message}`,
    );
  }
  const plan: BindingPlan = {
    live: undefined,
    backend: backend.ok ? backend.resolved : undefined,
    backendCondition,
    credentialsCondition,
    refusedChannels: claims.refused,
    refusedDirectMessages: wantsDirectMessages && !directMessages,
    triggers: { configs: [], condition: undefined },
  };
  if (!backend.ok || !identity.ok || !headers.ok) return plan;

  const spec = dialectSpec(backend.resolved.dialect);
  const given = identity.identity;
  const client: A2AClientOptions = {
    endpoint: backend.resolved.endpoint,
    identity:
      given.kind === 'person'
        ? {
            ...given,
            audience: given.audience === '' ? backend.resolved.endpoint : given.audience,
            // kagent keeps its sessions per user id: each person gets their own.
            userIdHeader: backend.resolved.dialect === 'kagent-v1',
          }
        : given,
    headers: headers.headers,
    extensions: spec.extensions,
  };
  if (backend.resolved.polling !== undefined) client.polling = true;
  try {
    // The client validates its settings (URL, header names and values); refuse them here, in
    // status, rather than at the first turn.
    resolveOptions(client);
  } catch (error) {
    if (!(error instanceof InvalidConfigError)) throw error;
    plan.credentialsCondition = falseCondition(
      ConditionTypes.CredentialsResolved,
      Reasons.InvalidSpec,
      error.message,
    );
    return plan;
  }
  const slack = binding.spec.slack;
  const teams = binding.spec.teams;
  const approvals = binding.spec.interactions?.toolApprovals;
  plan.live = {
    ref: bindingRef(binding),
    dialect: backend.resolved.dialect,
    client,
    settings: {
      questionTimeoutMs: questionTimeoutMs(binding),
      ...(backend.resolved.polling === undefined ? {} : { polling: backend.resolved.polling }),
    },
    slack: {
      channels: claims.granted,
      allowDirectMessages: directMessages,
      ...(slack?.teamId === undefined ? {} : { workspaceId: slack.teamId }),
      ...(slack?.handle === undefined ? {} : { handle: slack.handle }),
      ...(slack?.feedback?.toAgent === true ? { feedbackToAgent: true } : {}),
    },
    ...(teams === undefined
      ? {}
      : {
          teams: {
            channels: teams.channels,
            allowDirectMessages: teams.allowPersonalChats,
            workspaceId: teams.tenantId.toLowerCase(),
          },
        }),
    toolApprovals: {
      enabled: approvals?.enabled ?? false,
      approverGroups: approvals?.approverGroups ?? [],
      approvers: approvals?.approvers ?? [],
      ...(approvals?.teams === undefined
        ? {}
        : {
            perSurface: {
              teams: {
                approverGroups: approvals.teams.approverGroups.map((g) => g.toLowerCase()),
                approvers: approvals.teams.approvers.map((a) => a.toLowerCase()),
              },
            },
          }),
    },
  };
  return plan;
}

export interface CardState {
  outcome: CardOutcome;
  /** Since when this outcome holds (Kubernetes time). */
  since: string;
}

export interface BindingStatusInput {
  binding: Binding;
  plan: BindingPlan;
  /** The card check for the current client; undefined when none ran (yet). */
  card: CardState | undefined;
  conflicts: readonly ClaimConflict[];
  previous: BindingStatus | undefined;
  now: Date;
  /** The last delivery of each of its triggers (from the store), when known. */
  triggerActivity?: TriggerActivityView;
}

function cardCondition(plan: BindingPlan, card: CardState | undefined): ConditionState {
  if (plan.live === undefined) {
    return unknownCondition(
      ConditionTypes.CardAccepted,
      Reasons.NotChecked,
      'the card is read once the backend and the credentials resolve',
    );
  }
  if (card === undefined)
    return unknownCondition(ConditionTypes.CardAccepted, Reasons.Pending, 'the card has not been read yet');
  if (card.outcome.ok) {
    const c = card.outcome.card;
    return trueCondition(
      ConditionTypes.CardAccepted,
      Reasons.CardAccepted,
      `${c.name === '' ? 'the agent' : c.name} speaks A2A ${c.protocolVersion} over JSON-RPC ${
        c.streaming ? 'with streaming' : 'without streaming: its tasks are followed by polling'
      }`,
    );
  }
  return falseCondition(ConditionTypes.CardAccepted, card.outcome.reason, card.outcome.message);
}

function describeConflict(c: ClaimConflict): string {
  const others = c.others.map((o) => `Binding ${o}`).join(', ');
  return c.what === DIRECT_MESSAGES
    ? `direct messages are also taken by ${others}`
    : `channel ${c.what} is also claimed by ${others}`;
}

function channelsCondition(
  binding: Binding,
  plan: BindingPlan,
  conflicts: readonly ClaimConflict[],
): ConditionState {
  const problems: string[] = [];
  if (plan.refusedChannels.length > 0) {
    problems.push(
      `namespace ${binding.metadata.namespace} may not claim channel(s) ${plan.refusedChannels.join(', ')} (controller setting)`,
    );
  }
  if (plan.refusedDirectMessages) {
    problems.push(
      `namespace ${binding.metadata.namespace} may not take direct messages (controller setting)`,
    );
  }
  problems.push(...conflicts.map(describeConflict));
  if (conflicts.length > 0)
    problems.push(
      'neither Binding serves a shared channel until one lets go of it, or each has a spec.slack.handle of its own',
    );
  if (problems.length === 0) {
    return trueCondition(
      ConditionTypes.ChannelsAssigned,
      Reasons.Assigned,
      'every claimed channel is served',
    );
  }
  const reason =
    plan.refusedChannels.length > 0 || plan.refusedDirectMessages
      ? Reasons.ChannelNotAllowed
      : Reasons.ChannelConflict;
  return falseCondition(ConditionTypes.ChannelsAssigned, reason, problems.join('; '));
}

function sameCardSummary(previous: CardSummary | undefined, next: Omit<CardSummary, 'fetchedAt'>): boolean {
  if (previous === undefined) return false;
  const { fetchedAt: _, ...rest } = previous;
  return sameJson(rest, next);
}

export function bindingStatus(input: BindingStatusInput): BindingStatus {
  const { binding, plan, card, conflicts, previous, now } = input;
  const cardState = cardCondition(plan, card);
  const parts = [
    plan.backendCondition,
    plan.credentialsCondition,
    cardState,
    channelsCondition(binding, plan, conflicts),
    ...(plan.triggers.condition === undefined ? [] : [plan.triggers.condition]),
  ];
  const ready = readyCondition(parts, 'the agent is reachable and every claimed channel is served');
  const generation = binding.metadata.generation;
  const status: BindingStatus = {
    observedGeneration: generation,
    conditions: stampConditions(previous?.conditions, [ready, ...parts], generation, now),
  };
  if (plan.backend !== undefined) status.backend = { ...plan.backend };
  if (plan.triggers.configs.length > 0)
    status.triggers = triggerStatuses(plan.triggers.configs, input.triggerActivity);
  if (plan.live !== undefined) {
    const conflicted = new Set(conflicts.map((c) => c.what));
    status.channels = plan.live.slack.channels.filter((c) => !conflicted.has(c));
    if (card !== undefined) {
      const result = card.outcome.ok ? Reasons.CardAccepted : card.outcome.reason;
      // The same outcome as written before keeps its time (after a restart or a new leader
      // too), so re-reading an unchanged card does not rewrite status.
      const before = previous?.lastCardFetch;
      const sameCard = !card.outcome.ok || sameCardSummary(previous?.card, card.outcome.card);
      const time = before !== undefined && before.result === result && sameCard ? before.time : card.since;
      status.lastCardFetch = { time, result };
      if (card.outcome.ok) status.card = { ...card.outcome.card, fetchedAt: time };
    }
  }
  return status;
}
