import type { AgentCardInfo } from '../../a2a/card.js';
import {
  AgentCallError,
  CardFetchError,
  CredentialsRejectedError,
  NoJsonRpcInterfaceError,
  StreamingNotAdvertisedError,
  UnsupportedExtensionRequiredError,
} from '../../core/agent/errors.js';
import type { CardSummary } from '../crds/common.js';
import { type Reason, Reasons } from '../status.js';

/**
 * What a card fetch means for status (DT-1..DT-4, DT-8): accepted with its summary, or refused
 * with the reason `kubectl get` shows. Messages are ours; what an agent wrote is kept out,
 * except the URIs of required extensions, which name what to fix.
 */

export type CardOutcome =
  | { ok: true; card: Omit<CardSummary, 'fetchedAt'> }
  | { ok: false; reason: Reason; message: string };

export function acceptedCard(info: AgentCardInfo): CardOutcome {
  return {
    ok: true,
    card: {
      name: info.name,
      version: info.agentVersion,
      protocolVersion: info.protocolVersion,
      streaming: info.streaming,
      extensions: info.extensions.map((e) => ({ uri: e.uri, required: e.required })),
    },
  };
}

export function refusedCard(error: unknown): CardOutcome {
  if (error instanceof NoJsonRpcInterfaceError) {
    return { ok: false, reason: Reasons.NoJSONRPCInterface, message: `[DT-1] ${error.message}` };
  }
  if (error instanceof StreamingNotAdvertisedError) {
    return { ok: false, reason: Reasons.StreamingNotAdvertised, message: `[DT-3] ${error.message}` };
  }
  if (error instanceof UnsupportedExtensionRequiredError) {
    return {
      ok: false,
      reason: Reasons.UnsupportedExtensionRequired,
      message: `[DT-4] ${error.message}: ${error.uris.join(', ')}`,
    };
  }
  if (error instanceof CredentialsRejectedError) {
    return {
      ok: false,
      reason: Reasons.CredentialsRejected,
      message: `the agent rejected the credentials when its card was fetched (HTTP ${error.status})`,
    };
  }
  if (error instanceof CardFetchError) {
    return { ok: false, reason: Reasons.CardFetchFailed, message: withCause(error.message, error.cause) };
  }
  if (error instanceof AgentCallError) {
    return {
      ok: false,
      reason: Reasons.CardFetchFailed,
      message: `the agent card could not be read: ${error.message}`,
    };
  }
  return {
    ok: false,
    reason: Reasons.CardFetchFailed,
    message: withCause('the agent card could not be fetched', error),
  };
}

/**
 * Adds the cause's own words when they are ours or the system's (an errno code, a typed
 * error's message): enough to tell "connection refused" from "HTTP 404" in status.
 */
function withCause(message: string, cause: unknown): string {
  if (cause instanceof AgentCallError) return `${message}: ${cause.message}`;
  const code = systemCode(cause);
  return code === undefined ? message : `${message} (${code})`;
}

function systemCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code: unknown = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code;
    current = current.cause;
  }
  return undefined;
}

/** Two outcomes are the same state when their reason (or card) did not change. */
export function sameOutcome(a: CardOutcome, b: CardOutcome): boolean {
  if (a.ok && b.ok) return JSON.stringify(a.card) === JSON.stringify(b.card);
  if (!a.ok && !b.ok) return a.reason === b.reason && a.message === b.message;
  return false;
}
