import { z } from 'zod';
import {
  NoJsonRpcInterfaceError,
  StreamingNotAdvertisedError,
  UnsupportedExtensionRequiredError,
} from '../core/agent/errors.js';
import type { WireVersion } from '../core/agent/model.js';
import type { AgentSkill } from '../core/ports.js';
import { skillsOf } from './skills.js';
import { malformedCard } from './wire/zod-error.js';

/**
 * Agent card discovery rules (DT-1..DT-4, DT-7).
 *
 * How the two card versions differ:
 * - 1.0 lists `supportedInterfaces[]` of `{url, protocolBinding, protocolVersion, tenant?}` in
 *   preference order; the protocol version lives on each interface.
 * - 0.3 has a top-level `url` + `preferredTransport` (default JSONRPC) + `additionalInterfaces[]`
 *   of `{url, transport}`, and a top-level `protocolVersion` ("0.3.0").
 * - Servers that speak both send hybrid cards carrying both sets of fields; a non-empty
 *   `supportedInterfaces` wins, as in the official SDKs.
 * - Both put `streaming` and `extensions[]` under `capabilities`.
 *
 * Interface URLs are read only to report them: every call goes to the configured endpoint
 * (DT-7), so a card can never aim our credentials somewhere else.
 */

export const WELL_KNOWN_CARD_PATH = '/.well-known/agent-card.json';

/** The card URL for an endpoint (DT-2): trailing slashes trimmed, then the well-known path. */
export function cardUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}${WELL_KNOWN_CARD_PATH}`;
}

const extension = z.object({
  uri: z.string(),
  required: z.boolean().optional(),
  description: z.string().optional(),
  params: z.unknown().optional(),
});

const cardSchema = z.object({
  name: z.string().optional().default(''),
  description: z.string().optional().default(''),
  version: z.string().optional().default(''),
  protocolVersion: z.string().optional(),
  url: z.string().optional(),
  preferredTransport: z.string().optional(),
  additionalInterfaces: z.array(z.object({ url: z.string().optional(), transport: z.string() })).optional(),
  supportedInterfaces: z
    .array(
      z.object({
        url: z.string().optional(),
        protocolBinding: z.string(),
        protocolVersion: z.string().optional(),
        tenant: z.string().optional(),
      }),
    )
    .optional(),
  // Read leniently (skills.ts): a card's skills only feed suggested prompts, never a refusal.
  skills: z.unknown().optional(),
  capabilities: z
    .object({
      streaming: z.boolean().optional(),
      pushNotifications: z.boolean().optional(),
      extensions: z.array(extension).optional(),
    })
    .optional()
    .default({}),
});

export interface CardInterface {
  url: string;
  protocolVersion: WireVersion;
  tenant?: string;
}

export interface AgentCardInfo {
  name: string;
  description: string;
  /** The agent's own version, as its card says. */
  agentVersion: string;
  /** The wire version every call will use. */
  protocolVersion: WireVersion;
  /** The card's layout: a hybrid card is '1.0'. */
  cardFormat: WireVersion;
  /** Routing value a 1.0 interface may ask to be copied into every request's params. */
  tenant?: string;
  streaming: boolean;
  extensions: Array<{ uri: string; required: boolean }>;
  /** The JSON-RPC interfaces the card lists, for status and diagnostics only (DT-7). */
  jsonRpcInterfaces: CardInterface[];
  /** What the card says the agent can do (bounded; for suggested prompts). */
  skills: AgentSkill[];
}

/** Major.Minor only (A2A 1.0 §3.6): "0.3.0" is 0.3, "1.0" and "1.1" speak 1.0's wire. */
function wireVersionOf(version: string | undefined): WireVersion | undefined {
  if (version === undefined || version === '') return undefined;
  const [major, minor] = version.split('.');
  if (major === '1') return '1.0';
  if (major === '0' && minor === '3') return '0.3';
  return undefined;
}

function isJsonRpc(binding: string | undefined): boolean {
  return (binding ?? 'JSONRPC').toUpperCase() === 'JSONRPC';
}

export interface CardPolicy {
  /** Extension URIs the caller's dialect speaks; a required one outside this list is refused. */
  speaks: readonly string[];
  /** The backend opted into polling: a card without streaming is accepted (DT-3, P-1). */
  polling?: boolean;
}

/**
 * Validates a card and decides how to talk to the agent. Throws the DT-* errors; never returns
 * a card the client cannot use.
 */
export function readCard(raw: unknown, policy: CardPolicy): AgentCardInfo {
  const parsed = cardSchema.safeParse(raw);
  if (!parsed.success) throw malformedCard(parsed.error);
  const card = parsed.data;

  let interfaces: CardInterface[];
  let cardFormat: WireVersion;
  if (card.supportedInterfaces !== undefined && card.supportedInterfaces.length > 0) {
    cardFormat = '1.0';
    interfaces = [];
    for (const i of card.supportedInterfaces) {
      const version = wireVersionOf(i.protocolVersion ?? '1.0');
      if (!isJsonRpc(i.protocolBinding) || version === undefined) continue;
      const entry: CardInterface = { url: i.url ?? '', protocolVersion: version };
      if (i.tenant !== undefined && i.tenant !== '') entry.tenant = i.tenant;
      interfaces.push(entry);
    }
  } else {
    cardFormat = '0.3';
    interfaces = [];
    const version = wireVersionOf(card.protocolVersion) ?? '0.3';
    if (card.url !== undefined && isJsonRpc(card.preferredTransport)) {
      interfaces.push({ url: card.url, protocolVersion: version });
    }
    for (const i of card.additionalInterfaces ?? []) {
      if (i.transport.toUpperCase() === 'JSONRPC')
        interfaces.push({ url: i.url ?? '', protocolVersion: version });
    }
  }
  // Prefer 1.0 when the card offers both; otherwise the card's own order.
  const chosen = interfaces.find((i) => i.protocolVersion === '1.0') ?? interfaces[0];
  if (chosen === undefined) throw new NoJsonRpcInterfaceError();

  const capabilities = card.capabilities;
  const streaming = capabilities.streaming === true;
  if (!streaming && policy.polling !== true) throw new StreamingNotAdvertisedError();

  const extensions = (capabilities.extensions ?? []).map((e) => ({
    uri: e.uri,
    required: e.required === true,
  }));
  const unsupported = extensions
    .filter((e) => e.required && !policy.speaks.includes(e.uri))
    .map((e) => e.uri);
  if (unsupported.length > 0) throw new UnsupportedExtensionRequiredError(unsupported);

  const info: AgentCardInfo = {
    name: card.name,
    description: card.description,
    agentVersion: card.version,
    protocolVersion: chosen.protocolVersion,
    cardFormat,
    streaming,
    extensions,
    jsonRpcInterfaces: interfaces,
    skills: skillsOf(card.skills),
  };
  if (chosen.tenant !== undefined) info.tenant = chosen.tenant;
  return info;
}
