import { AgentCallError, CardFetchError, LostConnectionError } from '../core/agent/errors.js';
import { type AgentCardInfo, cardUrl, readCard } from './card.js';
import { discard, readBounded, send } from './http.js';
import { errorFromStatus } from './jsonrpc.js';
import { endCallSpan, setStatusCode, spanHeaders } from './telemetry.js';
import type { Transport } from './transport.js';
import { v1_0 } from './wire/v1_0/codec.js';

/**
 * DT-2, DT-8: reads the agent's card from its well-known path, with the same identity as every
 * call and no redirect, bounded in size and time, and checks it (readCard: DT-1, DT-3, DT-4).
 */
export async function fetchCard(transport: Transport): Promise<AgentCardInfo> {
  const o = transport.options;
  const url = cardUrl(o.endpoint);
  const started = o.now();
  let outcome = 'ok';
  const span = transport.span('GET', '', '', undefined);
  try {
    // Servers that speak both versions pick the card's layout by A2A-Version; ask for 1.0's.
    const res = await send({
      url,
      method: 'GET',
      headers: {
        ...transport.baseHeaders(spanHeaders(span)),
        ...v1_0.versionHeaders(),
        accept: 'application/json',
      },
      headersTimeoutMs: o.timeouts.headersMs,
      bodyIdleMs: o.timeouts.bodyIdleMs,
      totalMs: o.timeouts.cardTotalMs,
      dispatcher: o.dispatcher,
    });
    setStatusCode(span, res.status);
    if (res.status < 200 || res.status >= 300) {
      discard(res);
      const error = errorFromStatus(res.status, transport.statusHeaders(res), 'other', undefined, o.now());
      if (error.code === 'credentials_rejected') throw error;
      throw new CardFetchError(`the agent card could not be fetched (HTTP ${res.status})`, {
        cause: error,
      });
    }
    const body = await readBounded(res, o.limits.maxCardBytes, 'card', o.timeouts.bodyIdleMs);
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch (error) {
      throw new CardFetchError('the agent card is not JSON', { cause: error });
    }
    return readCard(json, { speaks: o.extensions, polling: o.polling });
  } catch (error) {
    // The card's own verdicts (DT-1, DT-3, DT-4), rejected credentials (E-1), a card too
    // large and an unreachable agent keep their class; a read that broke, stalled or took too
    // long is a card that could not be fetched (DT-2), with what happened as the cause.
    const failure =
      error instanceof AgentCallError && !(error instanceof LostConnectionError)
        ? error
        : new CardFetchError('the agent card could not be fetched', { cause: error });
    outcome = failure.code;
    throw failure;
  } finally {
    endCallSpan(span, outcome, 0);
    transport.publish('card', 'GetAgentCard', '', started, outcome, 0);
  }
}
