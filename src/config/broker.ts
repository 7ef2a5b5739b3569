import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';

/**
 * The broker process's own settings, from the environment. Validated once at start; an invalid
 * value fails the start with a message that names the variable (never its value: some hold
 * credentials, like a PostgreSQL URL with a password).
 */

export type StoreConfig =
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string; schema: string };

export interface BrokerConfig {
  store: StoreConfig;
  logLevel: string;
  /** LOG_FORMAT: json lines (the cluster's default) or pretty lines (local mode's default). */
  logFormat: 'json' | 'pretty';
  /** The HTTP port of Slack's HTTP mode (the controller serves health and metrics on another). */
  httpPort: number;
  /** This replica's name in session leases (the pod name in a cluster). */
  replicaName: string | undefined;
  /**
   * AGENTKOURIER_RETENTION_DAYS: a thread idle longer than this many days is forgotten (its
   * session, turns and feedback go); 0 keeps every thread forever.
   */
  retentionDays: number;
}

/** How long an idle thread is kept when AGENTKOURIER_RETENTION_DAYS is not set. */
export const DEFAULT_RETENTION_DAYS = 90;

const schema = z.object({
  AGENTKOURIER_STORE: z
    .string()
    .min(1)
    .refine(
      (v) => v.startsWith('sqlite:') || /^postgres(ql)?:\/\//.test(v),
      'must be sqlite:<path> or a postgres:// URL',
    )
    .optional(),
  AGENTKOURIER_PG_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lowercase SQL identifier')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  LOG_FORMAT: z.enum(['json', 'pretty'], 'must be json or pretty').optional(),
  AGENTKOURIER_HTTP_PORT: z
    .string()
    .regex(/^\d{1,5}$/, 'must be a port number')
    .transform(Number)
    .refine((n) => n > 0 && n < 65_536, 'must be a port number')
    .optional(),
  POD_NAME: z.string().min(1).max(253).optional(),
  AGENTKOURIER_RETENTION_DAYS: z
    .string()
    .regex(/^\d{1,5}$/, 'must be a whole number of days (0 keeps every thread)')
    .transform(Number)
    .refine((n) => n <= 36_500, 'must be at most 36500 days (0 keeps every thread)')
    .optional(),
});

export function loadBrokerConfig(
  env: Readonly<Record<string, string | undefined>>,
  defaults: { store: StoreConfig; httpPort: number; logFormat?: 'json' | 'pretty' },
): BrokerConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidConfigError(
      `${issue?.path.join('.') ?? 'environment'} ${issue?.message ?? 'is invalid'}`,
    );
  }
  const e = parsed.data;
  let store = defaults.store;
  if (e.AGENTKOURIER_STORE !== undefined) {
    store = e.AGENTKOURIER_STORE.startsWith('sqlite:')
      ? { kind: 'sqlite', path: e.AGENTKOURIER_STORE.slice('sqlite:'.length) }
      : { kind: 'postgres', url: e.AGENTKOURIER_STORE, schema: e.AGENTKOURIER_PG_SCHEMA ?? 'agentkourier' };
  }
  return {
    store,
    logLevel: e.LOG_LEVEL ?? 'info',
    logFormat: e.LOG_FORMAT ?? defaults.logFormat ?? 'json',
    httpPort: e.AGENTKOURIER_HTTP_PORT ?? defaults.httpPort,
    replicaName: e.POD_NAME,
    retentionDays: e.AGENTKOURIER_RETENTION_DAYS ?? DEFAULT_RETENTION_DAYS,
  };
}
