import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../../../core/clock.js';
import type { AgentDescription } from '../../../core/ports.js';
import type { ChannelDirectory } from '../../../core/registry.js';
import { SURFACE } from '../inbound/keys.js';
import type { Bounded, SlackListeners } from '../listeners.js';
import type { AgentApi, PromptSuggestion } from './agent-api.js';
import { meansNoAgentPlatform } from './agent-api.js';

/**
 * The direct-message entry point: when a person opens the app's Messages tab
 * (`app_home_opened`, tab `messages`) and a Binding takes direct messages, the DM gets suggested
 * prompts built from that agent's card — one per skill example (the skill's name as the title,
 * the example as the message), at most four, as Slack allows. Since the card is read when the
 * tab opens, a changed card shows on the next open; the same prompts are not set again for a
 * DM within `refreshMs`. Nothing is set when the card has no examples or cannot be read.
 */

/** Slack takes at most four prompts; their lengths are our own caps (Slack documents none). */
export const MAX_PROMPTS = 4;
const MAX_TITLE = 75;
const MAX_MESSAGE = 500;
/** DMs whose prompts are remembered (bounded: oldest dropped). */
const MAX_REMEMBERED = 10_000;

const opened = z.object({
  team_id: z.string().optional(),
  event: z.object({
    type: z.literal('app_home_opened'),
    user: z.string().regex(/^[A-Z0-9]+$/),
    channel: z.string().regex(/^D[A-Z0-9]+$/),
    tab: z.string().optional(),
  }),
});

export type DescribeAgent = (binding: string) => Promise<AgentDescription | undefined>;

export interface SuggestedPromptDeps {
  agents: AgentApi;
  bindings: ChannelDirectory;
  describe: DescribeAgent | undefined;
  clock: Clock;
  logger: Logger;
  /** Single-workspace mode: the bot token's team (OAuth mode: each event names its own). */
  teamId?: string;
  /** How long the same prompts are not set again for one DM (ms). */
  refreshMs?: number;
}

/** The prompts a card suggests: examples first-come across skills, each cut to our caps. */
export function promptsFrom(description: AgentDescription): PromptSuggestion[] {
  const out: PromptSuggestion[] = [];
  for (const skill of description.skills) {
    for (const example of skill.examples) {
      if (out.length >= MAX_PROMPTS) return out;
      out.push({ title: cut(skill.name, MAX_TITLE), message: cut(example, MAX_MESSAGE) });
    }
  }
  return out;
}

function cut(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

export class SuggestedPrompts implements SlackListeners {
  readonly #deps: SuggestedPromptDeps;
  /** DM → what was set there and when. */
  readonly #set = new Map<string, { fingerprint: string; at: number }>();
  readonly #absent = new Set<string>();

  constructor(deps: SuggestedPromptDeps) {
    this.#deps = deps;
  }

  /** A person opened the app's Messages tab: the DM's suggested prompts, from the agent card. */
  register(app: App, bounded: Bounded): void {
    app.event('app_home_opened', async ({ body }) => bounded(this.opened(body)));
  }

  /** Handles one app_home_opened envelope. Never throws: Slack only needs the ack. */
  async opened(body: unknown): Promise<void> {
    const { logger, describe, bindings } = this.#deps;
    const parsed = opened.safeParse(body);
    if (!parsed.success || parsed.data.event.tab !== 'messages' || describe === undefined) return;
    const team = parsed.data.team_id ?? this.#deps.teamId;
    // OAuth mode names the team in every envelope; an event without one cannot be placed.
    if (team === undefined) {
      logger.warn('an app_home_opened event that names no workspace was ignored');
      return;
    }
    const { channel } = parsed.data.event;
    if (this.#absent.has(team)) return;
    const binding = bindings.forDirectMessages(SURFACE, team);
    if (binding === undefined) return;
    let prompts: PromptSuggestion[];
    let name: string;
    try {
      const description = await describe(binding.ref);
      if (description === undefined) return;
      prompts = promptsFrom(description);
      name = description.name;
    } catch (error) {
      logger.debug({ binding: binding.ref, err: errorName(error) }, 'no card for suggested prompts');
      return;
    }
    if (prompts.length === 0) return;
    const fingerprint = JSON.stringify(prompts);
    const now = this.#deps.clock.now();
    const last = this.#set.get(`${team}:${channel}`);
    if (last?.fingerprint === fingerprint && now - last.at < (this.#deps.refreshMs ?? 10 * 60_000)) return;
    try {
      await this.#deps.agents.setSuggestedPrompts(
        { team },
        { channel, title: cut(name === '' ? 'Try asking' : `Try asking ${name}`, MAX_TITLE), prompts },
      );
      this.#remember(`${team}:${channel}`, fingerprint, now);
    } catch (error) {
      if (meansNoAgentPlatform(error)) this.#absent.add(team);
      logger.warn({ channel, err: errorName(error) }, 'could not set suggested prompts');
    }
  }

  #remember(key: string, fingerprint: string, at: number): void {
    this.#set.delete(key);
    this.#set.set(key, { fingerprint, at });
    if (this.#set.size <= MAX_REMEMBERED) return;
    const oldest = this.#set.keys().next();
    if (oldest.done !== true) this.#set.delete(oldest.value);
  }
}

function errorName(error: unknown): Record<string, unknown> {
  if (error instanceof Error)
    return {
      name: error.name,
      ...('code' in error ? { code: String(error.code) } : {}),
      ...('slackError' in error ? { slackError: String(error.slackError) } : {}),
    };
  return { name: typeof error };
}
