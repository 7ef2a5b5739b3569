import { randomBytes } from 'node:crypto';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1Lease,
  V1MicroTime,
  type V1Secret,
} from '@kubernetes/client-node';
import { z } from 'zod';
import { GROUP, VERSION } from '../control/crds/common.js';
import { KourierError } from '../core/errors.js';
import { cutText } from '../core/text.js';

/**
 * The few Kubernetes API calls the controller makes, behind one small class so the rest of
 * src/k8s/ never touches the generated client. Errors come out as KubeApiError with the HTTP
 * status; bodies are never put in messages (a Secret's list response holds its data).
 */

export class KubeApiError extends KourierError {
  constructor(
    readonly status: number | undefined,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super('kube_api_error', message, options);
  }

  get isNotFound(): boolean {
    return this.status === 404;
  }

  get isConflict(): boolean {
    return this.status === 409;
  }
}

export function statusOf(error: unknown): number | undefined {
  if (error instanceof KubeApiError) return error.status;
  if (error instanceof ApiException) return error.code;
  if (typeof error === 'object' && error !== null) {
    const { statusCode, code } = error as { statusCode?: unknown; code?: unknown };
    if (typeof statusCode === 'number') return statusCode;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const status = statusOf(error);
    // The generated client puts the response body in `message`; keep it out of ours.
    const detail = status === undefined ? (error instanceof Error ? error.name : 'error') : `HTTP ${status}`;
    throw new KubeApiError(status, `${what} failed (${detail})`, {
      cause: status === undefined ? error : undefined,
    });
  }
}

export type ResourcePlural = 'agentbackends' | 'bindings';

const listSchema = z.object({
  metadata: z.object({ resourceVersion: z.string().optional() }).loose().optional(),
  items: z.array(
    z
      .object({
        apiVersion: z.string().optional(),
        kind: z.string().optional(),
        metadata: z.object({ name: z.string(), namespace: z.string().optional() }).loose(),
      })
      .loose(),
  ),
});

export interface EventInput {
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string };
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
  action: string;
}

export const REPORTING_CONTROLLER = 'agentkourier.dev/controller';

export class KubeApi {
  readonly #custom: CustomObjectsApi;
  readonly #core: CoreV1Api;
  readonly #events: EventsV1Api;
  readonly #leases: CoordinationV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.#custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    this.#events = kubeConfig.makeApiClient(EventsV1Api);
    this.#leases = kubeConfig.makeApiClient(CoordinationV1Api);
  }

  /** The collection path a watch follows: every namespace, or one. */
  static resourcePath(plural: ResourcePlural, namespace?: string): string {
    return namespace === undefined
      ? `/apis/${GROUP}/${VERSION}/${plural}`
      : `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${plural}`;
  }

  /**
   * Every object of one of our kinds, in all namespaces or in one (the informers' list). The
   * one-namespace form is what a Role (not a ClusterRole) allows.
   */
  async listResources(
    plural: ResourcePlural,
    namespace?: string,
  ): Promise<KubernetesListObject<KubernetesObject>> {
    const where = namespace === undefined ? '' : ` in ${namespace}`;
    const raw: unknown = await call(`listing ${plural}${where}`, () =>
      namespace === undefined
        ? this.#custom.listCustomObjectForAllNamespaces({
            group: GROUP,
            version: VERSION,
            resourcePlural: plural,
          })
        : this.#custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural }),
    );
    const list = listSchema.parse(raw);
    return { metadata: { resourceVersion: list.metadata?.resourceVersion ?? '' }, items: list.items };
  }

  /** Replaces .status through the status subresource (a JSON patch: spec is never touched). */
  async writeStatus(plural: ResourcePlural, namespace: string, name: string, status: unknown): Promise<void> {
    await call(`writing the status of ${plural} ${namespace}/${name}`, () =>
      this.#custom.patchNamespacedCustomObjectStatus({
        group: GROUP,
        version: VERSION,
        namespace,
        plural,
        name,
        body: [{ op: 'add', path: '/status', value: status }],
        fieldManager: 'agentkourier-controller',
      }),
    );
  }

  /** One Secret by name, listed with a field selector so a watch can follow exactly it. */
  async listSecret(namespace: string, name: string): Promise<KubernetesListObject<V1Secret>> {
    return call(`reading Secret ${namespace}/${name}`, () =>
      this.#core.listNamespacedSecret({ namespace, fieldSelector: `metadata.name=${name}` }),
    );
  }

  async createEvent(event: EventInput, reportingInstance: string): Promise<void> {
    const r = event.regarding;
    await call(`recording an event on ${r.kind} ${r.namespace}/${r.name}`, () =>
      this.#events.createNamespacedEvent({
        namespace: r.namespace,
        body: {
          metadata: { name: `${r.name}.${randomBytes(8).toString('hex')}`, namespace: r.namespace },
          eventTime: new V1MicroTime(),
          type: event.type,
          reason: event.reason,
          note: cutText(event.note, 1024),
          action: event.action,
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: reportingInstance.slice(0, 128),
          regarding: {
            apiVersion: r.apiVersion,
            kind: r.kind,
            namespace: r.namespace,
            name: r.name,
            ...(r.uid === undefined ? {} : { uid: r.uid }),
          },
        },
      }),
    );
  }

  async readLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    try {
      return await call(`reading Lease ${namespace}/${name}`, () =>
        this.#leases.readNamespacedLease({ namespace, name }),
      );
    } catch (error) {
      if (error instanceof KubeApiError && error.isNotFound) return undefined;
      throw error;
    }
  }

  async createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return call(`creating Lease ${namespace}/${lease.metadata?.name ?? ''}`, () =>
      this.#leases.createNamespacedLease({ namespace, body: lease }),
    );
  }

  /** PUT with the resourceVersion the lease carries: a concurrent writer makes it 409. */
  async replaceLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    const name = lease.metadata?.name ?? '';
    return call(`updating Lease ${namespace}/${name}`, () =>
      this.#leases.replaceNamespacedLease({ namespace, name, body: lease }),
    );
  }
}
