import { readdir, readFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import {
  ApiException,
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  loadYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { type Logger, pino } from 'pino';
import { z } from 'zod';
import { GROUP, VERSION } from '../../src/control/crds/common.js';

/**
 * What the controller's integration tests do to a real API server: apply the CRDs, create and
 * change resources, read status and events back. Test code only; the controller never uses it.
 */

export type Plural = 'agentbackends' | 'bindings';

export class Cluster {
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly events: EventsV1Api;
  readonly leases: CoordinationV1Api;
  readonly #crds: ApiextensionsV1Api;

  constructor(readonly kubeConfig: KubeConfig) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.events = kubeConfig.makeApiClient(EventsV1Api);
    this.leases = kubeConfig.makeApiClient(CoordinationV1Api);
    this.#crds = kubeConfig.makeApiClient(ApiextensionsV1Api);
  }

  /** Applies crds/*.yaml and waits until both are Established, as envtest does. */
  async applyCrds(): Promise<void> {
    const dir = new URL('../../crds/', import.meta.url);
    const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml'));
    for (const file of files) {
      // loadYaml maps the YAML onto the generated model (x-kubernetes-validations becomes
      // xKubernetesValidations, enum _enum, …); a plain object would lose those fields when the
      // client serialises it.
      const body = loadYaml<V1CustomResourceDefinition>(await readFile(new URL(file, dir), 'utf8'));
      await this.#crds.createCustomResourceDefinition({ body });
      const name = body.metadata?.name ?? '';
      await eventually(async () => {
        const crd = await this.#crds.readCustomResourceDefinition({ name });
        const established = crd.status?.conditions?.find((c) => c.type === 'Established');
        if (established?.status !== 'True') throw new Error(`${name} not established yet`);
      }, 30_000);
    }
  }

  async namespace(name: string): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name } } });
  }

  async secret(namespace: string, name: string, data: Record<string, string>): Promise<void> {
    await this.core.createNamespacedSecret({ namespace, body: { metadata: { name }, stringData: data } });
  }

  async replaceSecret(namespace: string, name: string, data: Record<string, string>): Promise<void> {
    await this.core.replaceNamespacedSecret({
      namespace,
      name,
      body: { metadata: { name }, stringData: data },
    });
  }

  async deleteSecret(namespace: string, name: string): Promise<void> {
    await this.core.deleteNamespacedSecret({ namespace, name });
  }

  async create(plural: Plural, namespace: string, name: string, spec: unknown): Promise<void> {
    await this.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: plural === 'agentbackends' ? 'AgentBackend' : 'Binding',
        metadata: { name },
        spec,
      },
    });
  }

  /** A JSON patch of the object (spec changes). */
  async patch(plural: Plural, namespace: string, name: string, ops: unknown[]): Promise<void> {
    await this.custom.patchNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      name,
      body: ops,
    });
  }

  async delete(plural: Plural, namespace: string, name: string): Promise<void> {
    await this.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      name,
    });
  }

  async get(plural: Plural, namespace: string, name: string): Promise<KubeObject> {
    const raw: unknown = await this.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      name,
    });
    return kubeObject.parse(raw);
  }

  /** The Ready condition (or another) of an object, undefined before the controller wrote any. */
  async condition(
    plural: Plural,
    namespace: string,
    name: string,
    type = 'Ready',
  ): Promise<ConditionView | undefined> {
    const obj = await this.get(plural, namespace, name);
    return obj.status?.conditions?.find((c) => c.type === type);
  }

  /** Events about one object, oldest first. */
  async eventsFor(namespace: string, name: string): Promise<EventView[]> {
    const list = await this.events.listNamespacedEvent({ namespace });
    return list.items
      .filter((e) => e.regarding?.name === name)
      .map((e) => ({
        type: e.type ?? '',
        reason: e.reason ?? '',
        note: e.note ?? '',
        reportingInstance: e.reportingInstance ?? '',
        kind: e.regarding?.kind ?? '',
      }));
  }

  async leaseHolder(
    namespace: string,
    name: string,
  ): Promise<{ holder: string; transitions: number } | undefined> {
    try {
      const lease = await this.leases.readNamespacedLease({ namespace, name });
      return { holder: lease.spec?.holderIdentity ?? '', transitions: lease.spec?.leaseTransitions ?? 0 };
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }
}

const conditionView = z
  .object({ type: z.string(), status: z.string(), reason: z.string(), message: z.string() })
  .loose();
export type ConditionView = z.output<typeof conditionView>;

const kubeObject = z
  .object({
    metadata: z
      .object({ name: z.string(), generation: z.number().optional(), resourceVersion: z.string().optional() })
      .loose(),
    spec: z.record(z.string(), z.unknown()),
    status: z
      .object({
        observedGeneration: z.number().optional(),
        conditions: z.array(conditionView).optional(),
        card: z.record(z.string(), z.unknown()).optional(),
        backend: z.record(z.string(), z.unknown()).optional(),
        channels: z.array(z.string()).optional(),
        lastCardFetch: z.object({ time: z.string(), result: z.string() }).optional(),
      })
      .loose()
      .optional(),
  })
  .loose();
export type KubeObject = z.output<typeof kubeObject>;

export interface EventView {
  type: string;
  reason: string;
  note: string;
  reportingInstance: string;
  kind: string;
}

/** Retries `check` until it stops throwing, then returns its value; rethrows the last failure. */
export async function eventually<T>(
  check: () => Promise<T> | T,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}

/** The message an API server refusal carries (its Status body), for assertions. */
export function refusal(error: unknown): { code: number; message: string } {
  if (!(error instanceof ApiException)) throw error;
  const body: unknown = typeof error.body === 'string' ? safeJson(error.body) : error.body;
  const message = z.object({ message: z.string() }).safeParse(body);
  return { code: error.code, message: message.success ? message.data.message : String(error.body) };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A logger whose lines are kept, to assert what reached the logs (and what never did). */
export function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}
