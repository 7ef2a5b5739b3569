import type { ConversationReference } from '@microsoft/agents-activity';
import { z } from 'zod';
import type { SessionKey } from '../../core/store.js';

/**
 * Where a Teams conversation is, and which thread of it a message belongs to.
 *
 * A session's key: the surface `teams`, the tenant (lower case) as its workspace, the
 * conversation as its channel — a channel's id (`19:…@thread.tacv2`, without Teams'
 * `;messageid=` suffix), a group chat's or a personal chat's — and as its thread, in a channel
 * the root post's id; in a chat, `chat` until a `new` command moves the chat to a thread named
 * by that command's message id.
 *
 * What is stored per conversation to reach it again (the chat address) is the part of Teams'
 * conversation reference that does not change from message to message: the service URL, the
 * conversation's type and team, the bot's id, and in a personal chat the person's Teams id. No
 * person's name or words.
 */

export const TEAMS_SURFACE = 'teams';
/** A chat's thread until a `new` command names another. */
export const FIRST_CHAT_THREAD = 'chat';

export type ConversationType = 'personal' | 'channel' | 'groupChat';

export const teamsAddress = z.object({
  serviceUrl: z.url().max(2048),
  botId: z.string().min(1).max(256),
  conversationType: z.enum(['personal', 'channel', 'groupChat']),
  teamId: z.string().max(256).optional(),
  /** A personal chat's person (their 29: id), whom the app's messages there are to. */
  userId: z.string().max(256).optional(),
});

export type TeamsAddress = z.infer<typeof teamsAddress>;

/** The conversation without Teams' `;messageid=<root>` (a channel's id, or the chat's). */
export function baseConversationId(conversationId: string): string {
  const at = conversationId.indexOf(';');
  return at < 0 ? conversationId : conversationId.slice(0, at);
}

/** The root post a channel conversation id names (`…;messageid=<root>`), if it names one. */
export function rootOf(conversationId: string): string | undefined {
  return /;messageid=([^;]+)/.exec(conversationId)?.[1];
}

/** The conversation id a session's messages go to: a channel's thread, or the chat itself. */
export function conversationIdOf(key: SessionKey, address: TeamsAddress): string {
  return address.conversationType === 'channel'
    ? `${key.channelId};messageid=${key.threadId}`
    : key.channelId;
}

/**
 * Teams' conversation reference for a session's conversation, for the SDK's proactive sends;
 * `conversationId` another one of the same address (a channel itself, for a new post).
 */
export function referenceOf(
  key: SessionKey,
  address: TeamsAddress,
  conversationId = conversationIdOf(key, address),
): ConversationReference {
  return {
    serviceUrl: address.serviceUrl,
    channelId: 'msteams',
    agent: { id: address.botId, name: '' },
    // A channel's or group chat's messages are to the conversation, not one person in it (the
    // SDK wants a recipient; Teams routes by the conversation).
    user: { id: address.userId ?? key.channelId, name: '' },
    conversation: {
      id: conversationId,
      conversationType: address.conversationType,
      tenantId: key.workspaceId,
      isGroup: address.conversationType !== 'personal',
    },
  } as ConversationReference;
}
