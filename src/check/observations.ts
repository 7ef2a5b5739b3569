import type { AgentCardInfo, StreamEvent, Task } from '../a2a/index.js';
import type { DialectName } from '../dialects/index.js';

/**
 * What the checker saw, call by call. The calls fill this in (observe.ts); the rules only read
 * it (rules/), so every rule is a pure function of what happened and can be judged, and tested,
 * without a network.
 */

/** One call's result: its value, or the error it failed with and whether our own bound cut it. */
export type Outcome<T> =
  | { ok: true; value: T; ms: number }
  | { ok: false; error: unknown; ms: number; timedOut: boolean };

/** A raw HTTP exchange (probe.ts), where the client would hide a redirect or a timing. */
export type HttpProbe =
  | {
      kind: 'response';
      status: number;
      location: string | undefined;
      contentType: string;
      /** From sending the request to the response headers. */
      headersMs: number;
      body: string;
    }
  /** No connection could be made at all: nothing reached the agent. */
  | { kind: 'unreachable'; reason: string }
  | { kind: 'headers-timeout'; limitMs: number }
  /** Connected, but the exchange broke (reset, body too large, …). */
  | { kind: 'broken'; reason: string };

export interface CardObservation {
  url: string;
  probe: HttpProbe;
  /** The card's JSON, when the probe got a 2xx body that parses. */
  json: unknown;
  /** What our client made of the card: the same checks the broker makes before any call. */
  client: Outcome<AgentCardInfo> | undefined;
}

/** A JSON-RPC call of a method no agent has, sent raw (errors.busy-code, transport rules). */
export interface UnsupportedMethodProbe {
  method: string;
  http: HttpProbe;
  /** The JSON-RPC error code the agent answered with, if it answered one. */
  rpcCode: number | undefined;
  rpcMessage: string;
}

/**
 * With --identity-keys: a GetTask for no task, sent four times with an assertion that is good,
 * signed by another key under the same key id, expired, and for another audience.
 */
export interface IdentityProbes {
  good: HttpProbe;
  badSignature: HttpProbe;
  expired: HttpProbe;
  otherAudience: HttpProbe;
}

export interface TurnObservation {
  /** What was sent: a probe text, a fixed messageId, and the context (undefined on a first turn). */
  messageId: string;
  contextId: string | undefined;
  events: StreamEvent[];
  /** Events seen in all, including those past the stored cap. */
  eventCount: number;
  /** The longest wait for an event, the first one included. */
  maxGapMs: number;
  /** Why the stream stopped, when it did not end normally. */
  failure: { error: unknown; timedOut: boolean } | undefined;
  /** P-2, P-3: sent with SendMessage and followed with GetTask (`--polling`, a card without streaming). */
  polled?: PolledTurn;
  /**
   * GetTask after a stream that ended before its task settled, as the broker does: the
   * last answer, polled until the task settled or the call bound ran out.
   */
  followUp: Outcome<Task> | undefined;
}

/** How a polled turn went: its events are the send's answer, then each GetTask read as a task event. */
export interface PolledTurn {
  /** How long SendMessage took to answer (a long one ignored the immediate return it was asked for). */
  sendMs: number;
  /** GetTask reads made until the task settled or the bound ran out. */
  reads: number;
  /** Reads that showed something new (state or answer text). */
  changes: number;
}

export interface SubscribeObservation {
  /** The first event of the subscription, or undefined when the stream ended with none. */
  first: StreamEvent | undefined;
}

/** ListTasks by the first turn's context, looking for its messageId (M-6). */
export interface ListObservation {
  found: Task | undefined;
  /** How many tasks were listed, and how many carried any history. */
  listed: number;
  withHistory: number;
}

export interface Observations {
  endpoint: string;
  dialect: DialectName;
  speaks: readonly string[];
  timeoutMs: number;
  /** `--polling`: checked as a backend with spec.polling reaches it. */
  polling: boolean;
  /** The turns went through SendMessage and GetTask (`--polling` and a card without streaming). */
  polled: boolean;
  /** DT-6 allows 30 s; a shorter --timeout makes this shorter. */
  headersLimitMs: number;
  card: CardObservation | undefined;
  unsupported: UnsupportedMethodProbe | undefined;
  /** Only with --identity-keys. */
  identity: IdentityProbes | undefined;
  firstTurn: TurnObservation | undefined;
  secondTurn: TurnObservation | undefined;
  /** The first turn's messageId sent again, with no context, as the broker resends. */
  repeat: TurnObservation | undefined;
  getTask: Outcome<Task> | undefined;
  subscribe: Outcome<SubscribeObservation> | undefined;
  cancel: Outcome<Task> | undefined;
  /** 'not-in-version' on 0.3, where ListTasks does not exist. */
  listTasks: Outcome<ListObservation> | 'not-in-version' | undefined;
  /** Every failed client call, so the transport rules see a redirect or a late header anywhere. */
  callErrors: Array<{ call: string; error: unknown }>;
  /** Why the calls stopped early, for the rules whose observation is missing. */
  stopped: string | undefined;
}
