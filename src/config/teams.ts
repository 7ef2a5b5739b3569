import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';

/**
 * The Microsoft Teams surface's settings, read from the environment and validated once at start
 * (docs/teams.md). The secret is never echoed: a message says what is wrong, not what was given.
 *
 * - TEAMS_APP_ID (turns Teams on): the app's Microsoft Entra application (client) id, which is
 *   also the bot's id.
 * - TEAMS_APP_SECRET: a client secret of that app registration; or, instead,
 * - TEAMS_APP_CERTIFICATE_FILE and TEAMS_APP_KEY_FILE: PEM files of a certificate registered on
 *   the app (RSA) and its private key (a kubernetes.io/tls Secret's tls.crt and tls.key).
 * - TEAMS_APP_TENANT_ID: the tenant the app is registered in (its tokens are asked there).
 * - TEAMS_TENANTS: the tenants whose activities the broker takes, comma separated: one install
 *   serves several, each allowed explicitly. An activity from any other reaches nothing.
 * - TEAMS_PORT (default 3978): the port of the messaging endpoint, POST /api/messages. Teams
 *   calls it from the internet: it needs an ingress (there is no outbound-only mode).
 * - TEAMS_HOST (default 0.0.0.0).
 * - TEAMS_AUTHORITY (default https://login.microsoftonline.com): the Entra authority, for a
 *   sovereign cloud (and tests, which run a fake one).
 * - TEAMS_GRAPH_URL (default https://graph.microsoft.com): Microsoft Graph, asked whether a person
 *   is in an approver group (a sovereign cloud's Graph, or the tests' fake).
 * - TEAMS_SERVICE_URL_HOSTS: hosts beyond Microsoft's own the broker may send to (an activity
 *   naming another service URL is refused); tests name their fake Bot Connector's.
 */

export const TEAMS_MESSAGES_PATH = '/api/messages';
export const DEFAULT_TEAMS_PORT = 3978;
export const DEFAULT_TEAMS_AUTHORITY = 'https://login.microsoftonline.com';
export const DEFAULT_GRAPH_URL = 'https://graph.microsoft.com';

/** How the app proves itself to Entra: a client secret, or a certificate and its key (files). */
export type TeamsAppCredential =
  | { kind: 'secret'; secret: string }
  | { kind: 'certificate'; certificateFile: string; keyFile: string };

export interface TeamsConfig {
  appId: string;
  credential: TeamsAppCredential;
  appTenantId: string;
  /** Lower case. */
  tenants: ReadonlySet<string>;
  host: string;
  port: number;
  /** No trailing slash. */
  authority: string;
  /** No trailing slash. */
  graphUrl: string;
  serviceUrlHosts: readonly string[];
}

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const text = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const schema = z
  .object({
    TEAMS_APP_ID: z
      .string()
      .trim()
      .regex(GUID, 'TEAMS_APP_ID must be the app registration’s client id (a GUID)'),
    TEAMS_APP_SECRET: text,
    TEAMS_APP_CERTIFICATE_FILE: text,
    TEAMS_APP_KEY_FILE: text,
    TEAMS_APP_TENANT_ID: z
      .string()
      .trim()
      .regex(GUID, 'TEAMS_APP_TENANT_ID must be the tenant the app is registered in (a GUID)'),
    TEAMS_TENANTS: z
      .string()
      .trim()
      .min(1, 'TEAMS_TENANTS must name the tenants allowed (comma separated GUIDs)')
      .transform((v) => v.split(',').map((t) => t.trim().toLowerCase()))
      .refine(
        (list) => list.every((t) => GUID.test(t)),
        'TEAMS_TENANTS must be comma separated tenant ids (GUIDs)',
      ),
    TEAMS_HOST: text.transform((v) => v ?? '0.0.0.0'),
    TEAMS_PORT: text
      .transform((v) => (v === undefined ? DEFAULT_TEAMS_PORT : Number(v)))
      .refine((n) => Number.isInteger(n) && n >= 0 && n <= 65_535, 'TEAMS_PORT must be a port number'),
    TEAMS_AUTHORITY: text
      .transform((v) => (v ?? DEFAULT_TEAMS_AUTHORITY).replace(/\/+$/, ''))
      .refine(
        (v) => /^https?:\/\/[^/\s]+$/.test(v),
        'TEAMS_AUTHORITY must be an authority’s origin, such as https://login.microsoftonline.us',
      ),
    TEAMS_GRAPH_URL: text
      .transform((v) => (v ?? DEFAULT_GRAPH_URL).replace(/\/+$/, ''))
      .refine(
        (v) => /^https?:\/\/[^/\s]+$/.test(v),
        'TEAMS_GRAPH_URL must be Microsoft Graph’s origin, such as https://graph.microsoft.us',
      ),
    TEAMS_SERVICE_URL_HOSTS: text.transform((v) =>
      v === undefined
        ? []
        : v
            .split(',')
            .map((h) => h.trim())
            .filter((h) => h !== ''),
    ),
  })
  .superRefine((v, ctx) => {
    const secret = v.TEAMS_APP_SECRET !== undefined;
    const certificate = v.TEAMS_APP_CERTIFICATE_FILE !== undefined || v.TEAMS_APP_KEY_FILE !== undefined;
    if (secret && certificate)
      ctx.addIssue({
        code: 'custom',
        message:
          'TEAMS_APP_SECRET and TEAMS_APP_CERTIFICATE_FILE are two ways to authenticate the app: set one',
      });
    else if (!secret && !certificate)
      ctx.addIssue({
        code: 'custom',
        message:
          'TEAMS_APP_ID needs the app’s credential: TEAMS_APP_SECRET, or TEAMS_APP_CERTIFICATE_FILE and TEAMS_APP_KEY_FILE',
      });
    else if (
      certificate &&
      (v.TEAMS_APP_CERTIFICATE_FILE === undefined || v.TEAMS_APP_KEY_FILE === undefined)
    )
      ctx.addIssue({
        code: 'custom',
        message:
          'TEAMS_APP_CERTIFICATE_FILE and TEAMS_APP_KEY_FILE go together (the certificate and its private key)',
      });
  });

export function teamsRequested(env: Readonly<Record<string, string | undefined>>): boolean {
  return (env.TEAMS_APP_ID ?? '').trim() !== '';
}

export function loadTeamsConfig(env: Readonly<Record<string, string | undefined>>): TeamsConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    // Only the messages: they name the setting, never its value.
    throw new InvalidConfigError(parsed.error.issues.map((i) => i.message).join('; '));
  }
  const v = parsed.data;
  return {
    appId: v.TEAMS_APP_ID.toLowerCase(),
    credential:
      v.TEAMS_APP_SECRET !== undefined
        ? { kind: 'secret', secret: v.TEAMS_APP_SECRET }
        : {
            kind: 'certificate',
            certificateFile: v.TEAMS_APP_CERTIFICATE_FILE ?? '',
            keyFile: v.TEAMS_APP_KEY_FILE ?? '',
          },
    appTenantId: v.TEAMS_APP_TENANT_ID.toLowerCase(),
    tenants: new Set(v.TEAMS_TENANTS),
    host: v.TEAMS_HOST,
    port: v.TEAMS_PORT,
    authority: v.TEAMS_AUTHORITY,
    graphUrl: v.TEAMS_GRAPH_URL,
    serviceUrlHosts: v.TEAMS_SERVICE_URL_HOSTS,
  };
}
