import { createHash } from 'node:crypto';

/**
 * The audit of tool approvals: every decision sent to an agent is one record — who decided
 * what on which tool call, with a digest of its arguments — whatever surface it was taken in.
 * Surfaces build the records; the composition root's sink writes them (one log line each) and
 * hands them on (the cluster's controller records a Kubernetes Event on the Binding).
 */

/** One decision on one tool call, as sent to the agent. */
export interface ApprovalAudit {
  binding: string;
  sessionId: string;
  /** The surface it was decided in ('slack', 'webchat'). */
  surface: string;
  workspace: string;
  channel: string;
  /** The thread (Slack: its root ts). */
  thread: string;
  /** The prompt's message (Slack: its ts). */
  prompt: string;
  taskId: string;
  /** The answer turn that carried it to the agent. */
  turnId: string;
  approver: { id: string; name?: string; email?: string };
  /** When the person decided (ISO 8601). */
  decidedAt: string;
  tool: { id: string; callId?: string; name: string };
  /** sha256 (hex) of the call's arguments as canonical JSON (sorted keys). */
  argumentsSha256: string;
  decision: 'approved' | 'denied';
  reason?: string;
  /** Decided with one press for every call (Approve all / Deny all, the web chat's one send). */
  allAtOnce: boolean;
}

/** Where audit records go. Never throws: an audit that fails must not undo a decision taken. */
export interface ApprovalAuditSink {
  record(audit: ApprovalAudit): void;
}

/** JSON with object keys sorted at every level: the same arguments always hash the same. */
export function canonicalJson(value: unknown): string {
  const seen = new WeakSet<object>();
  const walk = (v: unknown): unknown => {
    if (typeof v === 'bigint') return v.toString();
    if (v === null || typeof v !== 'object') return v;
    if (seen.has(v)) return '[circular]';
    seen.add(v);
    if (Array.isArray(v)) return v.map(walk);
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = walk((v as Record<string, unknown>)[k]);
    return out;
  };
  return JSON.stringify(walk(value)) ?? 'null';
}

/** sha256 (hex) of a tool call's arguments as canonical JSON, for the audit record. */
export function argumentsHash(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}
