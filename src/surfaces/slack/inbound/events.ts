// Slightly over our ~400-line rule: every rule that turns a Slack message into a turn (channels,
// DMs, shared channels and their commands) is here, read beside the others; the shared-channel
// helpers themselves live in agent-picker.ts and hand-over.ts.

import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../../../core/clock.js';
import type { UntoldFeedback } from '../../../core/feedback-store.js';
import type { ChatInbound } from '../../../core/inbound.js';
import type { SignOut } from '../../../core/ports.js';
import type { ChannelDirectory, SharedClaim } from '../../../core/registry.js';
import { type SessionKey, sessionIdOf } from '../../../core/store.js';
import { isSignOutCommand, NOT_SIGNED_IN, SIGNED_OUT } from '../../common/sign-out.js';
import type { Bounded, SlackListeners } from '../listeners.js';
import type { SlackApi } from '../web-api/client.js';
import {
  type DescribeBinding,
  namedHandle,
  PICK_HINT,
  pickAgent,
  pickDismisses,
  pickerBlocks,
  pickerChoices,
  pickWords,
} from './agent-picker.js';
import {
  HAND_OVER_BUSY,
  HAND_OVER_SAME,
  type HandOverCommand,
  handOver,
  parseHandOver,
} from './hand-over.js';
import { LINK_ACTION_ID, SURFACE } from './keys.js';
import type { People } from './people.js';
import { mentions, slackToPlain } from './text.js';

/**
 * Slack events to engine turns. A channel belongs to the Binding that lists it; an app mention
 * there starts a thread session (the mention's message is the thread root) or continues one.
 * In a thread with a session, a reply that does not mention the app is carried, as untrusted
 * data, into the next turn (S-7) — or answers the agent's question. Direct messages reach the
 * Binding that allows them. Bots (ours included), edits and deletions are not turns. A mention
 * in a channel no Binding owns gets one short ephemeral hint.
 *
 * Slack redelivers an event it thinks was not acknowledged in time (X-Slack-Retry-Num), and may
 * deliver one twice: the engine takes a message it already has (same ts) as the same turn, and
 * the event id is claimed durably in the very transaction that stores the turn, so a crash
 * between the two cannot make a redelivery of a message never stored look like a duplicate.
 * A hint (an ephemeral reply, nothing stored) claims its event on its own before it is posted.
 */

/** Bolt's `respond`: a message (or `delete_original`) sent to an interaction's response_url. */
export type Respond = (message: { delete_original: true }) => Promise<unknown>;

const eventSchema = z.object({
  type: z.string(),
  subtype: z.string().optional(),
  user: z.string().optional(),
  bot_id: z.string().optional(),
  // Not bounded here: the engine cuts an overlong message with a visible mark instead of dropping it.
  text: z.string().optional(),
  ts: z.string().regex(/^\d+\.\d+$/),
  thread_ts: z
    .string()
    .regex(/^\d+\.\d+$/)
    .optional(),
  channel: z.string().regex(/^[A-Z0-9]+$/),
  channel_type: z.string().optional(),
  team: z.string().optional(),
});

const envelopeSchema = z.object({
  team_id: z.string().optional(),
  event_id: z.string().min(1),
  event: eventSchema,
});

export type SlackEvent = z.infer<typeof eventSchema>;

export type Route =
  | { kind: 'ignore'; reason: string }
  | { kind: 'handover'; key: SessionKey; user: string; ts: string; command: HandOverCommand }
  /** "sign out", to the app: the person's sign-in links at identity providers end. */
  | { kind: 'sign-out'; channel: string; user: string; threadTs: string | undefined }
  | {
      kind: 'hint';
      channel: string;
      user: string;
      threadTs: string | undefined;
      text: string;
      /** On a shared channel: the agents the picker offers (its buttons, named from their cards). */
      picker?: readonly SharedClaim[];
    }
  | {
      kind: 'turn';
      binding: string;
      key: SessionKey;
      user: string;
      text: string;
      ts: string;
      addressed: boolean;
      /** Only when the thread already has a session (a reply that did not mention the app). */
      needsSession: boolean;
      /**
       * A shared channel (several Bindings, by handle): a thread that has a session stays with
       * its Binding, whatever `binding` says (the handle a new thread named, if any).
       */
      shared?: { claims: readonly SharedClaim[] };
    };

/** Subtypes that are still a person's message; every other subtype (edits, deletions, joins…) is not. */
const PERSON_SUBTYPES = new Set(['thread_broadcast', 'file_share']);

export const CHANNEL_HINT = (channel: string): string =>
  `This channel is not connected to an agent yet. An operator can connect it by adding its ID (${channel}) to a Binding.`;
export const DM_HINT =
  'Direct messages are not connected to an agent. Mention me in a channel that is connected to one.';

/** The command that ends a person's sign-in links: "sign out" and nothing else, to the app. */
function isSignOut(text: string, botUserId: string): boolean {
  return isSignOutCommand(slackToPlain(text, botUserId));
}

/** Decides what an event is. Pure: the tests walk every rule through it. */
export function route(event: SlackEvent, team: string, botUserId: string, bindings: ChannelDirectory): Route {
  if (event.subtype !== undefined && !PERSON_SUBTYPES.has(event.subtype))
    return { kind: 'ignore', reason: `subtype ${event.subtype}` };
  if (event.bot_id !== undefined || event.user === undefined || event.user === botUserId)
    return { kind: 'ignore', reason: 'not a person' };
  const text = event.text ?? '';
  const threadId = event.thread_ts ?? event.ts;
  const key = (channelId: string): SessionKey => ({
    surface: SURFACE,
    workspaceId: team,
    channelId,
    threadId,
  });
  const direct =
    event.channel_type === 'im' || (event.channel_type === undefined && event.channel.startsWith('D'));
  if ((event.type === 'app_mention' || (event.type === 'message' && direct)) && isSignOut(text, botUserId))
    return { kind: 'sign-out', channel: event.channel, user: event.user, threadTs: event.thread_ts };
  if (event.type === 'message' && direct) {
    const binding = bindings.forDirectMessages(SURFACE, team);
    if (binding === undefined)
      return {
        kind: 'hint',
        channel: event.channel,
        user: event.user,
        threadTs: event.thread_ts,
        text: DM_HINT,
      };
    return {
      kind: 'turn',
      binding: binding.ref,
      key: key(event.channel),
      user: event.user,
      text: slackToPlain(text, botUserId),
      ts: event.ts,
      addressed: true,
      needsSession: false,
    };
  }
  if (event.type === 'app_mention') {
    const binding = bindings.forChannel(SURFACE, event.channel, team);
    const shared = binding === undefined ? bindings.sharedChannel?.(SURFACE, event.channel, team) : undefined;
    if (shared !== undefined) {
      const plain = slackToPlain(text, botUserId);
      const named = namedHandle(plain, shared);
      const inThread = event.thread_ts !== undefined && event.thread_ts !== event.ts;
      const command = inThread ? parseHandOver(plain, shared) : undefined;
      if (command !== undefined)
        return { kind: 'handover', key: key(event.channel), user: event.user, ts: event.ts, command };
      // A new thread must name its agent; a reply in a thread goes to the thread's agent, which
      // the router reads from its session (and, without one, from the handle it names).
      if (named === undefined && !inThread)
        return {
          kind: 'hint',
          channel: event.channel,
          user: event.user,
          threadTs: event.thread_ts,
          text: PICK_HINT(shared.map((c) => c.handle)),
          picker: shared,
        };
      return {
        kind: 'turn',
        binding: named?.ref ?? '',
        key: key(event.channel),
        user: event.user,
        text: named === undefined ? plain : named.rest,
        ts: event.ts,
        addressed: true,
        needsSession: named === undefined,
        shared: { claims: shared },
      };
    }
    if (binding === undefined)
      return {
        kind: 'hint',
        channel: event.channel,
        user: event.user,
        threadTs: event.thread_ts,
        text: CHANNEL_HINT(event.channel),
      };
    return {
      kind: 'turn',
      binding: binding.ref,
      key: key(event.channel),
      user: event.user,
      text: slackToPlain(text, botUserId),
      ts: event.ts,
      addressed: true,
      needsSession: false,
    };
  }
  if (event.type === 'message') {
    // A mention arrives as app_mention too: that copy is the turn.
    if (mentions(text, botUserId)) return { kind: 'ignore', reason: 'mention (handled as app_mention)' };
    if (event.thread_ts === undefined || event.thread_ts === event.ts)
      return { kind: 'ignore', reason: 'not in a thread' };
    if (event.channel_type === 'mpim') return { kind: 'ignore', reason: 'group DM' };
    const binding = bindings.forChannel(SURFACE, event.channel, team);
    const shared = binding === undefined ? bindings.sharedChannel?.(SURFACE, event.channel, team) : undefined;
    if (shared !== undefined)
      return {
        kind: 'turn',
        binding: '',
        key: key(event.channel),
        user: event.user,
        text: slackToPlain(text, botUserId),
        ts: event.ts,
        addressed: false,
        needsSession: true,
        shared: { claims: shared },
      };
    if (binding === undefined) return { kind: 'ignore', reason: 'channel without a Binding' };
    return {
      kind: 'turn',
      binding: binding.ref,
      key: key(event.channel),
      user: event.user,
      text: slackToPlain(text, botUserId),
      ts: event.ts,
      addressed: false,
      needsSession: true,
    };
  }
  return { kind: 'ignore', reason: `event ${event.type}` };
}

/**
 * Where the next turn's note of the feedback on the previous answer comes from (the agent app's
 * FeedbackNotes): its metadata, and the presses it tells, marked told in the turn's own write.
 */
export interface FeedbackNoteSource {
  noteFor(
    sessionId: string,
    binding: string,
  ): Promise<{ metadata: Record<string, unknown>; presses: UntoldFeedback[] } | undefined>;
}

export interface InboundDeps {
  /** The engine's inbound port: the only way in (no store). */
  inbound: Pick<ChatInbound, 'receive' | 'handOver' | 'findSession' | 'claimEvent' | 'forgottenAt'>;
  bindings: ChannelDirectory;
  people: People;
  api: SlackApi;
  clock: Clock;
  logger: Logger;
  /** Single-workspace mode: the bot (OAuth mode: each event's, from its installation). */
  botUserId?: string;
  /** The team of the bot token, for events that do not name one. */
  teamId?: string;
  /** A Binding's agent as its card describes it: the picker's button names (agent-picker.ts). */
  describe?: DescribeBinding;
  /** Where a new thread's first message becomes its agent session's title. */
  titles?: { titleFrom(sessionId: string, text: string): void };
  /** The feedback on the previous answer, for the next turn (agent-app/feedback-notes.ts). */
  feedbackNotes?: FeedbackNoteSource;
  /** The "sign out" command (src/identity/sign-in/); unset: nobody is signed in anywhere. */
  signOut?: SignOut;
}

export const NOT_TAKEN =
  'Agent Kourier could not take this message just now. Please send it again in a moment.';

export class InboundRouter implements SlackListeners {
  readonly #deps: InboundDeps;

  constructor(deps: InboundDeps) {
    this.#deps = deps;
  }

  /** Messages and mentions, and the agent picker of a shared channel (agent-picker.ts). */
  register(app: App, bounded: Bounded): void {
    const handle = async ({ body, context }: { body: unknown; context: { botUserId?: string } }) =>
      bounded(this.handle(body, context.botUserId));
    app.event('app_mention', handle);
    app.event('message', handle);
    // A notice's link button (a sign-in) opens its page in the browser; the click only needs its ack.
    app.action({ type: 'block_actions', action_id: LINK_ACTION_ID }, async ({ ack }) => {
      await ack();
    });
    app.action(
      { type: 'block_actions', action_id: /^agentkourier\.pick\./ },
      async ({ ack, body, context, respond }) => {
        await ack();
        await bounded(this.pick(body, context.botUserId, respond));
      },
    );
  }

  /**
   * Handles one Events API envelope. Never throws: Slack only needs the ack. `botUserId`: the
   * bot of the event's installation, as Bolt authorized it (OAuth mode).
   */
  async handle(body: unknown, botUserId?: string): Promise<void> {
    const { logger } = this.#deps;
    const parsed = envelopeSchema.safeParse(body);
    if (!parsed.success) {
      logger.debug('an event that is not a message event was ignored');
      return;
    }
    const { event, event_id: eventId } = parsed.data;
    const team = parsed.data.team_id ?? event.team ?? this.#deps.teamId;
    const bot = botUserId ?? this.#deps.botUserId;
    if (team === undefined || bot === undefined) {
      logger.warn({ eventId }, 'a Slack event names no workspace or bot; ignored');
      return;
    }
    const decision = route(event, team, bot, this.#deps.bindings);
    if (decision.kind === 'ignore') return;
    // A turn claims its event in the transaction that stores it (a crash leaves both or
    // neither); only a hint, which stores nothing, claims it on its own first.
    if (decision.kind === 'turn') {
      await this.#turn(team, decision, eventId);
      return;
    }
    if (decision.kind === 'handover') {
      await this.#handOver(team, decision, eventId);
      return;
    }
    if (decision.kind === 'sign-out') {
      await this.#signOut(team, decision, eventId);
      return;
    }
    try {
      if (!(await this.#deps.inbound.claimEvent(`${team}:${eventId}`))) {
        logger.debug({ eventId }, 'a redelivered Slack event was ignored');
        return;
      }
    } catch (error) {
      // Without the store nothing can be taken: say so rather than drop the message silently.
      logger.error({ eventId, err: errorName(error) }, 'could not record a Slack event');
      return;
    }
    const blocks =
      decision.picker === undefined
        ? undefined
        : pickerBlocks(await pickerChoices(decision.picker, this.#deps.describe, this.#deps.clock), event.ts);
    await this.#ephemeral(team, decision.channel, decision.user, decision.threadTs, decision.text, blocks);
  }

  /**
   * A press on the agent picker of a shared channel (agent-picker.ts). `respond`: the press's
   * response_url, through which the picker note is removed once it has done its job. Never throws.
   */
  async pick(body: unknown, botUserId?: string, respond?: Respond): Promise<void> {
    const bot = botUserId ?? this.#deps.botUserId;
    if (bot === undefined) return;
    try {
      const picked = await pickAgent(this.#deps, body, bot);
      if (pickDismisses(picked.result) && respond !== undefined)
        await respond({ delete_original: true }).catch((error: unknown) =>
          this.#deps.logger.warn({ err: errorName(error) }, 'could not remove the agent picker'),
        );
      const words = pickWords(picked.result);
      if (
        words !== undefined &&
        picked.team !== undefined &&
        picked.channel !== undefined &&
        picked.user !== undefined
      )
        await this.#ephemeral(picked.team, picked.channel, picked.user, undefined, words);
    } catch (error) {
      this.#deps.logger.error({ err: errorName(error) }, 'a press on the agent picker failed');
    }
  }

  async #turn(team: string, turn: Extract<Route, { kind: 'turn' }>, eventId: string): Promise<void> {
    const { inbound, people, logger } = this.#deps;
    try {
      let binding = turn.binding;
      if (turn.needsSession || turn.shared !== undefined) {
        const session = await inbound.findSession(sessionIdOf(turn.key));
        // A reply in a thread the retention sweep forgot starts a new conversation there.
        const forgotten =
          session === undefined && turn.shared === undefined
            ? await inbound.forgottenAt?.(sessionIdOf(turn.key))
            : undefined;
        if (forgotten !== undefined) turn = { ...turn, addressed: true, needsSession: false };
        if (session === undefined && turn.needsSession) {
          // A mention in a shared channel's thread that has no agent yet, naming none.
          if (turn.addressed && turn.shared !== undefined)
            await this.#ephemeral(
              team,
              turn.key.channelId,
              turn.user,
              turn.key.threadId,
              PICK_HINT(turn.shared.claims.map((c) => c.handle)),
            );
          return;
        }
        // The thread stays with the agent it started with (the session keeps its Binding).
        if (session !== undefined) binding = session.binding;
      }
      // Not looked up here: the ack must not wait on users.info. The engine asks the surface
      // again before the send (SlackSurface.person).
      const actor = people.known(team, turn.user);
      // A thread's first message names its agent session.
      if (turn.addressed && turn.ts === turn.key.threadId)
        this.#deps.titles?.titleFrom(sessionIdOf(turn.key), turn.text);
      // Only a turn sent to the agent carries the note: a reply carried as context does not.
      const sessionId = sessionIdOf(turn.key);
      const note = turn.addressed ? await this.#deps.feedbackNotes?.noteFor(sessionId, binding) : undefined;
      await inbound.receive({
        kind: 'person',
        key: turn.key,
        binding,
        chatMessageId: turn.ts,
        actor,
        text: turn.text,
        addressed: turn.addressed,
        inboundEvent: `${team}:${eventId}`,
        // The note's presses are marked told in the turn's own write (AddTurnOptions).
        ...(note === undefined ? {} : { metadata: note.metadata, feedbackTold: note.presses }),
      });
    } catch (error) {
      logger.error({ eventId, err: errorName(error) }, 'could not take a Slack message');
      if (turn.addressed)
        await this.#ephemeral(team, turn.key.channelId, turn.user, turn.key.threadId, NOT_TAKEN);
    }
  }

  async #signOut(
    team: string,
    decision: Extract<Route, { kind: 'sign-out' }>,
    eventId: string,
  ): Promise<void> {
    const { inbound, logger, signOut } = this.#deps;
    const { channel, user, threadTs } = decision;
    try {
      // Not a turn: its event is claimed on its own, as a hint's is.
      if (!(await inbound.claimEvent(`${team}:${eventId}`))) return;
      const ended =
        signOut === undefined ? 0 : await signOut({ surface: SURFACE, workspaceId: team, id: user });
      logger.info({ links: ended }, 'a person signed out');
      await this.#ephemeral(team, channel, user, threadTs, ended > 0 ? SIGNED_OUT(ended) : NOT_SIGNED_IN);
    } catch (error) {
      logger.error({ eventId, err: errorName(error) }, 'could not sign a person out');
      await this.#ephemeral(team, channel, user, threadTs, NOT_TAKEN);
    }
  }

  async #handOver(
    team: string,
    decision: Extract<Route, { kind: 'handover' }>,
    eventId: string,
  ): Promise<void> {
    const { inbound, api, logger } = this.#deps;
    const { key, user, command } = decision;
    try {
      // The command itself is not a turn: its event is claimed on its own, as a hint's is.
      if (!(await inbound.claimEvent(`${team}:${eventId}`))) return;
      const result = await handOver({ inbound, api, logger }, key, command);
      if (result === 'busy') await this.#ephemeral(team, key.channelId, user, key.threadId, HAND_OVER_BUSY);
      if (result === 'same')
        await this.#ephemeral(team, key.channelId, user, key.threadId, HAND_OVER_SAME(command.target.handle));
      if (result === 'no-session')
        await this.#ephemeral(team, key.channelId, user, key.threadId, PICK_HINT([command.target.handle]));
      if (result !== 'handed-over' || command.rest === '') return;
      // What followed the command is the new agent's first message (its own turn, same message).
      await this.#deps.inbound.receive({
        kind: 'person',
        key,
        binding: command.target.ref,
        chatMessageId: decision.ts,
        actor: this.#deps.people.known(team, user),
        text: command.rest,
        addressed: true,
      });
    } catch (error) {
      logger.error({ eventId, err: errorName(error) }, 'could not hand a Slack thread over');
      await this.#ephemeral(team, key.channelId, user, key.threadId, NOT_TAKEN);
    }
  }

  async #ephemeral(
    team: string,
    channel: string,
    user: string,
    threadTs: string | undefined,
    text: string,
    blocks?: unknown[],
  ): Promise<void> {
    try {
      await this.#deps.api.postEphemeral(
        { team },
        {
          channel,
          user,
          text,
          ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
          ...(blocks === undefined ? {} : { blocks }),
        },
      );
    } catch (error) {
      this.#deps.logger.warn({ channel, err: errorName(error) }, 'could not post an ephemeral hint');
    }
  }
}

function errorName(error: unknown): Record<string, unknown> {
  if (error instanceof Error)
    return { name: error.name, ...('code' in error ? { code: String(error.code) } : {}) };
  return { name: typeof error };
}
