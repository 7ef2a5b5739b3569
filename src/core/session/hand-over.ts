import type { HandOverResult } from '../inbound.js';
import { type SessionKey, type SessionStore, sessionIdOf } from '../store.js';

/**
 * Hands an idle thread to another Binding (ChatInbound.handOver): the session keeps its thread
 * and history, its agent context starts again. Only an idle thread is handed over (no task, no
 * question, no open turn); the write is version-checked, so a turn that slipped in meanwhile
 * makes it a no-op, reported as busy.
 */
export async function handOverSession(
  store: Pick<SessionStore, 'getSession' | 'openTurns' | 'commit'>,
  key: SessionKey,
  binding: string,
  now: number,
): Promise<HandOverResult> {
  const session = await store.getSession(sessionIdOf(key));
  if (session === undefined) return 'no-session';
  if (session.binding === binding) return 'same';
  const open = await store.openTurns(session.id);
  if (session.task !== null || session.question !== null || open.some((t) => t.state !== 'settled'))
    return 'busy';
  const written = await store
    .commit({ session: { ...session, binding, contextId: null }, now })
    .catch(() => undefined);
  return written === undefined ? 'busy' : 'handed-over';
}
