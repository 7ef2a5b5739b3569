import { Cron } from 'croner';
import {
  type TriggerConfig,
  type TriggerProblem,
  type TriggerTarget,
  tokenDigest,
  triggerPath,
} from '../../core/triggers.js';
import type { Binding, BindingStatus, Trigger } from '../crds/binding.js';
import {
  type ConditionState,
  ConditionTypes,
  falseCondition,
  isReason,
  Reasons,
  trueCondition,
} from '../status.js';
import { resolveSecretKey, type SecretLookup } from './secrets.js';

/**
 * A Binding's triggers, pure: from spec.triggers and the Secrets of its namespace to what the
 * trigger directory holds (every replica serves deliveries), the TriggersReady condition and the
 * status entries (the leader writes them, with each trigger's last delivery from the store).
 */

export const DEFAULT_THREADS_PER_MINUTE = 5;

export interface TriggersPlan {
  configs: TriggerConfig[];
  /** undefined when the Binding has no triggers. */
  condition: ConditionState | undefined;
}

export interface TriggersInput {
  binding: Binding;
  secrets: SecretLookup;
  /** Why the Binding itself cannot be served (no live client), if it cannot. */
  bindingProblem: TriggerProblem | undefined;
  /** The channels the Binding may serve (granted by the operator's setting). */
  grantedChannels: readonly string[];
}

/** Whether croner reads the schedule: undefined when it does, else why not. */
export function scheduleProblem(cron: string, timeZone: string): string | undefined {
  try {
    new Cron(cron, { timezone: timeZone, mode: '5-part', paused: true }).nextRun(new Date(0));
    return undefined;
  } catch (error) {
    const detail = error instanceof Error ? error.message.split('. ')[0] : 'invalid';
    return `schedule "${cron}" in ${timeZone} does not read: ${detail}`;
  }
}

/** A trigger's surface, channel and workspace, from its spec (none: the web chat). */
function targetOf(t: Trigger, binding: TriggersInput['binding']): TriggerTarget {
  if (t.slack !== undefined) {
    const team = binding.spec.slack?.teamId;
    return {
      surface: 'slack',
      channel: t.slack.channel,
      ...(team === undefined ? {} : { workspaceId: team }),
    };
  }
  if (t.teams !== undefined && binding.spec.teams !== undefined) {
    return {
      surface: 'teams',
      channel: t.teams.channel,
      workspaceId: binding.spec.teams.tenantId.toLowerCase(),
    };
  }
  return {};
}

export function planTriggers(input: TriggersInput): TriggersPlan {
  const { binding } = input;
  const ref = `${binding.metadata.namespace}/${binding.metadata.name}`;
  const threadsPerMinute = binding.spec.triggerLimits?.threadsPerMinute ?? DEFAULT_THREADS_PER_MINUTE;
  const granted = new Set(input.grantedChannels);
  const configs = (binding.spec.triggers ?? []).map((t, i): TriggerConfig => {
    const field = `triggers[${i}]`;
    const config: TriggerConfig = {
      binding: ref,
      name: t.name,
      kind: t.kind,
      instruction: t.instruction,
      onResolved: t.onResolved,
      target: targetOf(t, binding),
      threadsPerMinute,
    };
    if (t.schedule !== undefined) config.schedule = { cron: t.schedule.cron, timeZone: t.schedule.timeZone };
    let problem: TriggerProblem | undefined = input.bindingProblem;
    if (t.tokenSecretRef !== undefined) {
      const token = resolveSecretKey(input.secrets, t.tokenSecretRef, `${field}.tokenSecretRef`);
      if (token.ok) config.tokenDigest = tokenDigest(token.value);
      else problem ??= { reason: token.reason, message: token.message };
    }
    if (t.schedule !== undefined) {
      const bad = scheduleProblem(t.schedule.cron, t.schedule.timeZone);
      if (bad !== undefined) problem ??= { reason: Reasons.InvalidSpec, message: `${field}: ${bad}` };
    }
    if (t.slack !== undefined && !granted.has(t.slack.channel)) {
      problem ??= {
        reason: Reasons.ChannelNotAllowed,
        message: `${field}: channel ${t.slack.channel} is not served by this Binding`,
      };
    }
    if (problem !== undefined) config.problem = problem;
    return config;
  });
  if (configs.length === 0) return { configs, condition: undefined };
  const failing = configs.find((c) => c.problem !== undefined);
  const condition =
    failing?.problem === undefined
      ? trueCondition(
          ConditionTypes.TriggersReady,
          Reasons.Ready,
          `${configs.length} trigger${configs.length === 1 ? '' : 's'} ready`,
        )
      : falseCondition(
          ConditionTypes.TriggersReady,
          isReason(failing.problem.reason) ? failing.problem.reason : Reasons.InvalidSpec,
          failing.problem.message,
        );
  return { configs, condition };
}

/** The last delivery of each trigger of a Binding, by trigger name. */
export type TriggerActivityView = ReadonlyMap<string, { at: number; result: string }>;

/** Status entries: each trigger's kind, path, readiness and last delivery. */
export function triggerStatuses(
  configs: readonly TriggerConfig[],
  activity: TriggerActivityView | undefined,
): NonNullable<BindingStatus['triggers']> {
  return configs.map((c) => {
    const entry: NonNullable<BindingStatus['triggers']>[number] = {
      name: c.name,
      kind: c.kind,
      ready: c.problem === undefined,
    };
    if (c.kind !== 'schedule') entry.path = triggerPath(c.binding, c.name);
    if (c.problem !== undefined) entry.message = c.problem.message.slice(0, 1024);
    const last = activity?.get(c.name);
    if (last !== undefined) {
      entry.lastDelivery = {
        time: new Date(last.at).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        result: last.result.slice(0, 64),
      };
    }
    return entry;
  });
}
