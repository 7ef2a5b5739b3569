import type { Logger } from 'pino';
import type { ChatInbound, HandOverResult } from '../../../core/inbound.js';
import type { SharedClaim } from '../../../core/registry.js';
import type { SessionKey } from '../../../core/store.js';
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

/** Hands the thread over through the engine (which keeps it idle-only), then tells the thread. */
export async function handOver(
  deps: {
    inbound: Pick<ChatInbound, 'handOver'>;
    api: SlackApi;
    logger: Logger;
  },
  key: SessionKey,
  command: HandOverCommand,
): Promise<HandOverResult> {
  const result = await deps.inbound.handOver(key, command.target.ref);
  if (result !== 'handed-over') return result;
  deps.logger.info({ thread: key.threadId, to: command.target.ref }, 'a thread was handed over');
  await deps.api
    .postMessage(
      { team: key.workspaceId },
      { channel: key.channelId, thread_ts: key.threadId, text: HANDED_OVER(command.target.handle) },
    )
    .catch(() =>
      deps.logger.warn({ thread: key.threadId }, 'could not say in the thread that it was handed over'),
    );
  return 'handed-over';
}
