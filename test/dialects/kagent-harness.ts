import type { AssertionSource, Identity } from '../../src/a2a/options.js';
import { dialectSpec } from '../../src/dialects/index.js';
import { APPROVER, type Harness, type HarnessOptions, startHarness } from '../helpers/engine-harness.js';
import type { CardOptions, WireVersion } from '../peers/contract-agent/contract-agent.js';

/**
 * The engine harness wired the way a kagent-v1 Binding is: the endpoint and extensions come from
 * `dialectSpec('kagent-v1')` (url plus /agents/<namespace>/<name>, the HITL extension asked for
 * when the card lists it), the dialect reads kagent's payloads, the client speaks as the person
 * (X-User-Id), and the contract agent plays a kagent runtime at that path.
 */

export const AGENT = { namespace: 'team-a', name: 'k8s-agent' } as const;
export const AGENT_PATH = `/agents/${AGENT.namespace}/${AGENT.name}`;
export { APPROVER };

export type KagentHarness = Harness;

export interface KagentHarnessOptions extends Pick<HarnessOptions, 'settings' | 'timings'> {
  version: WireVersion;
  card?: CardOptions;
  /** The Binding's identity (default X-User-Id ada@example.com), and its signer when per-person. */
  identity?: Identity;
  assertions?: AssertionSource;
}

export function startKagentHarness(options: KagentHarnessOptions): Promise<KagentHarness> {
  const spec = dialectSpec('kagent-v1');
  return startHarness({
    version: options.version,
    agent: { path: AGENT_PATH, card: options.card ?? { extensions: [{ uri: spec.extensions[0] ?? '' }] } },
    client: {
      endpoint: (agent) => spec.endpoint(agent.origin, AGENT),
      identity: options.identity ?? { kind: 'user-id', userId: 'ada@example.com' },
      ...(options.assertions === undefined ? {} : { assertions: options.assertions }),
      extensions: spec.extensions,
    },
    dialect: spec.dialect,
    ...(options.settings === undefined ? {} : { settings: options.settings }),
    ...(options.timings === undefined ? {} : { timings: options.timings }),
  });
}
