import { z } from 'zod';
import type { Observations } from './observations.js';
import type { RuleResult } from './rules/index.js';

/**
 * The two outputs: one line per rule for people, and `--json` for scripts. Neither ever holds a
 * request header, so neither can hold a token; a URL's user info is masked as well.
 */

export interface AgentSummary {
  name: string;
  version: string;
  protocolVersion: string;
  streaming: boolean;
  extensions: Array<{ uri: string; required: boolean }>;
}

export interface JsonReport {
  /** null when no card could be read. */
  agent: AgentSummary | null;
  rules: RuleResult[];
}

const rawCard = z.object({
  name: z.string().catch(''),
  version: z.string().catch(''),
  protocolVersion: z.string().optional().catch(undefined),
  supportedInterfaces: z
    .array(z.object({ protocolVersion: z.string().optional() }))
    .optional()
    .catch(undefined),
  capabilities: z
    .object({
      streaming: z.unknown().optional(),
      extensions: z.array(z.object({ uri: z.string(), required: z.boolean().optional() })).optional(),
    })
    .optional()
    .catch(undefined),
});

/** The card as the client read it, or, when the client refused it, as the raw JSON says. */
export function agentSummary(obs: Observations): AgentSummary | null {
  const client = obs.card?.client;
  if (client?.ok === true) {
    const c = client.value;
    return {
      name: c.name,
      version: c.agentVersion,
      protocolVersion: c.protocolVersion,
      streaming: c.streaming,
      extensions: c.extensions,
    };
  }
  const parsed = rawCard.safeParse(obs.card?.json);
  if (!parsed.success) return null;
  const c = parsed.data;
  return {
    name: c.name,
    version: c.version,
    protocolVersion: c.supportedInterfaces?.[0]?.protocolVersion ?? c.protocolVersion ?? '',
    streaming: c.capabilities?.streaming === true,
    extensions: (c.capabilities?.extensions ?? []).map((e) => ({
      uri: e.uri,
      required: e.required === true,
    })),
  };
}

export function jsonReport(obs: Observations, rules: RuleResult[]): string {
  const report: JsonReport = { agent: agentSummary(obs), rules };
  return JSON.stringify(report, null, 2);
}

export function textReport(obs: Observations, rules: RuleResult[]): string[] {
  const lines = [`agentkourier check ${safeUrl(obs.endpoint)} (dialect ${obs.dialect})`];
  const agent = agentSummary(obs);
  if (agent !== null) {
    const ext = agent.extensions.length === 0 ? 'none' : agent.extensions.map((e) => e.uri).join(', ');
    lines.push(
      `agent: ${agent.name || '(no name)'} ${agent.version}, A2A ${agent.protocolVersion || '?'}, ` +
        `streaming ${agent.streaming ? 'yes' : 'no'}, extensions: ${ext}`,
    );
  }
  const width = Math.max(...rules.map((r) => r.id.length));
  for (const r of rules) {
    const consequence = r.consequence === null ? '' : ` → ${r.consequence}`;
    lines.push(`${r.status}  ${r.id.padEnd(width)}  ${r.detail}${consequence}`);
  }
  const count = (s: RuleResult['status']): number => rules.filter((r) => r.status === s).length;
  lines.push(`${count('PASS')} pass, ${count('FAIL')} fail, ${count('WARN')} warn, ${count('SKIP')} skip`);
  return lines;
}

/** A URL with any user:password masked, for printing. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === '' && u.password === '') return url;
    u.username = '***';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}
