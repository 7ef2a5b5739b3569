import { z } from 'zod';
import { type AgentCardInfo, CardFetchError, NoJsonRpcInterfaceError, readCard } from '../../a2a/index.js';
import { describeError, seconds } from '../describe.js';
import type { CardObservation, Observations } from '../observations.js';
import { fail, notTried, pass, type Rule, skip, type Verdict } from './types.js';

/**
 * Card rules (DT-1..DT-4). Each is judged on the raw card JSON, so a card that breaks several
 * rules fails each of them, where the client stops at the first refusal. Where it can, a rule
 * asks the client's own readCard, so the checker and the broker cannot disagree.
 */

/** Only what the card rules read; the client's schema checks the rest. */
const cardShape = z.object({
  supportedInterfaces: z
    .array(z.object({ protocolBinding: z.string().optional(), protocolVersion: z.string().optional() }))
    .optional(),
  preferredTransport: z.string().optional(),
  additionalInterfaces: z.array(z.object({ transport: z.string().optional() })).optional(),
  capabilities: z
    .object({
      streaming: z.unknown().optional(),
      extensions: z.array(z.object({ uri: z.string(), required: z.boolean().optional() })).optional(),
    })
    .optional(),
});
type CardShape = z.infer<typeof cardShape>;

function shapeOf(card: CardObservation | undefined): CardShape | undefined {
  if (card === undefined || card.json === undefined) return undefined;
  const parsed = cardShape.safeParse(card.json);
  return parsed.success ? parsed.data : undefined;
}

function noCard(obs: Observations): Verdict {
  return obs.card === undefined ? notTried(obs, 'the card') : skip('no readable card (see card.fetch)');
}

const fetchRule: Rule = {
  id: 'card.fetch',
  rows: ['DT-2', 'DT-8'],
  consequence: 'The card fetch fails and the turn is retried, then fails after 15 minutes.',
  judge(obs) {
    const card = obs.card;
    if (card === undefined) return notTried(obs, 'the card');
    const p = card.probe;
    if (p.kind === 'unreachable') return fail(`could not connect to ${card.url} (${p.reason})`);
    if (p.kind === 'headers-timeout') {
      return fail(`${card.url} sent no response headers within ${seconds(p.limitMs)}`);
    }
    if (p.kind === 'broken') return fail(`${card.url}: ${p.reason}`);
    if (p.status >= 300 && p.status < 400) {
      return fail(`${card.url} answered HTTP ${p.status} redirect to ${p.location ?? '(no Location)'}`);
    }
    if (p.status === 401 || p.status === 403) {
      return fail(`${card.url} rejected the credentials (HTTP ${p.status}); check --token or --user-id`);
    }
    if (p.status < 200 || p.status >= 300) return fail(`${card.url} answered HTTP ${p.status}`);
    if (card.json === undefined) return fail(`${card.url} is not JSON`);
    // The client read it too: a card that is JSON but not an agent card fails here.
    const client = card.client;
    if (client !== undefined && !client.ok && client.error instanceof CardFetchError) {
      return fail(describeError(client.error));
    }
    return pass(`${card.url}: HTTP ${p.status}, headers in ${p.headersMs} ms`);
  },
};

const jsonRpcRule: Rule = {
  id: 'card.jsonrpc',
  rows: ['DT-1', 'DT-7'],
  consequence: 'The agent is refused: every turn fails with "agent card lists no JSON-RPC interface".',
  judge(obs) {
    const shape = shapeOf(obs.card);
    if (shape === undefined || typeof obs.card?.json !== 'object' || obs.card.json === null)
      return noCard(obs);
    // The client's reading with streaming and extensions set aside: only interfaces can fail it.
    let info: AgentCardInfo;
    try {
      info = readCard({ ...obs.card.json, capabilities: { streaming: true } }, { speaks: [] });
    } catch (error) {
      if (!(error instanceof NoJsonRpcInterfaceError))
        return skip('the card is not a valid agent card (see card.fetch)');
      const bindings = listedBindings(shape);
      return fail(
        `the card lists ${bindings.length === 0 ? 'no interface' : bindings.join(', ')}, none of them JSON-RPC at A2A 1.0 or 0.3`,
      );
    }
    const named = info.jsonRpcInterfaces.find((i) => i.protocolVersion === info.protocolVersion)?.url ?? '';
    const elsewhere =
      named !== '' && named.replace(/\/+$/, '') !== obs.endpoint.replace(/\/+$/, '')
        ? ` (the card names ${named}, which the broker ignores)`
        : '';
    return pass(`A2A ${info.protocolVersion} over JSON-RPC; every call goes to ${obs.endpoint}${elsewhere}`);
  },
};

function listedBindings(shape: CardShape): string[] {
  if (shape.supportedInterfaces !== undefined && shape.supportedInterfaces.length > 0) {
    return shape.supportedInterfaces.map((i) =>
      `${i.protocolBinding ?? '(no binding)'} ${i.protocolVersion ?? ''}`.trim(),
    );
  }
  return [
    shape.preferredTransport ?? 'JSONRPC',
    ...(shape.additionalInterfaces ?? []).map((i) => i.transport ?? '(no transport)'),
  ];
}

const streamingRule: Rule = {
  id: 'card.streaming',
  rows: ['DT-3', 'P-1'],
  consequence:
    'The agent is refused. To reach it anyway, enable spec.polling on its AgentBackend (check it with --polling).',
  judge(obs) {
    const shape = shapeOf(obs.card);
    if (shape === undefined) return noCard(obs);
    const streaming = shape.capabilities?.streaming;
    if (streaming === true)
      return pass(
        obs.polling
          ? 'capabilities.streaming is true: it is streamed even with polling on'
          : 'capabilities.streaming is true',
      );
    const said = `capabilities.streaming is ${streaming === undefined ? 'absent' : JSON.stringify(streaming)}`;
    if (obs.polling)
      return pass(`${said}: a backend with spec.polling reaches it with SendMessage and GetTask`);
    return fail(said);
  },
};

const extensionsRule: Rule = {
  id: 'card.extensions',
  rows: ['DT-4'],
  consequence: 'The connect fails with "agent requires an unsupported extension".',
  judge(obs) {
    const shape = shapeOf(obs.card);
    if (shape === undefined) return noCard(obs);
    const listed = shape.capabilities?.extensions ?? [];
    const unsupported = listed
      .filter((e) => e.required === true && !obs.speaks.includes(e.uri))
      .map((e) => e.uri);
    const speaks = obs.speaks.length === 0 ? 'none' : obs.speaks.join(', ');
    if (unsupported.length > 0) {
      return fail(`requires ${unsupported.join(', ')}; the ${obs.dialect} dialect speaks ${speaks}`);
    }
    if (listed.length === 0) return pass('no extension listed');
    return pass(
      `${listed.length} extension(s) listed, none required outside what ${obs.dialect} speaks (${speaks})`,
    );
  },
};

export const cardRules: readonly Rule[] = [fetchRule, jsonRpcRule, streamingRule, extensionsRule];
