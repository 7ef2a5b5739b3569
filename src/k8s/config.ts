import { hostname } from 'node:os';
import { z } from 'zod';
import { ALLOWLIST_ENTRY_RE, DIRECT_MESSAGES_ENTRY, type NamespaceChannels } from '../control/channels.js';
import { namespaceName, objectName } from '../control/crds/common.js';
import { InvalidConfigError } from '../core/errors.js';
import type { SecretAccessGrant } from './secret-access.js';

/**
 * The controller's settings from its environment, validated once at start. An error names the
 * variable and the rule; values are not echoed.
 *
 *   AGENTKOURIER_NAMESPACE           namespace of the leader-election Lease (the pod's namespace)
 *   POD_NAME                         this replica's identity in the Lease (default: hostname)
 *   AGENTKOURIER_LEASE_NAME          Lease name (default agentkourier-controller)
 *   AGENTKOURIER_NAMESPACE_CHANNELS  JSON: {"team-a": ["C0123ABCD", "T0B/C0456", "direct-messages"], …}; the
 *                                    Slack channel ids each namespace may claim, and whether it may
 *                                    take direct messages. Unset: any namespace, any channel, DMs.
 *   AGENTKOURIER_WATCH_NAMESPACES    comma list: watch AgentBackends, Bindings and Secrets only
 *                                    in these namespaces (a Role per namespace is then enough).
 *                                    Unset or empty: every namespace (a ClusterRole).
 *   AGENTKOURIER_METRICS_PORT        port of /healthz, /readyz and /metrics (default 9090), apart
 *                                    from AGENTKOURIER_HTTP_PORT (Slack's events, default 8080)
 *   AGENTKOURIER_SERVICE_ACCOUNT     the controller's service account (the chart passes the pod's
 *                                    spec.serviceAccountName), named in what a status says to grant
 *                                    when a Secret may not be read
 *   AGENTKOURIER_SECRET_READER_ROLE  the ClusterRole that reads Secrets (the chart's
 *                                    <fullname>-secret-reader), for the same message
 */

export const DEFAULT_LEASE_NAME = 'agentkourier-controller';
export const DEFAULT_METRICS_PORT = 9090;
/** Far more than any Role-per-namespace install; each namespace costs three watches. */
export const MAX_WATCH_NAMESPACES = 100;

export class ControllerConfigError extends InvalidConfigError {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`${setting} ${message}`);
  }
}

export interface ControllerSettings {
  namespace: string;
  podName: string;
  leaseName: string;
  namespaceChannels: NamespaceChannels | undefined;
  /** Empty: every namespace. Sorted, without duplicates. */
  watchNamespaces: readonly string[];
  metricsPort: number;
  /** What a status names when a Secret may not be read; each unknown when not set. */
  secretAccess: SecretAccessGrant;
}

const channelsSchema = z.record(
  namespaceName,
  z
    .array(
      z
        .string()
        .refine(
          (c) => ALLOWLIST_ENTRY_RE.test(c),
          `must list Slack channel ids (C… or G…) or "${DIRECT_MESSAGES_ENTRY}", each alone or after a workspace (T…/C…, T…/*, T…/${DIRECT_MESSAGES_ENTRY})`,
        ),
    )
    .max(1000),
);

const watchNamespacesSchema = z
  .array(namespaceName)
  .max(MAX_WATCH_NAMESPACES, `may list at most ${MAX_WATCH_NAMESPACES} namespaces`)
  .refine((list) => new Set(list).size === list.length, 'lists a namespace twice');

const portSchema = z
  .string()
  .regex(/^\d{1,5}$/, 'must be a port number')
  .transform(Number)
  .refine((n) => n > 0 && n < 65_536, 'must be a port number');

function parse<T>(setting: string, schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? '' : ` (at ${issue.path.join('.')})`;
  throw new ControllerConfigError(setting, `${issue?.message ?? 'is invalid'}${where}`);
}

export function loadControllerSettings(
  env: Readonly<Record<string, string | undefined>>,
): ControllerSettings {
  const namespace = env.AGENTKOURIER_NAMESPACE;
  if (namespace === undefined || namespace === '') {
    throw new ControllerConfigError(
      'AGENTKOURIER_NAMESPACE',
      'is required (the namespace the controller runs in)',
    );
  }
  parse('AGENTKOURIER_NAMESPACE', namespaceName, namespace);
  const podName = env.POD_NAME === undefined || env.POD_NAME === '' ? hostname() : env.POD_NAME;
  parse('POD_NAME', z.string().min(1).max(253), podName);
  const leaseName =
    env.AGENTKOURIER_LEASE_NAME === undefined || env.AGENTKOURIER_LEASE_NAME === ''
      ? DEFAULT_LEASE_NAME
      : env.AGENTKOURIER_LEASE_NAME;
  parse('AGENTKOURIER_LEASE_NAME', objectName, leaseName);

  let namespaceChannels: NamespaceChannels | undefined;
  const rawChannels = env.AGENTKOURIER_NAMESPACE_CHANNELS;
  if (rawChannels !== undefined && rawChannels.trim() !== '') {
    let json: unknown;
    try {
      json = JSON.parse(rawChannels);
    } catch {
      throw new ControllerConfigError('AGENTKOURIER_NAMESPACE_CHANNELS', 'is not valid JSON');
    }
    namespaceChannels = parse('AGENTKOURIER_NAMESPACE_CHANNELS', channelsSchema, json);
  }

  const rawWatch = env.AGENTKOURIER_WATCH_NAMESPACES?.trim() ?? '';
  const watchNamespaces =
    rawWatch === ''
      ? []
      : [
          ...parse(
            'AGENTKOURIER_WATCH_NAMESPACES',
            watchNamespacesSchema,
            rawWatch.split(',').map((n) => n.trim()),
          ),
        ].sort();

  const rawPort = env.AGENTKOURIER_METRICS_PORT?.trim() ?? '';
  const metricsPort =
    rawPort === '' ? DEFAULT_METRICS_PORT : parse('AGENTKOURIER_METRICS_PORT', portSchema, rawPort);
  const serviceAccount = optionalName(env, 'AGENTKOURIER_SERVICE_ACCOUNT');
  const secretAccess: SecretAccessGrant = {
    serviceAccount: serviceAccount === undefined ? undefined : { namespace, name: serviceAccount },
    secretReaderRole: optionalName(env, 'AGENTKOURIER_SECRET_READER_ROLE'),
  };
  return { namespace, podName, leaseName, namespaceChannels, watchNamespaces, metricsPort, secretAccess };
}

/** An object name from the environment, or undefined when unset or empty. */
function optionalName(
  env: Readonly<Record<string, string | undefined>>,
  setting: 'AGENTKOURIER_SERVICE_ACCOUNT' | 'AGENTKOURIER_SECRET_READER_ROLE',
): string | undefined {
  const raw = env[setting]?.trim() ?? '';
  return raw === '' ? undefined : parse(setting, objectName, raw);
}
