import { randomUUID } from 'node:crypto';
import type { Span } from '@opentelemetry/api';
import {
  AgentCallError,
  LostConnectionError,
  MalformedResponseError,
  OutcomeUnknownError,
  StreamIdleError,
} from '../core/agent/errors.js';
import type { StreamEvent } from '../core/agent/model.js';
import type { ReadyEvents } from '../core/ports.js';
import type { AgentCardInfo } from './card.js';
import { classifyNetworkError, type HttpResponse, header, readBounded, send } from './http.js';
import { type CallKind, decodeResponse, encodeRequest, errorFromRpc } from './jsonrpc.js';
import type { ResolvedOptions } from './options.js';
import { type SseEvent, SseParser } from './sse.js';
import { endCallSpan, spanHeaders } from './telemetry.js';
import { type CallOptions, operationOf, type Transport } from './transport.js';
import type { WireCodec } from './wire/codec.js';

/**
 * The client's streaming calls (SendStreamingMessage, SubscribeToTask): one request whose
 * answer is an SSE stream, or a single JSON-RPC body when the agent answers at once. The stream
 * is bounded (an event's size, a quiet stream, the whole call's length) and its end, however it
 * comes, is one of the contract's errors or a clean finish.
 */

type Step = IteratorResult<StreamEvent, void>;

/**
 * One streaming call. `request` picks the method and params once the card has said which wire
 * version to speak.
 *
 * Written as an iterator by hand rather than an async generator: a generator's `yield` costs
 * two promise hops per event, and a stream is thousands of events. Here an event already read
 * (most are: one chunk of the body carries dozens) is decoded and handed over in an already
 * resolved promise. It behaves as the generator did: nothing is sent before the first `next()`;
 * calls made while one is in flight wait for it; `return()` (a `break` in `for await`) ends the
 * call as a finished one; an error ends the call and is the contract's error; after the end,
 * `next()` says done. One thing is better: after `return()` the little an agent still sends is
 * drained, so the connection is reused (the generator's `for await` over the body destroyed it).
 */
export function streamCall(
  transport: Transport,
  wire: (signal?: AbortSignal) => Promise<{ codec: WireCodec; card: AgentCardInfo }>,
  request: (codec: WireCodec, card: AgentCardInfo) => [string, unknown],
  kind: CallKind,
  options: CallOptions,
): AsyncGenerator<StreamEvent> {
  return new StreamCall(transport, wire, request, kind, options);
}

const done = (): Step => ({ done: true, value: undefined });

/** A stream with no events waiting (shared: it is never written to). */
const NO_FRAMES: readonly SseEvent[] = [];

class StreamCall implements AsyncGenerator<StreamEvent>, ReadyEvents {
  readonly #transport: Transport;
  readonly #o: ResolvedOptions;
  readonly #wire: (signal?: AbortSignal) => Promise<{ codec: WireCodec; card: AgentCardInfo }>;
  readonly #request: (codec: WireCodec, card: AgentCardInfo) => [string, unknown];
  readonly #kind: CallKind;
  readonly #options: CallOptions;
  #state: 'new' | 'open' | 'closed' = 'new';
  /** The call in flight (the request, or a chunk awaited): later calls queue behind it. */
  #busy: Promise<unknown> | undefined;
  #codec: WireCodec | undefined;
  #method = '';
  #params: unknown;
  readonly #id = randomUUID();
  #started = 0;
  #span: Span | undefined;
  #res: HttpResponse | undefined;
  #chunks: AsyncIterator<unknown> | undefined;
  #parser: SseParser | undefined;
  /** The events of the last chunk, and the next one to hand over. */
  #frames: readonly SseEvent[] = NO_FRAMES;
  #nextFrame = 0;
  #seen = 0;
  /** The body was read to its end (or held the one event of a plain JSON answer). */
  #finished = false;
  /** Bytes of the body read so far (the drain's bound counts them: see #close). */
  #bytesRead = 0;
  // one timer for the whole stream. Events only stamp the time; when the timer fires it
  // re-arms for the rest of the window, so the per-event cost is a clock read, not a timer.
  #lastEventAt = 0;
  #idleFired = false;
  #idle: NodeJS.Timeout | undefined;

  constructor(
    transport: Transport,
    wire: (signal?: AbortSignal) => Promise<{ codec: WireCodec; card: AgentCardInfo }>,
    request: (codec: WireCodec, card: AgentCardInfo) => [string, unknown],
    kind: CallKind,
    options: CallOptions,
  ) {
    this.#transport = transport;
    this.#o = transport.options;
    this.#wire = wire;
    this.#request = request;
    this.#kind = kind;
    this.#options = options;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<Step> {
    if (this.#busy !== undefined) return this.#after(() => this.next());
    if (this.#state === 'closed') return Promise.resolve(done());
    if (this.#state === 'open') {
      // Time the consumer spends does not count against the agent.
      this.#lastEventAt = performance.now();
      const frame = this.#take();
      if (frame !== undefined) {
        try {
          return Promise.resolve({ done: false, value: this.#decode(frame) });
        } catch (error) {
          return Promise.reject(this.#fail(error));
        }
      }
    }
    return this.#track(this.#pull());
  }

  /**
   * The next event of the last read, handed over at once (`ReadyEvents`): what next() would
   * resolve with, without its promise and the await behind it. Undefined when the next event
   * must be read from the body (or a call is in flight, or the stream ended): then next().
   * A frame that does not decode throws here, as next() would reject.
   */
  takeReady(): StreamEvent | undefined {
    if (this.#busy !== undefined || this.#state !== 'open') return undefined;
    const frame = this.#take();
    if (frame === undefined) return undefined;
    this.#lastEventAt = performance.now();
    try {
      return this.#decode(frame);
    } catch (error) {
      throw this.#fail(error);
    }
  }

  /** The consumer stopped reading (it had what it needed, a settled task, say). */
  return(): Promise<Step> {
    if (this.#busy !== undefined) return this.#after(() => this.return());
    if (this.#state !== 'open') {
      this.#state = 'closed';
      return Promise.resolve(done());
    }
    return this.#track(this.#stop(undefined));
  }

  throw(error: unknown): Promise<Step> {
    if (this.#busy !== undefined) return this.#after(() => this.throw(error));
    if (this.#state !== 'open') {
      this.#state = 'closed';
      return Promise.reject(error);
    }
    return this.#track(this.#stop({ error }));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }

  #track(work: Promise<Step>): Promise<Step> {
    this.#busy = work;
    const clear = (): void => {
      this.#busy = undefined;
    };
    // Registered before the caller's own reaction, so the call is no longer busy when it runs.
    work.then(clear, clear);
    return work;
  }

  #after(call: () => Promise<Step>): Promise<Step> {
    const busy = this.#busy as Promise<unknown>;
    return busy.then(call, call);
  }

  /**
   * The next event of the last chunk read, if any. The chunk's events are let go of as its last
   * is handed over: their data are slices of the whole chunk's text, which a stream held between
   * chunks (most of an answer's life) would otherwise keep, about 5 KiB for a read of 20 chunks.
   */
  #take(): SseEvent | undefined {
    const frame = this.#frames[this.#nextFrame];
    if (frame === undefined) return undefined;
    if (++this.#nextFrame === this.#frames.length) {
      this.#frames = NO_FRAMES;
      this.#nextFrame = 0;
    }
    return frame;
  }

  /** The slow path: the request itself, or the next chunk of the body. */
  async #pull(): Promise<Step> {
    if (this.#state === 'new') {
      this.#state = 'open';
      try {
        await this.#prepare();
      } catch (error) {
        // The card or the request could not be had: nothing was sent, nothing to report.
        this.#state = 'closed';
        throw error;
      }
    }
    try {
      if (this.#res === undefined) {
        const single = await this.#open();
        if (single !== undefined) return { done: false, value: single };
      }
      while (this.#nextFrame >= this.#frames.length) {
        const chunks = this.#chunks;
        const parser = this.#parser;
        if (this.#finished || chunks === undefined || parser === undefined) {
          this.#close('ok');
          return done();
        }
        const read = await chunks.next();
        if (read.done === true) {
          parser.end();
          this.#finished = true;
        } else {
          const chunk = read.value as Buffer;
          this.#bytesRead += chunk.length;
          this.#frames = parser.push(chunk);
          this.#nextFrame = 0;
        }
      }
      const frame = this.#take() as SseEvent;
      return { done: false, value: this.#decode(frame) };
    } catch (error) {
      throw this.#fail(error);
    }
  }

  /** The card, the codec and the request's params; the call's span starts here. */
  async #prepare(): Promise<void> {
    const { codec, card } = await this.#wire(this.#options.signal);
    const [method, params] = this.#request(codec, card);
    this.#codec = codec;
    this.#method = method;
    this.#params = params;
    this.#started = this.#o.now();
    this.#span = this.#transport.span(method, method, codec.version, this.#options.trace);
    this.#lastEventAt = performance.now();
  }

  /**
   * Sends the request. An agent that answers at once with a plain JSON-RPC body (errors before
   * the stream starts come that way from the SDKs) gives its one event here.
   */
  async #open(): Promise<StreamEvent | undefined> {
    const o = this.#o;
    const codec = this.#codec as WireCodec;
    const idleMs = o.timeouts.streamIdleMs;
    const res = await send({
      url: o.endpoint,
      method: 'POST',
      headers: await this.#transport.rpcHeaders(
        codec,
        'text/event-stream, application/json',
        // Set by the step before (#prepare); a stream opened without it carries the caller's.
        this.#span === undefined ? this.#options.trace : spanHeaders(this.#span),
        this.#options.caller,
      ),
      body: encodeRequest(this.#id, this.#method, this.#params),
      headersTimeoutMs: o.timeouts.headersMs,
      bodyIdleMs: idleMs,
      totalMs: o.timeouts.streamTotalMs,
      dispatcher: o.dispatcher,
      ...(this.#options.signal === undefined ? {} : { signal: this.#options.signal }),
    });
    this.#res = res;
    if (res.status < 200 || res.status >= 300) throw await this.#transport.statusError(res, this.#kind);
    const type = (header(res.headers, 'content-type') ?? '').toLowerCase();
    if (type.startsWith('application/json')) {
      const body = await readBounded(
        res,
        o.limits.maxEventBytes,
        'event',
        o.timeouts.bodyIdleMs,
        o.timeouts.callTotalMs,
      );
      const event = this.#decode({ type: 'message', data: body });
      this.#finished = true;
      return event;
    }
    if (!type.startsWith('text/event-stream')) {
      throw new MalformedResponseError(`the agent answered a stream with content type "${type}"`);
    }
    this.#parser = new SseParser(o.limits.maxEventBytes);
    // Not destroyed when the consumer leaves early (as a `for await` over the body would do, which
    // closes the connection): #close drains what little is left, so the connection is reused.
    this.#chunks = res.body.iterator({ destroyOnReturn: false });
    this.#lastEventAt = performance.now();
    this.#idle = setTimeout(this.#onIdleTimer, idleMs);
    return undefined;
  }

  readonly #onIdleTimer = (): void => {
    const idleMs = this.#o.timeouts.streamIdleMs;
    const quiet = performance.now() - this.#lastEventAt;
    if (quiet < idleMs) {
      this.#idle = setTimeout(this.#onIdleTimer, idleMs - quiet);
      return;
    }
    this.#idleFired = true;
    this.#res?.abort(new StreamIdleError(idleMs, this.#seen));
  };

  /** One event's JSON-RPC envelope and payload, through the codec (which checks it). */
  #decode(frame: SseEvent): StreamEvent {
    const reply = decodeResponse(frame.data, this.#id);
    if (!reply.ok) throw errorFromRpc(reply.error, this.#kind);
    const event = (this.#codec as WireCodec).decodeEvent(reply.result);
    this.#seen++;
    return event;
  }

  /**
   * Ends a call the consumer left (`return()`, or `throw()` with `stop.error`): the body's
   * iterator lets go of the body first, then the call ends (drained, or cut on an error).
   */
  async #stop(stop: { error: unknown } | undefined): Promise<Step> {
    try {
      await this.#chunks?.return?.();
    } catch (error) {
      if (stop === undefined) throw this.#fail(error);
    }
    if (stop !== undefined) throw this.#fail(stop.error);
    this.#close('ok');
    return done();
  }

  /** The call failed: its error as the contract's, and the call ended with that outcome. */
  #fail(error: unknown): unknown {
    if (this.#state === 'closed') return error;
    const bound = this.#res?.boundFailure();
    const failure = streamFailure(
      this.#o,
      bound === undefined ? error : new LostConnectionError(bound.reason, this.#seen, { cause: error }),
      this.#kind,
      this.#seen,
      this.#idleFired,
    );
    this.#close(failure instanceof AgentCallError ? failure.code : 'error');
    return failure;
  }

  #close(outcome: string): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#frames = NO_FRAMES;
    clearTimeout(this.#idle);
    const res = this.#res;
    res?.finish();
    if (!this.#finished && res !== undefined) {
      if (outcome === 'ok') {
        // Agents usually close the stream right after the consumer has what it needs: drain a
        // little, briefly, so the connection can be reused; one that keeps talking is cut.
        // The 250 ms bound is a plain timer, cleared when the drain ends: AbortSignal.timeout
        // would cost every stream a weak reference and a finalizer on top of its timer.
        const body = res.body;
        body.on('error', () => undefined);
        const bound = setTimeout(() => body.destroy(), 250);
        bound.unref();
        // undici's limit counts the whole body, what was read before included: 64 KiB more than
        // that. (With the limit alone, every answer over 64 KiB cut its connection, though only
        // the stream's last bytes were left, and built an error with its stack to do it.)
        body
          .dump({ limit: this.#bytesRead + 64 * 1024 })
          .catch(() => undefined)
          .finally(() => clearTimeout(bound));
      } else {
        res.abort(new Error('stream closed by the client'));
      }
    }
    const codec = this.#codec as WireCodec;
    if (this.#span !== undefined) endCallSpan(this.#span, outcome, this.#seen);
    this.#transport.publish(
      this.#method,
      operationOf(codec, this.#method),
      codec.version,
      this.#started,
      outcome,
      this.#seen,
    );
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
