import { randomUUID } from 'node:crypto';
import {
  AgentCallError,
  LostConnectionError,
  MalformedResponseError,
  OutcomeUnknownError,
  StreamIdleError,
} from '../core/agent/errors.js';
import type { StreamEvent } from '../core/agent/model.js';
import type { AgentCardInfo } from './card.js';
import { classifyNetworkError, type HttpResponse, header, readBounded, send } from './http.js';
import { type CallKind, decodeResponse, encodeRequest, errorFromRpc } from './jsonrpc.js';
import type { ResolvedOptions } from './options.js';
import { SseParser } from './sse.js';
import { endCallSpan } from './telemetry.js';
import { type CallOptions, headersOf, operationOf, type Transport } from './transport.js';
import type { WireCodec } from './wire/codec.js';

/**
 * The client's streaming calls (SendStreamingMessage, SubscribeToTask): one request whose
 * answer is an SSE stream, or a single JSON-RPC body when the agent answers at once. The stream
 * is bounded (an event's size, a quiet stream, the whole call's length) and its end, however it
 * comes, is one of the contract's errors or a clean finish.
 */

/**
 * One streaming call. `request` picks the method and params once the card has said which wire
 * version to speak. A single generator (no `yield*` layers) keeps the per-event cost low.
 */
export async function* streamCall(
  transport: Transport,
  wire: (signal?: AbortSignal) => Promise<{ codec: WireCodec; card: AgentCardInfo }>,
  request: (codec: WireCodec, card: AgentCardInfo) => [string, unknown],
  kind: CallKind,
  options: CallOptions,
): AsyncGenerator<StreamEvent> {
  const o = transport.options;
  const { codec, card } = await wire(options.signal);
  const [method, params] = request(codec, card);
  const id = randomUUID();
  const started = o.now();
  let outcome = 'ok';
  let seen = 0;
  let res: HttpResponse | undefined;
  let finished = false;
  const span = transport.span(method, method, codec.version, options.trace);
  // one timer for the whole stream. Events only stamp the time; when the timer fires it
  // re-arms for the rest of the window, so the per-event cost is a clock read, not a timer.
  const idleMs = o.timeouts.streamIdleMs;
  let lastEventAt = performance.now();
  let idleFired = false;
  let idle: NodeJS.Timeout | undefined;
  const onIdleTimer = (): void => {
    const quiet = performance.now() - lastEventAt;
    if (quiet < idleMs) {
      idle = setTimeout(onIdleTimer, idleMs - quiet);
      return;
    }
    idleFired = true;
    res?.abort(new StreamIdleError(idleMs, seen));
  };
  try {
    res = await send({
      url: o.endpoint,
      method: 'POST',
      headers: await transport.rpcHeaders(
        codec,
        'text/event-stream, application/json',
        headersOf(span, options.trace),
      ),
      body: encodeRequest(id, method, params),
      headersTimeoutMs: o.timeouts.headersMs,
      bodyIdleMs: idleMs,
      totalMs: o.timeouts.streamTotalMs,
      dispatcher: o.dispatcher,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    if (res.status < 200 || res.status >= 300) throw await transport.statusError(res, kind);
    const type = (header(res.headers, 'content-type') ?? '').toLowerCase();
    if (type.startsWith('application/json')) {
      // Errors before the stream starts come as a plain JSON-RPC body (the SDKs do this).
      const body = await readBounded(
        res,
        o.limits.maxEventBytes,
        'event',
        o.timeouts.bodyIdleMs,
        o.timeouts.callTotalMs,
      );
      const reply = decodeResponse(body, id);
      if (!reply.ok) throw errorFromRpc(reply.error, kind);
      const event = codec.decodeEvent(reply.result);
      seen++;
      finished = true;
      yield event;
      return;
    }
    if (!type.startsWith('text/event-stream')) {
      throw new MalformedResponseError(`the agent answered a stream with content type "${type}"`);
    }
    const parser = new SseParser(o.limits.maxEventBytes);
    lastEventAt = performance.now();
    idle = setTimeout(onIdleTimer, idleMs);
    for await (const chunk of res.body) {
      for (const frame of parser.push(chunk as Buffer)) {
        const reply = decodeResponse(frame.data, id);
        if (!reply.ok) throw errorFromRpc(reply.error, kind);
        const event = codec.decodeEvent(reply.result);
        seen++;
        yield event;
        // Time the consumer spends does not count against the agent.
        lastEventAt = performance.now();
      }
    }
    parser.end();
    finished = true;
  } catch (error) {
    const bound = res?.boundFailure();
    const failure = streamFailure(
      o,
      bound === undefined ? error : new LostConnectionError(bound.reason, seen, { cause: error }),
      kind,
      seen,
      idleFired,
    );
    outcome = failure instanceof AgentCallError ? failure.code : 'error';
    throw failure;
  } finally {
    clearTimeout(idle);
    res?.finish();
    if (!finished && res !== undefined) {
      if (outcome === 'ok') {
        // The consumer stopped reading (it had what it needed, a settled task, say). Agents
        // usually close the stream right after: drain a little, briefly, so the connection
        // can be reused; one that keeps talking is cut.
        res.body.on('error', () => undefined);
        res.body.dump({ limit: 64 * 1024, signal: AbortSignal.timeout(250) }).catch(() => undefined);
      } else {
        res.abort(new Error('stream closed by the client'));
      }
    }
    if (span !== undefined) endCallSpan(span, outcome, seen);
    transport.publish(method, operationOf(codec, method), codec.version, started, outcome, seen);
  }
}

/** What ended a stream, as the contract's error (R-6 idle, DT-6/E-7 lost before any event). */
function streamFailure(
  o: ResolvedOptions,
  error: unknown,
  kind: CallKind,
  seen: number,
  idleFired: boolean,
): unknown {
  if (idleFired) return new StreamIdleError(o.timeouts.streamIdleMs, seen);
  if (error instanceof AgentCallError) {
    // DT-6/E-7: a send that got no event at all may or may not have reached the agent.
    if (error instanceof LostConnectionError && kind !== 'other' && seen === 0) {
      return new OutcomeUnknownError('the connection was lost before any event', { cause: error });
    }
    return error;
  }
  if (error instanceof Error && error.name === 'AbortError') return error;
  const network = classifyNetworkError(error, seen);
  if (network instanceof LostConnectionError && kind !== 'other' && seen === 0) {
    return new OutcomeUnknownError('the connection was lost before any event', { cause: network });
  }
  return network;
}
