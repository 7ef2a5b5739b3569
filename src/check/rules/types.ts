import type { Observations } from '../observations.js';

/** The rule ids: stable, used in --json and by scripts; never renamed. */
export const RULE_IDS = [
  'card.fetch',
  'card.jsonrpc',
  'card.streaming',
  'card.extensions',
  'transport.no-redirect',
  'transport.headers-30s',
  'reply.task-events',
  'reply.ids',
  'reply.context-created',
  'reply.context-kept',
  'reply.artifact-text',
  'reply.final-task',
  'reply.events-5min',
  'turn.messageid-dedupe',
  'method.get-task',
  'method.subscribe',
  'method.cancel',
  'method.list-tasks',
  'errors.busy-code',
  'identity.verified',
  'poll.progress',
] as const;
export type RuleId = (typeof RULE_IDS)[number];

export type RuleStatus = 'PASS' | 'FAIL' | 'WARN' | 'SKIP';

export interface Verdict {
  status: RuleStatus;
  /** What the checker saw, in a sentence. */
  detail: string;
  /**
   * A consequence other than the rule's own, for a WARN that has a milder one; null when a
   * WARN has none worth naming.
   */
  consequence?: string | null;
}

export interface Rule {
  id: RuleId;
  /** The contract rows (docs/agent-contract.md) the rule checks. */
  rows: readonly string[];
  /** What the broker does when the rule fails, in the contract's words. */
  consequence: string;
  judge(obs: Observations): Verdict;
}

export const pass = (detail: string): Verdict => ({ status: 'PASS', detail });
export const fail = (detail: string, consequence?: string): Verdict =>
  consequence === undefined ? { status: 'FAIL', detail } : { status: 'FAIL', detail, consequence };
export const warn = (detail: string, consequence?: string | null): Verdict =>
  consequence === undefined ? { status: 'WARN', detail } : { status: 'WARN', detail, consequence };
export const skip = (detail: string): Verdict => ({ status: 'SKIP', detail });

/** The SKIP for a rule whose call was never made: says why the calls stopped. */
export function notTried(obs: Observations, what: string): Verdict {
  return skip(obs.stopped === undefined ? `${what} was not tried` : `not tried: ${obs.stopped}`);
}

/** Agent text is quoted short: enough to recognise, never a wall. */
export function preview(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
