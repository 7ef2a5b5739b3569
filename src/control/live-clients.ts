import { createHash } from 'node:crypto';
import { A2AClient } from '../a2a/client.js';
import type { A2AClientOptions, AssertionSource, PersonIdentity } from '../a2a/options.js';
import type { ClientTelemetry } from '../a2a/telemetry.js';
import type { LiveRegistry } from '../core/registry.js';
import { dialectSpec } from '../dialects/index.js';
import type { LiveSpec } from './reconcile/binding.js';

/**
 * The live A2A clients of this replica, one per Binding, kept in the engine's LiveRegistry.
 * A changed URL, identity or header reconfigures the same client, which forgets its card and
 * reads it again with the new credentials (DT-8); sessions keep their client object.
 */

export interface LiveClient {
  client: A2AClient;
  /** Changes whenever the endpoint, identity, headers or extensions change. */
  fingerprint: string;
}

/** A digest, so the controller compares credentials without keeping a second copy of them. */
export function clientFingerprint(options: A2AClientOptions): string {
  const material = JSON.stringify([
    options.endpoint,
    options.identity,
    Object.entries(options.headers ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    options.extensions ?? [],
  ]);
  return createHash('sha256').update(material).digest('hex');
}

function registrationOf(spec: LiveSpec): string {
  return JSON.stringify([spec.dialect, spec.settings, spec.slack, spec.teams, spec.toolApprovals]);
}

/** Builds a Binding's client; `binding` is its ref ('namespace/name'), for its telemetry. */
export type ClientFactory = (options: A2AClientOptions, binding: string) => A2AClient;

/** The default factory: a client whose calls report to the Binding's telemetry, when given. */
export function clientFactory(telemetry?: (binding: string) => ClientTelemetry): ClientFactory {
  return (options, binding) => new A2AClient(options, telemetry?.(binding));
}

/**
 * The source of a Binding's per-person identity (src/identity/), by the Binding's ref and its
 * identity: the broker's assertions, or, with an exchange, the person's tokens from the provider.
 */
export type AssertionsFor = (binding: string, identity: PersonIdentity) => AssertionSource;

export class LiveClients {
  readonly #registry: LiveRegistry;
  readonly #factory: ClientFactory;
  readonly #assertions: AssertionsFor | undefined;
  readonly #entries = new Map<string, LiveClient & { registration: string }>();

  constructor(registry: LiveRegistry, factory: ClientFactory = clientFactory(), assertions?: AssertionsFor) {
    this.#registry = registry;
    this.#factory = factory;
    this.#assertions = assertions;
  }

  /** Creates or updates the Binding's client and its registry entry; returns the client. */
  apply(spec: LiveSpec): LiveClient {
    const fingerprint = clientFingerprint(spec.client);
    const registration = registrationOf(spec);
    const existing = this.#entries.get(spec.ref);
    // A per-person identity signs with the broker's keys; without them, its calls are refused.
    // Made only for a client that will use it: an exchanging source keeps people's tokens.
    const options = (): A2AClientOptions =>
      spec.client.identity.kind === 'person' && this.#assertions !== undefined
        ? { ...spec.client, assertions: this.#assertions(spec.ref, spec.client.identity) }
        : spec.client;
    let client: A2AClient;
    if (existing === undefined) {
      client = this.#factory(options(), spec.ref);
    } else {
      client = existing.client;
      if (existing.fingerprint !== fingerprint) client.reconfigure(options());
    }
    if (existing === undefined || existing.registration !== registration) {
      this.#registry.upsert({
        ref: spec.ref,
        client,
        dialect: dialectSpec(spec.dialect).dialect,
        settings: spec.settings,
        // Each surface's routing under its name: the registry knows none of them.
        routes: { slack: spec.slack, ...(spec.teams === undefined ? {} : { teams: spec.teams }) },
        toolApprovals: spec.toolApprovals,
      });
    }
    this.#entries.set(spec.ref, { client, fingerprint, registration });
    return { client, fingerprint };
  }

  /** Drops the Binding: its sessions are told on their next turn that it is gone. */
  remove(ref: string): void {
    this.#entries.delete(ref);
    this.#registry.remove(ref);
  }

  get(ref: string): LiveClient | undefined {
    return this.#entries.get(ref);
  }

  refs(): string[] {
    return [...this.#entries.keys()];
  }
}
