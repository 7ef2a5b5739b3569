import { type SessionKey, sessionIdOf } from '../../../core/store.js';

/**
 * How a Slack thread is named for the engine: the surface's name in every session key, and the
 * way back from a session id to the workspace, channel and thread it stands for.
 */

export const SURFACE = 'slack';

/** The Slack session key a session id stands for; undefined for another surface's sessions. */
export function slackKeyOf(sessionId: string): SessionKey | undefined {
  const parts = sessionId.split(':');
  if (parts.length !== 4) return undefined;
  try {
    const [surface = '', workspaceId = '', channelId = '', threadId = ''] = parts.map(decodeURIComponent);
    const key = { surface, workspaceId, channelId, threadId };
    return surface === SURFACE && sessionIdOf(key) === sessionId ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The action id of a notice's link button (a sign-in): its click only opens the link. */
export const LINK_ACTION_ID = 'agentkourier_link';
