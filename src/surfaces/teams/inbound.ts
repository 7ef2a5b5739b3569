import { Activity } from '@microsoft/agents-activity';
import type { TurnContext } from '@microsoft/agents-hosting';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ChatAddressRows } from '../../core/chat-address-store.js';
import { actorFor } from '../../core/compose.js';
import type { ChatInbound } from '../../core/inbound.js';
import type { SignOut } from '../../core/ports.js';
import type { ChannelDirectory, LiveBinding } from '../../core/registry.js';
import type { SessionKey } from '../../core/store.js';
import { isSignOutCommand, NOT_SIGNED_IN, SIGNED_OUT } from '../common/sign-out.js';
import {
  baseConversationId,
  FIRST_CHAT_THREAD,
  rootOf,
  TEAMS_SURFACE,
  type TeamsAddress,
} from './address.js';
import type { TeamsDecisions } from './cards/decisions.js';
import { CARD_CONTENT_TYPE, stoppingCard, VERB_STOP } from './cards/question-card.js';
import type { TeamsPeople } from './people.js';
import type { TeamsSender } from './sender.js';

/**
 * What the SDK hands over once it has checked an activity's token: an activity from a tenant the
 * install does not allow reaches nothing (not the store, not an agent). From an allowed one:
 * - a person's message becomes a turn of the session its conversation and thread stand for, for
 *   the Binding that takes the conversation (a channel or group chat it lists, or personal chats
 *   in its tenant), labelled with who wrote it; `new` alone in a chat starts a fresh session;
 *   `sign out` ends the person's sign-in links at identity providers (docs/identity.md);
 * - the app added to a conversation stores the conversation's address (so alerts and answers
 *   find it), and the app removed from it, or from its team, removes what was stored for it.
 * Every field used is checked here (zod); the SDK's Activity type is not trusted for shape.
 */

/** A chat's command that starts a fresh session in it. */
export const NEW_COMMAND = 'new';
export const NEW_STARTED_TEXT =
  'Started a new conversation with the agent: it does not see what came before.';
const MAX_TEXT = 40_000;

const account = z.object({
  id: z.string().min(1).max(256),
  name: z.string().max(256).optional(),
  aadObjectId: z.string().max(64).optional(),
});

const activitySchema = z.object({
  type: z.string().max(64),
  id: z.string().max(256).optional(),
  serviceUrl: z.url().max(2048),
  from: account,
  recipient: account,
  conversation: z.object({
    id: z.string().min(1).max(512),
    conversationType: z.enum(['personal', 'channel', 'groupChat']).optional(),
    tenantId: z.string().max(64).optional(),
  }),
  text: z.string().max(MAX_TEXT).optional(),
  entities: z
    .array(
      z.looseObject({
        type: z.string().max(64).optional(),
        text: z.string().max(512).optional(),
        mentioned: z.object({ id: z.string().max(256) }).optional(),
      }),
    )
    .max(100)
    .optional(),
  channelData: z
    .looseObject({
      tenant: z.object({ id: z.string().max(64) }).optional(),
      team: z.object({ id: z.string().max(256) }).optional(),
      eventType: z.string().max(64).optional(),
    })
    .optional(),
  membersAdded: z.array(account).max(1000).optional(),
  membersRemoved: z.array(account).max(1000).optional(),
  action: z.string().max(64).optional(),
  name: z.string().max(128).optional(),
  replyToId: z.string().max(256).optional(),
  value: z.unknown().optional(),
});

/** An Adaptive Card's Action.Execute, as Teams invokes the app with it. */
const cardAction = z.object({
  action: z.object({
    type: z.literal('Action.Execute'),
    verb: z.string().max(128),
    data: z.record(z.string().max(64), z.unknown()).optional(),
  }),
});

type TeamsActivity = z.infer<typeof activitySchema>;

export interface TeamsInboundDeps {
  tenants: ReadonlySet<string>;
  bindings: ChannelDirectory & { get(ref: string): LiveBinding | undefined };
  decisions: TeamsDecisions;
  addresses: ChatAddressRows;
  sender: TeamsSender;
  people: TeamsPeople;
  inbound: Pick<ChatInbound, 'receive' | 'cancel' | 'claimEvent'>;
  /** The "sign out" command (src/identity/sign-in/); unset: nobody is signed in anywhere. */
  signOut?: SignOut;
  logger: Logger;
  now?: () => number;
}

export class TeamsInbound {
  readonly #d: TeamsInboundDeps;
  /** The address last written per conversation, so a message writes only what changed. */
  readonly #written = new Map<string, string>();

  constructor(deps: TeamsInboundDeps) {
    this.#d = deps;
  }

  async handle(ctx: TurnContext): Promise<void> {
    const parsed = activitySchema.safeParse(ctx.activity);
    if (!parsed.success) {
      this.#d.logger.warn(
        { issues: parsed.error.issues.length },
        'a Teams activity of an unexpected shape was ignored',
      );
      return;
    }
    const a = parsed.data;
    const tenant = (a.conversation.tenantId ?? a.channelData?.tenant?.id ?? '').toLowerCase();
    if (!this.#d.tenants.has(tenant)) {
      this.#d.logger.warn(
        { tenant },
        'a Teams activity from a tenant not allowed (TEAMS_TENANTS) was ignored',
      );
      return;
    }
    if (a.type === 'message') return this.#message(a, tenant);
    if (a.type === 'invoke' && a.name === 'adaptiveCard/action') return this.#cardAction(ctx, a, tenant);
    if (a.type === 'conversationUpdate' || a.type === 'installationUpdate')
      return this.#membership(a, tenant);
  }

  /** The Binding that takes the activity's conversation, if one does. */
  #bindingOf(a: TeamsActivity, tenant: string): { ref: string } | undefined {
    const type = a.conversation.conversationType ?? 'personal';
    const base = baseConversationId(a.conversation.id);
    return type === 'personal'
      ? this.#d.bindings.forDirectMessages(TEAMS_SURFACE, tenant)
      : this.#d.bindings.forChannel(TEAMS_SURFACE, base, tenant);
  }

  /** The session key of a conversation's current thread (a channel's: the activity's root). */
  async #keyOf(a: TeamsActivity, tenant: string, rootFallback: string): Promise<SessionKey> {
    const base = baseConversationId(a.conversation.id);
    const threadId =
      a.conversation.conversationType === 'channel'
        ? (rootOf(a.conversation.id) ?? rootFallback)
        : ((await this.#d.addresses.get(TEAMS_SURFACE, tenant, base))?.threadId ?? FIRST_CHAT_THREAD);
    return { surface: TEAMS_SURFACE, workspaceId: tenant, channelId: base, threadId };
  }

  async #cardAction(ctx: TurnContext, a: TeamsActivity, tenant: string): Promise<void> {
    const action = cardAction.safeParse(a.value);
    const ref = this.#bindingOf(a, tenant)?.ref;
    const binding = ref === undefined ? undefined : this.#d.bindings.get(ref);
    if (!action.success || binding === undefined) {
      await ctx.sendActivity(Activity.fromObject({ type: 'invokeResponse', value: { status: 400 } }));
      return;
    }
    const key = await this.#keyOf(a, tenant, a.replyToId ?? '');
    const actor = actorFor('Teams', { id: a.from.aadObjectId ?? a.from.id, name: a.from.name });
    const turn = action.data.action.data?.turn;
    const card =
      action.data.action.verb === VERB_STOP && typeof turn === 'string'
        ? await this.#stop(key, actor.id, turn)
        : await this.#d.decisions.press({
            key,
            binding,
            promptId: a.replyToId,
            actor,
            aadObjectId: a.from.aadObjectId,
            memberId: a.from.id,
            data: { ...action.data.action.data, verb: action.data.action.verb },
          });
    await ctx.sendActivity(
      Activity.fromObject({
        type: 'invokeResponse',
        value: { status: 200, body: { statusCode: 200, type: CARD_CONTENT_TYPE, value: card.content } },
      }),
    );
  }

  /**
   * A Stop pressed under an answer being written: the turn's task is cancelled (anyone in the
   * conversation may: Teams sends the press only from its members). The answer stays as shown,
   * and its end says it was stopped.
   */
  async #stop(key: SessionKey, actorId: string, turnId: string) {
    const result = await this.#d.inbound
      .cancel(key, { actor: { id: actorId }, turnId })
      .catch((error: unknown) => {
        this.#d.logger.error(
          { err: error instanceof Error ? error.name : typeof error },
          'a Teams stop did not cancel',
        );
        return undefined;
      });
    this.#d.logger.info({ turnId, status: result?.status }, 'a person stopped an answer in Teams');
    return stoppingCard();
  }

  async #message(a: TeamsActivity, tenant: string): Promise<void> {
    const type = a.conversation.conversationType ?? 'personal';
    const base = baseConversationId(a.conversation.id);
    const binding = this.#bindingOf(a, tenant);
    if (binding === undefined || a.id === undefined) {
      this.#d.logger.debug(
        { tenant, type },
        'a Teams message in a conversation no Binding takes was ignored',
      );
      return;
    }
    const text = plainText(a);
    if (text === '') return;
    await this.#remember(a, tenant, type, base);
    if (type !== 'channel' && text.toLowerCase() === NEW_COMMAND) return this.#newThread(tenant, base, a.id);
    const key = await this.#keyOf(a, tenant, a.id);
    const actor = await this.#d.people.actor(key, {
      memberId: a.from.id,
      aadObjectId: a.from.aadObjectId,
      name: a.from.name,
    });
    if (isSignOutCommand(text)) return this.#signOut(key, actor.id, a.id);
    await this.#d.inbound.receive({
      kind: 'person',
      key,
      binding: binding.ref,
      chatMessageId: a.id,
      actor,
      text,
      addressed: true,
    });
  }

  /**
   * "sign out": the person's sign-in links end, and the answer says how many. Teams has no
   * message shown to one person only: it is written where the command was (their personal chat,
   * or the thread).
   */
  async #signOut(key: SessionKey, personId: string, messageId: string): Promise<void> {
    // Not a turn: the command is claimed on its own, so a redelivery answers once.
    if (
      !(await this.#d.inbound.claimEvent(`${TEAMS_SURFACE}:${key.workspaceId}:${key.channelId}:${messageId}`))
    )
      return;
    const { signOut } = this.#d;
    const ended =
      signOut === undefined
        ? 0
        : await signOut({ surface: TEAMS_SURFACE, workspaceId: key.workspaceId, id: personId });
    this.#d.logger.info({ links: ended }, 'a person signed out in Teams');
    await this.#d.sender.post(key, { type: 'message', text: ended > 0 ? SIGNED_OUT(ended) : NOT_SIGNED_IN });
  }

  async #newThread(tenant: string, base: string, messageId: string): Promise<void> {
    await this.#d.addresses.setThread(TEAMS_SURFACE, tenant, base, messageId);
    const key: SessionKey = {
      surface: TEAMS_SURFACE,
      workspaceId: tenant,
      channelId: base,
      threadId: messageId,
    };
    await this.#d.sender.post(key, { type: 'message', text: NEW_STARTED_TEXT });
  }

  async #membership(a: TeamsActivity, tenant: string): Promise<void> {
    const bot = a.recipient.id;
    const type = a.conversation.conversationType ?? 'personal';
    const base = baseConversationId(a.conversation.id);
    const removed =
      (a.type === 'installationUpdate' && (a.action ?? '').startsWith('remove')) ||
      (a.membersRemoved ?? []).some((m) => m.id === bot);
    if (removed) {
      const team = a.channelData?.team?.id;
      const gone =
        team === undefined
          ? Number(await this.#d.addresses.delete(TEAMS_SURFACE, tenant, base))
          : await this.#d.addresses.deleteGroup(TEAMS_SURFACE, tenant, team);
      this.#written.delete(`${tenant}\n${base}`);
      this.#d.sender.forget(tenant, base);
      this.#d.logger.info(
        { tenant, type, conversations: gone },
        'the app was removed from a Teams conversation',
      );
      return;
    }
    const added =
      (a.type === 'installationUpdate' && (a.action ?? '').startsWith('add')) ||
      (a.membersAdded ?? []).some((m) => m.id === bot);
    if (added) await this.#remember(a, tenant, type, base);
  }

  /** Stores the conversation's address when it is new or changed (a new service URL). */
  async #remember(a: TeamsActivity, tenant: string, type: TeamsAddress['conversationType'], base: string) {
    const address: TeamsAddress = {
      serviceUrl: a.serviceUrl,
      botId: a.recipient.id,
      conversationType: type,
      ...(a.channelData?.team?.id === undefined ? {} : { teamId: a.channelData.team.id }),
      ...(type === 'personal' && a.from.id !== a.recipient.id ? { userId: a.from.id } : {}),
    };
    const json = JSON.stringify(address);
    const cacheKey = `${tenant}\n${base}`;
    if (this.#written.get(cacheKey) === json) return;
    await this.#d.addresses.put({
      surface: TEAMS_SURFACE,
      workspaceId: tenant,
      conversationId: base,
      groupId: address.teamId ?? null,
      address: json,
      updatedAt: (this.#d.now ?? Date.now)(),
    });
    this.#written.set(cacheKey, json);
    this.#d.sender.remember(tenant, base, address);
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** A message's words: the app's mention taken out, Teams' markup reduced to text. */
export function plainText(a: Pick<TeamsActivity, 'text' | 'entities' | 'recipient'>): string {
  let text = a.text ?? '';
  for (const e of a.entities ?? []) {
    if (e.type === 'mention' && e.mentioned?.id === a.recipient.id && e.text !== undefined) {
      text = text.split(e.text).join('');
    }
  }
  return text
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/p>/gi, '\n')
    .replace(/<[^>]{0,2000}>/g, '')
    .replace(/&(#\d{1,7}|[a-z]{2,6});/gi, (whole, name: string) => {
      if (name.startsWith('#')) {
        const code = Number(name.slice(1));
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
      }
      return ENTITIES[name.toLowerCase()] ?? whole;
    })
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
