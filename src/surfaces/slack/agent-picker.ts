import { z } from 'zod';
import type { Clock, Inbound, ReceiveResult } from '../../core/ports.js';
import type { ChannelDirectory, SharedClaim } from '../../core/registry.js';
import { type SessionStore, sessionIdOf } from '../../core/store.js';
import type { People } from './people.js';
import { slackToPlain } from './text.js';
import type { SlackApi } from './web-api.js';

/**
 * The picker on a channel several agents share: a thread whose first message names no agent
 * gets, for its author only, one button per agent (by handle). The press sends that very message
 * to the chosen agent, as the thread's first turn: its text is read back from Slack (the button
 * carries only the message's ts and the handle, nothing a presser could forge into a turn), and
 * only its author may choose.
 */

/** The note a thread's author gets with the picker (and the only one, without Block Kit). */
export const PICK_HINT = (handles: readonly string[]): string =>
  `Several agents answer in this channel. Start your message with the one you mean: ${handles.map((h) => `\`${h}\``).join(', ')} (for example \`@Agent Kourier ${handles[0] ?? 'name'}: …\`).`;

export const PICK_ACTION_PREFIX = 'agentkourier.pick.';
export const PICK_QUESTION = 'Several agents answer in this channel. Which one should take this thread?';
export const PICK_SENT = (handle: string): string => `Sent to \`${handle}\`.`;
export const PICK_NOT_YOURS = 'Only the person who started this thread can choose its agent.';
export const PICK_TAKEN = 'This thread already has its agent.';
export const PICK_GONE = 'That agent no longer answers in this channel.';

/** The ephemeral picker's blocks: the question, then a button per agent. */
export function pickerBlocks(claims: readonly SharedClaim[], messageTs: string): unknown[] {
  return [
    { type: 'section', text: { type: 'plain_text', text: PICK_QUESTION, emoji: false } },
    {
      type: 'actions',
      block_id: 'agentkourier.pick',
      elements: claims.slice(0, 25).map((c) => ({
        type: 'button',
        action_id: `${PICK_ACTION_PREFIX}${c.handle}`,
        text: { type: 'plain_text', text: c.handle, emoji: false },
        value: `${messageTs}|${c.handle}`,
      })),
    },
  ];
}

const pressSchema = z.object({
  user: z.object({ id: z.string(), team_id: z.string().optional() }),
  team: z.object({ id: z.string() }).nullable().optional(),
  container: z.object({ channel_id: z.string().regex(/^[A-Z0-9]+$/) }),
  actions: z
    .array(z.object({ action_id: z.string(), value: z.string().regex(/^\d+\.\d+\|[a-z][a-z0-9-]{0,23}$/) }))
    .min(1),
});

export interface PickerDeps {
  engine: { receive(input: Inbound): Promise<ReceiveResult> };
  store: Pick<SessionStore, 'getSession'>;
  bindings: ChannelDirectory;
  people: People;
  api: SlackApi;
  clock: Clock;
}

export type PickResult = 'sent' | 'not-yours' | 'taken' | 'gone' | 'ignored';

/** A press on the picker; the caller answers the presser with the result's words. */
export async function pickAgent(
  deps: PickerDeps,
  body: unknown,
  botUserId: string,
): Promise<{ result: PickResult; team?: string; channel?: string; user?: string; handle?: string }> {
  const parsed = pressSchema.safeParse(body);
  if (!parsed.success) return { result: 'ignored' };
  const p = parsed.data;
  const [ts, handle] = (p.actions[0]?.value ?? '').split('|') as [string, string];
  const team = p.team?.id ?? p.user.team_id;
  if (team === undefined) return { result: 'ignored' };
  const channel = p.container.channel_id;
  const where = { team, channel, user: p.user.id, handle };
  const claim = deps.bindings.sharedChannel?.('slack', channel, team)?.find((c) => c.handle === handle);
  if (claim === undefined) return { ...where, result: 'gone' };
  const key = { surface: 'slack', workspaceId: team, channelId: channel, threadId: ts };
  if ((await deps.store.getSession(sessionIdOf(key))) !== undefined) return { ...where, result: 'taken' };
  const page = await deps.api.replies({ team }, { channel, ts, limit: 1 });
  const message = page.messages[0];
  if (message === undefined || message.ts !== ts) return { ...where, result: 'gone' };
  if (message.user !== p.user.id) return { ...where, result: 'not-yours' };
  await deps.engine.receive({
    kind: 'person',
    key,
    binding: claim.ref,
    chatMessageId: ts,
    actor: await deps.people.actor(team, p.user.id),
    text: slackToPlain(message.text ?? '', botUserId),
    addressed: true,
  });
  return { ...where, result: 'sent' };
}

export function pickWords(result: PickResult, handle: string): string | undefined {
  switch (result) {
    case 'sent':
      return PICK_SENT(handle);
    case 'not-yours':
      return PICK_NOT_YOURS;
    case 'taken':
      return PICK_TAKEN;
    case 'gone':
      return PICK_GONE;
    default:
      return undefined;
  }
}

/**
 * The handle a message starts with (`billing: why…`, `billing, why…`, `billing why…`, or only
 * `billing`), case-insensitively, and the text after it; undefined when it names none.
 */
export function namedHandle(
  text: string,
  claims: readonly SharedClaim[],
): { ref: string; handle: string; rest: string } | undefined {
  const match = /^\s*([A-Za-z][A-Za-z0-9-]*)(?:\s*[:,]\s*|\s+|$)/.exec(text);
  if (match === null) return undefined;
  const word = (match[1] ?? '').toLowerCase();
  const claim = claims.find((c) => c.handle === word);
  if (claim === undefined) return undefined;
  return { ref: claim.ref, handle: claim.handle, rest: text.slice(match[0].length).trim() || text.trim() };
}
