import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentCallError } from '../core/agent/errors.js';
import { readCard } from './card.js';

/**
 * Property tests of card parsing: any JSON an agent serves as its card is either a card the
 * client can use (JSON-RPC, streaming, no unknown required extension) or one of the typed DT
 * errors; and what it accepts never depends on the interface URLs (DT-7).
 */

const binding = fc.constantFrom('JSONRPC', 'jsonrpc', 'GRPC', 'HTTP+JSON', '');
const version = fc.constantFrom('1.0', '1.1', '0.3', '0.3.0', '0.2', '2.0', '');
const url = fc.oneof(fc.webUrl(), fc.constant('javascript:alert(1)'), fc.string());
const extension = fc.record(
  { uri: fc.constantFrom('https://kagent.dev/extensions/hitl/v1', 'urn:other'), required: fc.boolean() },
  { requiredKeys: ['uri'] },
);
const card = fc.record(
  {
    name: fc.string(),
    protocolVersion: version,
    url,
    preferredTransport: binding,
    additionalInterfaces: fc.array(fc.record({ url, transport: binding }), { maxLength: 3 }),
    supportedInterfaces: fc.array(
      fc.record(
        { url, protocolBinding: binding, protocolVersion: version },
        { requiredKeys: ['protocolBinding'] },
      ),
      { maxLength: 3 },
    ),
    capabilities: fc.record(
      { streaming: fc.boolean(), extensions: fc.array(extension, { maxLength: 3 }) },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

describe('agent card parsing (property)', () => {
  it('reads any JSON as a usable card or a typed error', () => {
    fc.assert(
      fc.property(fc.oneof(card, fc.jsonValue({ maxDepth: 3 })), (raw) => {
        try {
          const info = readCard(raw, { speaks: [] });
          expect(info.streaming).toBe(true);
          expect(['1.0', '0.3']).toContain(info.protocolVersion);
          expect(info.extensions.filter((e) => e.required)).toEqual([]);
        } catch (error) {
          expect(error).toBeInstanceOf(AgentCallError);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('[DT-7] decides the same whatever the interfaces’ URLs say', () => {
    fc.assert(
      fc.property(card, url, (raw, elsewhere) => {
        const moved = {
          ...raw,
          ...(raw.url === undefined ? {} : { url: elsewhere }),
          ...(raw.supportedInterfaces === undefined
            ? {}
            : { supportedInterfaces: raw.supportedInterfaces.map((i) => ({ ...i, url: elsewhere })) }),
          ...(raw.additionalInterfaces === undefined
            ? {}
            : { additionalInterfaces: raw.additionalInterfaces.map((i) => ({ ...i, url: elsewhere })) }),
        };
        const read = (r: unknown) => {
          try {
            const info = readCard(r, { speaks: [] });
            return `ok ${info.protocolVersion}`;
          } catch (error) {
            return (error as AgentCallError).code;
          }
        };
        expect(read(moved)).toBe(read(raw));
      }),
    );
  });
});
