import { z } from 'zod';
import { type Clock, WAIT_OVER } from '../../../core/clock.js';
import type { ChatInbound } from '../../../core/inbound.js';
import type { AgentDescription } from '../../../core/ports.js';
import type { ChannelDirectory, SharedClaim } from '../../../core/registry.js';
import { sessionIdOf } from '../../../core/store.js';
import type { SlackApi } from '../web-api/client.js';
import type { People } from './people.js';
import { slackToPlain } from './text.js';

/**
 * The picker on a channel several agents share: a thread whose first message names no agent
 * gets, for its author only, one button per agent, labelled with the agent's name from its card
 * and its handle (`Billing Assistant (billing)`; the handle alone when the card cannot be read in
 * time). The press sends that very message to the chosen agent, as the thread's first turn: its
 * text is read back from Slack (the button carries only the message's ts and the handle, nothing
 * a presser could forge into a turn), and only its author may choose. Once chosen, the picker is
 * removed through the press's response_url; a later press of it (a double click, a stale copy)
 * does nothing more: the thread's message is already its first turn, so it is a duplicate.
 */

/** The note a thread's author gets with the picker (and the only one, without Block Kit). */
export const PICK_HINT = (handles: readonly string[]): string =>
  `Several agents answer in this channel. Start your message with the one you mean: ${handles.map((h) => `\`${h}\``).join(', ')} (for example \`@Agent Kourier ${handles[0] ?? 'name'}: …\`).`;

export const PICK_ACTION_PREFIX = 'agentkourier.pick.';
export const PICK_QUESTION = 'Several agents answer in this channel. Which one should take this thread?';
export const PICK_NOT_YOURS = 'Only the person who started this thread can choose its agent.';
export const PICK_GONE = 'That agent no longer answers in this channel.';

/** A button of the picker: the handle it picks and the words on it. */
export interface PickerChoice {
  handle: string;
  label: string;
}

/** Slack's cap on a button's text (characters). */
export const BUTTON_TEXT_MAX = 75;
/** How long the picker waits for an agent's card before it labels the button with the handle. */
export const CARD_WAIT_MS = 1_000;

/**
 * A button's words: the card's name and the handle, or the handle alone (no name, or a name that
 * is the handle). The name goes into `plain_text` with `emoji: false`, so Slack shows it verbatim
 * (no mrkdwn, mention, link or emoji can come out of it); control and format characters are
 * dropped and whitespace folded, so a card cannot break the line, and the name is cut so the
 * whole fits Slack's 75 characters with the handle always whole.
 */
export function buttonLabel(name: string | undefined, handle: string): string {
  const clean = (name ?? '')
    .replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Zl}\p{Zp}]/gu, ' ')
    .replace(/\s+/gu, ' ')
    .trim();
  if (clean === '' || clean.toLowerCase() === handle) return handle;
  const suffix = ` (${handle})`;
  const room = BUTTON_TEXT_MAX - Array.from(suffix).length;
  const chars = Array.from(clean);
  const shown =
    chars.length <= room
      ? clean
      : `${chars
          .slice(0, room - 1)
          .join('')
          .trimEnd()}…`;
  return `${shown}${suffix}`;
}

export type DescribeBinding = (ref: string) => Promise<AgentDescription | undefined>;

/**
 * The picker's buttons, named from the Bindings' agent cards, read side by side. A card that fails,
 * or takes longer than `waitMs` (the picker is posted while Slack waits for its answer), leaves
 * its button with the handle alone.
 */
export async function pickerChoices(
  claims: readonly SharedClaim[],
  describe: DescribeBinding | undefined,
  clock: Clock,
  waitMs = CARD_WAIT_MS,
): Promise<PickerChoice[]> {
  const shown = claims.slice(0, 25);
  if (describe === undefined) return shown.map((c) => ({ handle: c.handle, label: c.handle }));
  const deadline = new AbortController();
  const timeUp = clock.sleep(waitMs, deadline.signal).then(
    () => undefined,
    () => undefined,
  );
  try {
    return await Promise.all(
      shown.map(async (c) => {
        const name = await Promise.race([
          describe(c.ref).then(
            (d) => d?.name,
            () => undefined,
          ),
          timeUp,
        ]);
        return { handle: c.handle, label: buttonLabel(name, c.handle) };
      }),
    );
  } finally {
    deadline.abort(WAIT_OVER);
  }
}

/** The ephemeral picker's blocks: the question, then a button per agent. */
export function pickerBlocks(choices: readonly PickerChoice[], messageTs: string): unknown[] {
  return [
    { type: 'section', text: { type: 'plain_text', text: PICK_QUESTION, emoji: false } },
    {
      type: 'actions',
      block_id: 'agentkourier.pick',
      elements: choices.slice(0, 25).map((c) => ({
        type: 'button',
        action_id: `${PICK_ACTION_PREFIX}${c.handle}`,
        text: { type: 'plain_text', text: c.label, emoji: false },
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
  inbound: Pick<ChatInbound, 'receive' | 'findSession'>;
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
  if ((await deps.inbound.findSession(sessionIdOf(key))) !== undefined) return { ...where, result: 'taken' };
  const page = await deps.api.replies({ team }, { channel, ts, limit: 1 });
  const message = page.messages[0];
  if (message === undefined || message.ts !== ts) return { ...where, result: 'gone' };
  if (message.user !== p.user.id) return { ...where, result: 'not-yours' };
  // Two presses at once both get here: the store takes the thread's message once, and the
  // second is a duplicate (whichever handle it named), so it changes nothing.
  const received = await deps.inbound.receive({
    kind: 'person',
    key,
    binding: claim.ref,
    chatMessageId: ts,
    actor: await deps.people.actor(team, p.user.id),
    text: slackToPlain(message.text ?? '', botUserId),
    addressed: true,
  });
  return { ...where, result: received.duplicate ? 'taken' : 'sent' };
}

/**
 * What the presser is told: nothing when the thread got (or already had) its agent — the
 * answer in the thread says it — and why not otherwise.
 */
export function pickWords(result: PickResult): string | undefined {
  if (result === 'not-yours') return PICK_NOT_YOURS;
  if (result === 'gone') return PICK_GONE;
  return undefined;
}

/**
 * Whether the picker goes away after the press: once the thread has its agent, or the agent
 * left. A press by someone else (who cannot see the author's picker anyway) leaves it be.
 */
export function pickDismisses(result: PickResult): boolean {
  return result === 'sent' || result === 'taken' || result === 'gone';
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
