import { describe, expect, it } from 'vitest';
import {
  CardFetchError,
  NoJsonRpcInterfaceError,
  StreamingNotAdvertisedError,
  UnsupportedExtensionRequiredError,
} from '../core/agent/errors.js';
import { cardUrl, readCard } from './card.js';

const base = {
  name: 'a',
  description: 'd',
  version: '2.1.0',
  skills: [],
  defaultInputModes: [],
  defaultOutputModes: [],
};
const HITL = 'https://kagent.dev/extensions/hitl/v1';

function v1(interfaces: unknown[], capabilities: object = { streaming: true }) {
  return { ...base, supportedInterfaces: interfaces, capabilities };
}

describe('readCard', () => {
  it('[DT-2] puts the card below the endpoint with trailing slashes trimmed', () => {
    expect(cardUrl('http://h/agents/ns/a/')).toBe('http://h/agents/ns/a/.well-known/agent-card.json');
    expect(cardUrl('http://h//')).toBe('http://h/.well-known/agent-card.json');
    expect(cardUrl('http://h/a2a')).toBe('http://h/a2a/.well-known/agent-card.json');
  });

  it('tells a 1.0 card by supportedInterfaces and reads its fields', () => {
    const card = readCard(
      v1([{ url: 'http://x/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: 't1' }]),
      { speaks: [] },
    );
    expect(card).toMatchObject({
      protocolVersion: '1.0',
      cardFormat: '1.0',
      tenant: 't1',
      agentVersion: '2.1.0',
    });
  });

  it('tells a 0.3 card by its top-level url and preferredTransport', () => {
    const card = readCard(
      {
        ...base,
        url: 'http://x/',
        protocolVersion: '0.3.0',
        preferredTransport: 'JSONRPC',
        capabilities: { streaming: true },
      },
      { speaks: [] },
    );
    expect(card.protocolVersion).toBe('0.3');
    expect(card.cardFormat).toBe('0.3');
  });

  it('reads a hybrid card as 1.0 and prefers the 1.0 JSON-RPC interface', () => {
    const card = readCard(
      {
        ...v1([
          { url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
          { url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        ]),
        url: 'http://x',
        protocolVersion: '0.3',
      },
      { speaks: [] },
    );
    expect(card.protocolVersion).toBe('1.0');
    expect(card.jsonRpcInterfaces).toHaveLength(2);
  });

  it('[DT-1] keeps only JSON-RPC interfaces and talks 0.3 when that is the only JSON-RPC one', () => {
    const card = readCard(
      v1([
        { url: 'http://x', protocolBinding: 'GRPC', protocolVersion: '1.0' },
        { url: 'http://x', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
        { url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ]),
      { speaks: [] },
    );
    expect(card.protocolVersion).toBe('0.3');
    expect(card.jsonRpcInterfaces).toEqual([{ url: 'http://x', protocolVersion: '0.3' }]);
  });

  it('[DT-1] refuses a 1.0 card with no JSON-RPC interface', () => {
    expect(() =>
      readCard(v1([{ url: 'http://x', protocolBinding: 'GRPC', protocolVersion: '1.0' }]), { speaks: [] }),
    ).toThrow(NoJsonRpcInterfaceError);
  });

  it('[DT-1] refuses a 0.3 card whose only transports are gRPC and REST', () => {
    const card = {
      ...base,
      url: 'http://x',
      preferredTransport: 'GRPC',
      additionalInterfaces: [{ url: 'http://x', transport: 'HTTP+JSON' }],
      capabilities: { streaming: true },
    };
    expect(() => readCard(card, { speaks: [] })).toThrow(NoJsonRpcInterfaceError);
  });

  it('[DT-1] drops JSON-RPC interfaces of a protocol version it does not speak', () => {
    expect(() =>
      readCard(v1([{ url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '0.2' }]), { speaks: [] }),
    ).toThrow(NoJsonRpcInterfaceError);
  });

  it('[DT-3] refuses a card without capabilities.streaming: true', () => {
    const iface = [{ url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }];
    expect(() => readCard(v1(iface, {}), { speaks: [] })).toThrow(StreamingNotAdvertisedError);
    expect(() => readCard(v1(iface, { streaming: false }), { speaks: [] })).toThrow(
      StreamingNotAdvertisedError,
    );
  });

  it('[P-1][DT-3] accepts a card without streaming only when the backend polls, and says it does not stream', () => {
    const iface = [{ url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }];
    expect(() => readCard(v1(iface, { streaming: false }), { speaks: [], polling: false })).toThrow(
      StreamingNotAdvertisedError,
    );
    expect(readCard(v1(iface, { streaming: false }), { speaks: [], polling: true }).streaming).toBe(false);
    expect(readCard(v1(iface, {}), { speaks: [], polling: true }).streaming).toBe(false);
    // A card that streams still streams with polling on.
    expect(readCard(v1(iface, { streaming: true }), { speaks: [], polling: true }).streaming).toBe(true);
    expect(new StreamingNotAdvertisedError().message).toContain('spec.polling');
  });

  it('[DT-4] refuses a required extension the dialect does not speak, and accepts one it does', () => {
    const iface = [{ url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }];
    const card = v1(iface, {
      streaming: true,
      extensions: [{ uri: HITL, required: true }, { uri: 'urn:optional' }],
    });
    expect(() => readCard(card, { speaks: [] })).toThrow(UnsupportedExtensionRequiredError);
    try {
      readCard(card, { speaks: [] });
    } catch (error) {
      expect((error as UnsupportedExtensionRequiredError).uris).toEqual([HITL]);
    }
    expect(readCard(card, { speaks: [HITL] }).extensions).toEqual([
      { uri: HITL, required: true },
      { uri: 'urn:optional', required: false },
    ]);
  });

  it('refuses something that is not a card with a typed error', () => {
    expect(() => readCard({ capabilities: 'yes' }, { speaks: [] })).toThrow(CardFetchError);
    expect(() => readCard([], { speaks: [] })).toThrow(CardFetchError);
  });
});
