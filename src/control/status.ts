import { cutWithMark } from '../core/text.js';
import type { Condition } from './crds/common.js';

/**
 * Status conditions, the Kubernetes way: `Ready` plus one condition per aspect that can fail,
 * each with a CamelCase reason and a message for people. Pure functions; the controller
 * decides when to write.
 */

export const Reasons = {
  Ready: 'Ready',
  Resolved: 'Resolved',
  Assigned: 'Assigned',
  CardAccepted: 'CardAccepted',
  Pending: 'Pending',
  NotChecked: 'NotChecked',
  NoBindings: 'NoBindings',
  CardFetchFailed: 'CardFetchFailed',
  NoJSONRPCInterface: 'NoJSONRPCInterface',
  StreamingNotAdvertised: 'StreamingNotAdvertised',
  UnsupportedExtensionRequired: 'UnsupportedExtensionRequired',
  CredentialsRejected: 'CredentialsRejected',
  BackendNotFound: 'BackendNotFound',
  SecretNotFound: 'SecretNotFound',
  SecretForbidden: 'SecretForbidden',
  InvalidSpec: 'InvalidSpec',
  ChannelConflict: 'ChannelConflict',
  ChannelNotAllowed: 'ChannelNotAllowed',
} as const;

export type Reason = (typeof Reasons)[keyof typeof Reasons];

const REASONS: ReadonlySet<string> = new Set(Object.values(Reasons));

export function isReason(value: string | undefined): value is Reason {
  return value !== undefined && REASONS.has(value);
}

export const ConditionTypes = {
  Ready: 'Ready',
  BackendResolved: 'BackendResolved',
  CredentialsResolved: 'CredentialsResolved',
  HeadersResolved: 'HeadersResolved',
  CardAccepted: 'CardAccepted',
  ChannelsAssigned: 'ChannelsAssigned',
  TriggersReady: 'TriggersReady',
} as const;

export type ConditionType = (typeof ConditionTypes)[keyof typeof ConditionTypes];

/** A condition as reconcile decides it, before times and generations are stamped on. */
export interface ConditionState {
  type: ConditionType;
  status: Condition['status'];
  reason: Reason;
  message: string;
}

export function trueCondition(type: ConditionType, reason: Reason, message: string): ConditionState {
  return { type, status: 'True', reason, message };
}

export function falseCondition(type: ConditionType, reason: Reason, message: string): ConditionState {
  return { type, status: 'False', reason, message };
}

export function unknownCondition(type: ConditionType, reason: Reason, message: string): ConditionState {
  return { type, status: 'Unknown', reason, message };
}

/**
 * Ready summarises the specific conditions, in the order given: the first False wins, then the
 * first Unknown, so `kubectl get` shows the most telling reason.
 */
export function readyCondition(parts: readonly ConditionState[], readyMessage: string): ConditionState {
  const blocking = parts.find((c) => c.status === 'False') ?? parts.find((c) => c.status === 'Unknown');
  if (blocking === undefined) return trueCondition(ConditionTypes.Ready, Reasons.Ready, readyMessage);
  return {
    type: ConditionTypes.Ready,
    status: blocking.status,
    reason: blocking.reason,
    message: blocking.message,
  };
}

/** Messages are bounded (the CRD allows 32 KiB) and hold one line. */
export function boundMessage(message: string, max = 1024): string {
  const line = message.replace(/\s+/g, ' ').trim();
  return cutWithMark(line, max);
}

/**
 * Stamps conditions with the generation and a transition time. A condition whose status did not
 * change keeps its lastTransitionTime, so rewriting the same state changes nothing.
 */
export function stampConditions(
  previous: readonly Condition[] | undefined,
  next: readonly ConditionState[],
  generation: number | undefined,
  now: Date,
): Condition[] {
  return next.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    const stamped: Condition = {
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: boundMessage(c.message),
      lastTransitionTime:
        before !== undefined && before.status === c.status ? before.lastTransitionTime : kubeTime(now),
    };
    if (generation !== undefined) stamped.observedGeneration = generation;
    return stamped;
  });
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: ConditionType,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Deep equality of two JSON values, key order ignored: decides whether a status write is needed. */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    entries.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return Object.fromEntries(entries);
  });
}

export interface Transition {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
}

/**
 * Events for a Ready transition (status or reason changed): Normal when it became Ready,
 * Warning otherwise. Nothing when Ready did not move, so retries do not flood `kubectl describe`.
 */
export function readyTransition(
  previous: readonly Condition[] | undefined,
  next: readonly Condition[],
): Transition | undefined {
  const before = findCondition(previous, ConditionTypes.Ready);
  const after = findCondition(next, ConditionTypes.Ready);
  if (after === undefined) return undefined;
  if (before !== undefined && before.status === after.status && before.reason === after.reason)
    return undefined;
  return {
    type: after.status === 'True' ? 'Normal' : 'Warning',
    reason: after.reason,
    note: after.message,
  };
}

/** Kubernetes timestamps carry whole seconds. */
export function kubeTime(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
