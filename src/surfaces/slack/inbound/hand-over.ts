import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { SharedClaim } from '../../../core/registry.js';
import { type SessionKey, type SessionStore, sessionIdOf } from '../../../core/store.js';
import type { SlackApi } from '../web-api/client.js';

/**
 * Handing a thread on a shared channel to another agent: only by an explicit command,
 * `@Agent Kourier hand over to k8s` (or `handover k8s`, `switch to k8s`), optionally followed by
 * the first question for it (`… to k8s: why do the pods restart?`). The session keeps its thread
 * and its history here, but its Binding changes and its agent context starts again (the new agent
 * has none of the old one's), and the thread is told so. Only an idle thread is handed over: a
 * task still running or a question still waiting would be cut off.
 */

const COMMAND = /^\s*(?:hand\s*over|switch)\s+(?:to\s+)?([A-Za-z][A-Za-z0-9-]*)\s*(?:[:,]\s*|\s+|$)/i;

export interface HandOverCommand {
  target: SharedClaim;
  /** What followed the handle: the first message for the new agent ('' when none). */
  rest: string;
}

/** The command a message is, or undefined (also when it names no handle of this channel). */
export function parseHandOver(text: string, claims: readonly SharedClaim[]): HandOverCommand | undefined {
  const match = COMMAND.exec(text);
  if (match === null) return undefined;
  const word = (match[1] ?? '').toLowerCase();
  const target = claims.find((c) => c.handle === word);
  return target === undefined ? undefined : { target, rest: text.slice(match[0].length).trim() };
}

export const HANDED_OVER = (handle: string): string =>
  `This thread now talks to \`${handle}\`. It starts a new conversation: \`${handle}\` has not seen what was said before.`;
export const HAND_OVER_BUSY = 'The agent is still working in this thread. Hand it over once it has answered.';
export const HAND_OVER_SAME = (handle: string): string => `This thread already talks to \`${handle}\`.`;

export type HandOverResult = 'handed-over' | 'busy' | 'same' | 'no-session';

export async function handOver(
  deps: {
    store: Pick<SessionStore, 'getSession' | 'openTurns' | 'commit'>;
    api: SlackApi;
    clock: Clock;
    logger: Logger;
  },
  key: SessionKey,
  command: HandOverCommand,
): Promise<HandOverResult> {
  const session = await deps.store.getSession(sessionIdOf(key));
  if (session === undefined) return 'no-session';
  if (session.binding === command.target.ref) return 'same';
  const open = await deps.store.openTurns(session.id);
  if (session.task !== null || session.question !== null || open.some((t) => t.state !== 'settled'))
    return 'busy';
  // Version-checked: a turn that slipped in meanwhile makes this a no-op, reported as busy.
  const written = await deps.store
    .commit({ session: { ...session, binding: command.target.ref, contextId: null }, now: deps.clock.now() })
    .catch(() => undefined);
  if (written === undefined) return 'busy';
  deps.logger.info(
    { session: session.id, from: session.binding, to: command.target.ref },
    'a thread was handed over',
  );
  await deps.api
    .postMessage(
      { team: key.workspaceId },
      { channel: key.channelId, thread_ts: key.threadId, text: HANDED_OVER(command.target.handle) },
    )
    .catch(() =>
      deps.logger.warn({ session: session.id }, 'could not say in the thread that it was handed over'),
    );
  return 'handed-over';
}
