import { type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import type { KubeApi } from './kube-api.js';
import type { LeaseRecord, LeaseStore, VersionedLease } from './leader.js';

/** The LeaseStore of ./leader.ts on a coordination.k8s.io/v1 Lease. */
export class KubeLeaseStore implements LeaseStore {
  readonly #api: KubeApi;
  readonly #namespace: string;
  readonly #name: string;

  constructor(api: KubeApi, namespace: string, name: string) {
    this.#api = api;
    this.#namespace = namespace;
    this.#name = name;
  }

  async get(): Promise<VersionedLease | undefined> {
    const lease = await this.#api.readLease(this.#namespace, this.#name);
    return lease === undefined ? undefined : fromLease(lease);
  }

  async create(record: LeaseRecord): Promise<VersionedLease> {
    return fromLease(await this.#api.createLease(this.#namespace, this.#toLease(record, undefined)));
  }

  async update(record: LeaseRecord, version: string): Promise<VersionedLease> {
    return fromLease(await this.#api.replaceLease(this.#namespace, this.#toLease(record, version)));
  }

  #toLease(record: LeaseRecord, resourceVersion: string | undefined): V1Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.#name,
        namespace: this.#namespace,
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
      },
      spec: {
        // MicroTime: the API server wants six fractional digits; V1MicroTime writes them.
        holderIdentity: record.holderIdentity,
        leaseDurationSeconds: record.leaseDurationSeconds,
        acquireTime: new V1MicroTime(record.acquireTime.getTime()),
        renewTime: new V1MicroTime(record.renewTime.getTime()),
        leaseTransitions: record.leaseTransitions,
      },
    };
  }
}

/** Times may come back as Date or string depending on the deserialiser: normalise both. */
function toDate(value: Date | string | undefined): Date {
  return value === undefined ? new Date(0) : new Date(value);
}

function fromLease(lease: V1Lease): VersionedLease {
  const spec = lease.spec ?? {};
  return {
    version: lease.metadata?.resourceVersion ?? '',
    record: {
      holderIdentity: spec.holderIdentity ?? '',
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      acquireTime: toDate(spec.acquireTime),
      renewTime: toDate(spec.renewTime),
      leaseTransitions: spec.leaseTransitions ?? 0,
    },
  };
}
