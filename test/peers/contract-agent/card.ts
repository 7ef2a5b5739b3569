/** The contract agent's card, in the pure 1.0 or the pure 0.3 shape (reference §1). */

import type { JsonObject, WireVersion } from './wire.js';

export interface CardOptions {
  /** Default true. */
  streaming?: boolean;
  /** Default 'jsonrpc'. */
  interfaces?: 'jsonrpc' | 'grpc-only' | 'rest-only';
  extensions?: Array<{ uri: string; required?: boolean }>;
  /** URL written in the card's interfaces (default: the real endpoint); proves the client ignores it. */
  interfaceUrl?: string;
  /** Serve the card body with this HTTP status. */
  status?: number;
  /** Answer the card GET with 302 Location: redirectTo. */
  redirectTo?: string;
  /** Serve this exact body as the card. */
  raw?: string;
  /** Send the headers, then the card one byte every `trickleMs`: a card that takes for ever. */
  trickleMs?: number;
  /** The card's name (default 'Contract Agent'). */
  name?: string;
  /** The card's skills (default: one Echo skill without examples). */
  skills?: JsonObject[];
}

const BINDINGS = { jsonrpc: 'JSONRPC', 'grpc-only': 'GRPC', 'rest-only': 'HTTP+JSON' } as const;

export function buildCard(v: WireVersion, endpoint: string, o: CardOptions): JsonObject {
  const url = o.interfaceUrl ?? endpoint;
  const binding = BINDINGS[o.interfaces ?? 'jsonrpc'];
  const capabilities: JsonObject = { streaming: o.streaming ?? true };
  if (o.extensions !== undefined && o.extensions.length > 0) {
    // ProtoJSON leaves a false `required` out; 0.3 JSON keeps whatever the agent set.
    capabilities.extensions = o.extensions.map((e) =>
      e.required || (v === '0.3' && e.required !== undefined)
        ? { uri: e.uri, required: e.required }
        : { uri: e.uri },
    );
  }
  const common: JsonObject = {
    name: o.name ?? 'Contract Agent',
    description: 'A scriptable A2A test agent that echoes what it is sent',
    version: '1.0.0',
  };
  const rest: JsonObject = {
    capabilities,
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: o.skills ?? [
      { id: 'echo', name: 'Echo', description: 'Echoes the text it is sent', tags: ['test'] },
    ],
  };
  if (v === '1.0') {
    return {
      ...common,
      supportedInterfaces: [{ url, protocolBinding: binding, protocolVersion: '1.0' }],
      ...rest,
    };
  }
  return { ...common, url, preferredTransport: binding, protocolVersion: '0.3.0', ...rest };
}
