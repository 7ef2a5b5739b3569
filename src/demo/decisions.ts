import type { Message } from '@a2a-js/sdk';
import { APPROVAL_TOOLS, HITL_URI } from './scenarios.js';

/** How the person decided on the demo's tool approval, read as kagent reads it. */

export interface Decision {
  id: string;
  approved: boolean;
  reason?: string;
}

/** Reads kagent's tool_approval_response from the answer's metadata. */
export function decisionsOf(message: Message): Decision[] | undefined {
  if (!message.extensions.includes(HITL_URI)) return undefined;
  const payload = message.metadata?.[HITL_URI] as { type?: unknown; approvals?: unknown } | undefined;
  if (payload?.type !== 'tool_approval_response' || !Array.isArray(payload.approvals)) return undefined;
  const out: Decision[] = [];
  for (const entry of payload.approvals as Array<Record<string, unknown>>) {
    if (typeof entry.id !== 'string' || typeof entry.approved !== 'boolean') return undefined;
    out.push({
      id: entry.id,
      approved: entry.approved,
      ...(typeof entry.rejection_reason === 'string' ? { reason: entry.rejection_reason } : {}),
    });
  }
  // kagent refuses a response that does not decide every call exactly once.
  const ids = out.map((d) => d.id).sort();
  const expected = APPROVAL_TOOLS.map((t) => t.id).sort();
  return JSON.stringify(ids) === JSON.stringify(expected) ? out : undefined;
}
