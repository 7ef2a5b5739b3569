import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';
import type { Caller } from '../core/ports.js';

/**
 * The client's settings, validated once at construction so that a bad header or URL fails at
 * start with a message naming the setting, never at the first turn. Secrets (the token) are
 * never echoed in these messages.
 */

export type Identity =
  | { kind: 'bearer'; token: string }
  | { kind: 'user-id'; userId: string }
  | PersonIdentity;

/**
 * A per-person identity (docs/identity.md): every call carries an assertion the broker signs for
 * whom it is made, for `audience`, in `header` (Authorization: as a bearer token); with
 * `userIdHeader`, X-User-Id names the person too (kagent keeps sessions per user id).
 */
export interface PersonIdentity {
  kind: 'person';
  audience: string;
  header: string;
  userIdHeader: boolean;
  /**
   * The assertion is exchanged at the identity provider for the person's access token (RFC
   * 8693), which is sent instead: read by whoever builds the assertion source (src/identity/
   * exchange.ts), never by the client.
   */
  exchange?: ExchangeSettings;
  /**
   * Each person signs in once at the identity provider, and their access token is sent: read by
   * whoever builds the assertion source (src/identity/sign-in/), never by the client.
   */
  signIn?: SignInSettings;
}

/** A per-person identity by sign-in, its client secret (if any) read from its Secret. */
export interface SignInSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  scope: string;
  emailClaim: string;
  /** The agent the tokens are for (its AgentBackend's name), named to the person. */
  agent: string;
}

/** A per-person identity's token exchange, its client secret already read from its Secret. */
export interface ExchangeSettings {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** The access token's audience, asked of the provider (RFC 8693 `audience`). */
  audience?: string;
  /** The scope asked for, space separated. */
  scope?: string;
  /** The agent the tokens are for (its AgentBackend's name), named to a person it refuses. */
  agent: string;
}

/** An assertion for a caller and an audience, and the subject it names. */
export interface Assertion {
  token: string;
  subject: string;
  /** What X-User-Id carries: the person's email, else the subject. */
  userId: string;
}

/** Signs the assertion of a call (the broker's identity layer, src/identity/). */
export type AssertionSource = (caller: Caller | undefined, audience: string) => Promise<Assertion>;

/** A W3C trace context as sent to the agent (a call's span's, see telemetry.ts). */
export interface TraceHeaders {
  traceparent: string;
  tracestate?: string;
}

export interface A2AClientOptions {
  /** The agent endpoint (DT-2, DT-7): the card is read below it and every call goes to it. */
  endpoint: string;
  identity: Identity;
  /** Signs a per-person identity's assertions; required with one. */
  assertions?: AssertionSource;
  /** The AgentBackend's static headers, already resolved from Secrets. */
  headers?: Record<string, string>;
  /** Extension URIs the dialect speaks: asked for when the card lists them (S-8, DT-4). */
  extensions?: readonly string[];
  /**
   * The AgentBackend opted into polling (`spec.polling.enabled`): a card without streaming is
   * accepted, and its turns are sent with the non-streaming send and followed with GetTask.
   */
  polling?: boolean;
  limits?: Partial<Limits>;
  timeouts?: Partial<Timeouts>;
  listTasks?: Partial<ListTasksSettings>;
  /** The undici dispatcher to use (a proxy agent, a test's own); default: undici's global one. */
  dispatcher?: Dispatcher;
  now?: () => number;
}

export interface Limits {
  maxCardBytes: number;
  maxEventBytes: number;
  maxResponseBytes: number;
}

/**
 * Every wait on an agent has a bound, per kind of call, so a hostile or broken agent that sends
 * headers and then one byte a second cannot hold a turn, a card read or a checker run for ever.
 */
export interface Timeouts {
  /** DT-6: response headers must arrive within this long, on every call. */
  headersMs: number;
  /** a stream with no event for this long is cut. */
  streamIdleMs: number;
  /** A stream, however lively, is cut after this long; the task is then followed (GetTask, SubscribeToTask). */
  streamTotalMs: number;
  /** A whole body (card, JSON answer, error body): no byte for this long and it is cut. */
  bodyIdleMs: number;
  /** The card fetch, headers and body together. A pending card read never outlives it. */
  cardTotalMs: number;
  /** GetTask, CancelTask, one ListTasks page, a send answered with JSON: headers and body together. */
  callTotalMs: number;
}

export interface ListTasksSettings {
  pageSize: number;
  /** M-6: at most this many pages are followed. */
  maxPages: number;
  /** How much history each listed task carries, so a turn's messageId can be found in it. */
  historyLength: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxCardBytes: 512 * 1024,
  maxEventBytes: 4 * 1024 * 1024,
  maxResponseBytes: 16 * 1024 * 1024,
};

export const DEFAULT_TIMEOUTS: Timeouts = {
  headersMs: 30_000,
  streamIdleMs: 5 * 60_000,
  streamTotalMs: 60 * 60_000,
  bodyIdleMs: 30_000,
  cardTotalMs: 60_000,
  callTotalMs: 2 * 60_000,
};

export const DEFAULT_LIST_TASKS: ListTasksSettings = { pageSize: 50, maxPages: 100, historyLength: 100 };

/**
 * Headers the client sets itself; a static header may not replace them. The AgentBackend CRD
 * refuses the same names at admission (src/control/crds/agent-backend.ts reads this list).
 */
export const RESERVED_HEADER_NAMES = [
  'authorization',
  'x-user-id',
  'a2a-version',
  'a2a-extensions',
  'x-a2a-extensions',
  'content-type',
  'content-length',
  'accept',
  'host',
  'connection',
  'transfer-encoding',
  'traceparent',
  'tracestate',
] as const;

const RESERVED_HEADERS: ReadonlySet<string> = new Set(RESERVED_HEADER_NAMES);

const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'is not a valid HTTP header name');
const headerValue = z.string().regex(/^[^\r\n\0]*$/, 'contains a line break or NUL');
const positive = z.number().int().positive();

const schema = z.object({
  endpoint: z
    .string()
    .url()
    .refine((u) => /^https?:\/\//i.test(u), 'must be an http or https URL'),
  identity: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('bearer'), token: headerValue.min(1, 'is empty') }),
    z.object({ kind: z.literal('user-id'), userId: headerValue.min(1, 'is empty') }),
    z.object({
      kind: z.literal('person'),
      audience: z.string().min(1, 'is empty'),
      header: headerName.refine(
        (h) => !RESERVED_HEADERS.has(h.toLowerCase()) || h.toLowerCase() === 'authorization',
        'may not be a header the client sets itself (other than Authorization)',
      ),
      userIdHeader: z.boolean(),
      exchange: z
        .object({
          tokenUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
          clientId: z.string().min(1, 'is empty'),
          clientSecret: z.string().min(1, 'is empty'),
          audience: z.string().min(1).optional(),
          scope: z.string().min(1).optional(),
          agent: z.string().min(1),
        })
        .optional(),
      signIn: z
        .object({
          issuer: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
          clientId: z.string().min(1, 'is empty'),
          clientSecret: z.string().min(1, 'is empty').optional(),
          scope: z.string().min(1),
          emailClaim: z.string().min(1),
          agent: z.string().min(1),
        })
        .optional(),
    }),
  ]),
  assertions: z.custom<AssertionSource>((v) => typeof v === 'function', 'must be a function').optional(),
  headers: z
    .record(headerName, headerValue)
    .optional()
    .refine(
      (h) => h === undefined || Object.keys(h).every((k) => !RESERVED_HEADERS.has(k.toLowerCase())),
      'may not set a header the client sets itself (Authorization, X-User-Id, A2A-*, Content-Type, …)',
    ),
  extensions: z.array(z.string().min(1)).optional(),
  polling: z.boolean().optional(),
  limits: z
    .object({ maxCardBytes: positive, maxEventBytes: positive, maxResponseBytes: positive })
    .partial()
    .optional(),
  timeouts: z
    .object({
      headersMs: positive,
      streamIdleMs: positive,
      streamTotalMs: positive,
      bodyIdleMs: positive,
      cardTotalMs: positive,
      callTotalMs: positive,
    })
    .partial()
    .optional(),
  listTasks: z
    .object({
      pageSize: positive.max(100),
      maxPages: positive,
      historyLength: z.number().int().nonnegative(),
    })
    .partial()
    .optional(),
});

export interface ResolvedOptions {
  endpoint: string;
  identity: Identity;
  assertions: AssertionSource | undefined;
  headers: Record<string, string>;
  extensions: readonly string[];
  polling: boolean;
  limits: Limits;
  timeouts: Timeouts;
  listTasks: ListTasksSettings;
  dispatcher: Dispatcher | undefined;
  now: () => number;
}

export function resolveOptions(options: A2AClientOptions): ResolvedOptions {
  const parsed = schema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.join('.') ?? '';
    // The message names the setting and the rule, never the value: it may be a token.
    throw new InvalidConfigError(
      `A2A client setting ${path === '' ? '(root)' : path} ${issue?.message ?? 'is invalid'}`,
    );
  }
  return {
    endpoint: options.endpoint,
    identity: options.identity,
    assertions: options.assertions,
    headers: options.headers ?? {},
    extensions: options.extensions ?? [],
    polling: options.polling ?? false,
    limits: { ...DEFAULT_LIMITS, ...stripUndefined(options.limits) },
    timeouts: { ...DEFAULT_TIMEOUTS, ...stripUndefined(options.timeouts) },
    listTasks: { ...DEFAULT_LIST_TASKS, ...stripUndefined(options.listTasks) },
    dispatcher: options.dispatcher,
    now: options.now ?? Date.now,
  };
}

function stripUndefined<T extends object>(value: T | undefined): Partial<T> {
  if (value === undefined) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
