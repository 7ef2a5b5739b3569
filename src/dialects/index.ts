import { KourierError } from '../core/errors.js';
import type { Dialect } from '../core/ports.js';
import { a2aDialect } from './a2a.js';
import { KAGENT_HITL_EXTENSION, kagentV1Dialect } from './kagent-v1/index.js';

/** kagent's human-in-the-loop extension (the one approval contract the broker reads). */
export { KAGENT_HITL_EXTENSION };

export type DialectName = 'a2a' | 'kagent-v1';

export interface AgentRef {
  namespace: string;
  name: string;
}

/**
 * What a dialect decides about reaching an agent (DT-2, DT-4, S-8): the endpoint for an
 * AgentBackend url, the extensions it speaks (asked for when the card lists them), and how it
 * reads the agent's events.
 */
export interface DialectSpec {
  name: DialectName;
  dialect: Dialect;
  extensions: readonly string[];
  /** a2a: the url as written. kagent-v1: url plus /agents/<namespace>/<name>. */
  endpoint(url: string, agent: AgentRef | undefined): string;
}

/** A Binding's dialect lacks what it needs (kagent-v1 without the agent's namespace and name). */
export class DialectConfigError extends KourierError {
  constructor(message: string) {
    super('dialect_config', message);
  }
}

const a2a: DialectSpec = {
  name: 'a2a',
  dialect: a2aDialect,
  extensions: [],
  endpoint: (url) => url,
};

// kagent's HITL payload in the status message, reached at url plus /agents/<ns>/<name>.
const kagentV1: DialectSpec = {
  name: 'kagent-v1',
  dialect: kagentV1Dialect,
  extensions: [KAGENT_HITL_EXTENSION],
  endpoint: (url, agent) => {
    if (agent === undefined)
      throw new DialectConfigError('the kagent-v1 dialect needs the agent namespace and name');
    const base = url.replace(/\/+$/, '');
    return `${base}/agents/${encodeURIComponent(agent.namespace)}/${encodeURIComponent(agent.name)}`;
  },
};

export function dialectSpec(name: DialectName): DialectSpec {
  return name === 'a2a' ? a2a : kagentV1;
}
