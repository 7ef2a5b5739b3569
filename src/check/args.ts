import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { Identity } from '../a2a/index.js';
import { parseDuration } from '../control/crds/duration.js';
import { type AgentRef, type DialectName, dialectSpec } from '../dialects/index.js';
import { CheckArgumentError } from './errors.js';

/**
 * `agentkourier check` arguments: node's parseArgs splits them, zod checks them. Messages name
 * the option and the rule, never the value, because `--token` and `--header` carry secrets.
 */

export const USAGE = `Usage: agentkourier check <endpoint> [options]

Runs the agent contract against a live agent with real calls and prints one line per rule.

Options:
  --dialect a2a|kagent-v1   how the broker reaches the agent (default a2a)
  --agent <ns>/<name>       the kagent agent (kagent-v1 only; the endpoint is then kagent's base URL)
  --token <token>           call with Authorization: Bearer <token>
  --user-id <id>            call with X-User-Id: <id> (default: agentkourier-check)
  --header 'Name: value'    a static header for every call (repeatable)
  --identity-keys <file>    call as a per-person Binding does (docs/identity.md): every call
                            carries an assertion signed with this key file, and the checker
                            sends the agent a bad, an expired and a wrong-audience one too
  --issuer <url>            the broker's issuer URL the agent verifies against (with --identity-keys)
  --audience <aud>          the assertions' aud (default: the endpoint, as a Binding's default)
  --identity-header <name>  the header the assertion goes in (default Authorization)
  --timeout <duration>      bound for each call, e.g. 30s, 2m (default 60s)
  --polling                 check the agent as a backend with spec.polling would reach it: a card
                            without streaming is then sent turns with SendMessage and GetTask
  --json                    print {"agent": …, "rules": […]} instead of lines
  -h, --help                print this help

Exit code: 0 when no rule fails, 1 when one does, 2 when the agent cannot be reached or the
arguments are wrong.`;

/** The identity used when none is given: one identity header is always sent (S-8). */
export const DEFAULT_USER_ID = 'agentkourier-check';
export const DEFAULT_TIMEOUT_MS = 60_000;
const MIN_TIMEOUT_MS = 100;
const MAX_TIMEOUT_MS = 10 * 60_000;

export interface CheckOptions {
  /** The URL every call goes to: the argument itself, or kagent's per-agent path (DT-2). */
  endpoint: string;
  dialect: DialectName;
  /** Extension URIs the dialect speaks (DT-4). */
  speaks: readonly string[];
  identity: Identity;
  /** With a per-person identity: the key file its assertions are signed with, and the issuer. */
  signing?: { keyFile: string; issuer: string };
  headers: Record<string, string>;
  json: boolean;
  timeoutMs: number;
  /** P-1: check as a backend with spec.polling enabled reaches the agent. */
  polling: boolean;
}

export type ParsedArgs = { help: true } | { help: false; options: CheckOptions };

const optionsSchema = z
  .object({
    endpoint: z
      .string({ error: 'the endpoint is missing' })
      .url('the endpoint must be a URL')
      .refine((u) => /^https?:\/\//i.test(u), 'the endpoint must be an http or https URL'),
    dialect: z.enum(['a2a', 'kagent-v1'], { error: '--dialect must be a2a or kagent-v1' }).default('a2a'),
    agent: z
      .string()
      .regex(/^[^/\s]+\/[^/\s]+$/, '--agent must be <namespace>/<name>')
      .optional(),
    token: z.string().min(1, '--token is empty').optional(),
    userId: z.string().min(1, '--user-id is empty').optional(),
    header: z.array(z.string()).default([]),
    json: z.boolean().default(false),
    polling: z.boolean().default(false),
    timeout: z.string().optional(),
    identityKeys: z.string().min(1, '--identity-keys is empty').optional(),
    issuer: z
      .url('--issuer must be an http or https URL')
      .refine((u) => /^https?:\/\//.test(u), '--issuer must be an http or https URL')
      .optional(),
    audience: z.string().min(1, '--audience is empty').optional(),
    identityHeader: z
      .string()
      .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, '--identity-header must be an HTTP header name')
      .optional(),
  })
  .superRefine((o, ctx) => {
    const person = o.identityKeys !== undefined;
    if (person && o.issuer === undefined)
      ctx.addIssue({ code: 'custom', message: '--identity-keys needs --issuer <url>' });
    if (!person && (o.issuer ?? o.audience ?? o.identityHeader) !== undefined)
      ctx.addIssue({
        code: 'custom',
        message: '--issuer, --audience and --identity-header go with --identity-keys',
      });
    if (person && (o.token !== undefined || o.userId !== undefined))
      ctx.addIssue({ code: 'custom', message: 'give --identity-keys or --token or --user-id, one of them' });
    if (o.dialect === 'kagent-v1' && o.agent === undefined) {
      ctx.addIssue({ code: 'custom', message: '--dialect kagent-v1 needs --agent <namespace>/<name>' });
    }
    if (o.dialect === 'a2a' && o.agent !== undefined) {
      ctx.addIssue({ code: 'custom', message: '--agent applies only to --dialect kagent-v1' });
    }
    if (o.token !== undefined && o.userId !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'give --token or --user-id, not both' });
    }
  });

/** Parses argv (after `check`). Throws CheckArgumentError; never calls anything. */
export function parseCheckArgs(argv: readonly string[]): ParsedArgs {
  let raw: ReturnType<typeof split>;
  try {
    raw = split(argv);
  } catch (error) {
    // parseArgs names the option in its message (unknown option, missing value), not a value.
    throw new CheckArgumentError(error instanceof Error ? error.message : 'invalid arguments');
  }
  if (raw.values.help === true) return { help: true };
  if (raw.positionals.length > 1) throw new CheckArgumentError('give exactly one endpoint');
  const parsed = optionsSchema.safeParse({
    endpoint: raw.positionals[0],
    dialect: raw.values.dialect,
    agent: raw.values.agent,
    token: raw.values.token,
    userId: raw.values['user-id'],
    header: raw.values.header,
    json: raw.values.json,
    polling: raw.values.polling,
    timeout: raw.values.timeout,
    identityKeys: raw.values['identity-keys'],
    issuer: raw.values.issuer,
    audience: raw.values.audience,
    identityHeader: raw.values['identity-header'],
  });
  if (!parsed.success) {
    throw new CheckArgumentError(parsed.error.issues[0]?.message ?? 'invalid arguments');
  }
  const o = parsed.data;
  const spec = dialectSpec(o.dialect);
  const endpoint = spec.endpoint(o.endpoint, agentRef(o.agent));
  return {
    help: false,
    options: {
      endpoint,
      dialect: o.dialect,
      speaks: spec.extensions,
      identity:
        o.identityKeys !== undefined
          ? {
              kind: 'person',
              audience: o.audience ?? endpoint,
              header: o.identityHeader ?? 'Authorization',
              userIdHeader: o.dialect === 'kagent-v1',
            }
          : o.token !== undefined
            ? { kind: 'bearer', token: o.token }
            : { kind: 'user-id', userId: o.userId ?? DEFAULT_USER_ID },
      ...(o.identityKeys === undefined || o.issuer === undefined
        ? {}
        : { signing: { keyFile: o.identityKeys, issuer: o.issuer } }),
      headers: parseHeaders(o.header),
      json: o.json,
      polling: o.polling,
      timeoutMs: parseTimeout(o.timeout),
    },
  };
}

function split(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      dialect: { type: 'string' },
      agent: { type: 'string' },
      token: { type: 'string' },
      'user-id': { type: 'string' },
      'identity-keys': { type: 'string' },
      issuer: { type: 'string' },
      audience: { type: 'string' },
      'identity-header': { type: 'string' },
      header: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      polling: { type: 'boolean' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function agentRef(text: string | undefined): AgentRef | undefined {
  if (text === undefined) return undefined;
  const [namespace = '', name = ''] = text.split('/');
  return { namespace, name };
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * 'Name: value' pairs. The client refuses names it sets itself (Authorization, A2A-*, …) when
 * it is built; here only the shape is checked, and a name given twice is refused rather than
 * silently keeping one of the two.
 */
function parseHeaders(pairs: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  const seen = new Set<string>();
  for (const pair of pairs) {
    const colon = pair.indexOf(':');
    const name = colon < 0 ? '' : pair.slice(0, colon).trim();
    if (!HEADER_NAME.test(name)) throw new CheckArgumentError("--header must be 'Name: value'");
    const key = name.toLowerCase();
    if (seen.has(key)) throw new CheckArgumentError(`--header ${name} is given twice`);
    seen.add(key);
    headers[name] = pair.slice(colon + 1).trim();
  }
  return headers;
}

function parseTimeout(text: string | undefined): number {
  if (text === undefined) return DEFAULT_TIMEOUT_MS;
  const ms = parseDuration(text);
  if (ms === undefined) throw new CheckArgumentError('--timeout must be a duration such as 30s or 2m');
  if (ms < MIN_TIMEOUT_MS || ms > MAX_TIMEOUT_MS) {
    throw new CheckArgumentError('--timeout must be between 100ms and 10m');
  }
  return ms;
}
