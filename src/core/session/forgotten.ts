import type { EngineEvent } from '../events.js';
import type { ChatSurface } from '../ports.js';
import type { ForgottenMarks } from '../retention-store.js';
import type { SessionRecord } from '../store.js';
import { notice } from './notices.js';

/**
 * A message that opened a thread the retention sweep forgot is told so before its answer: the
 * mark is cleared (the thread lives again) and the notice posted. A store that cannot be read
 * now costs the notice, never the message.
 */
export async function noticeIfForgotten(
  marks: ForgottenMarks,
  surface: ChatSurface,
  emit: (event: EngineEvent) => void,
  session: SessionRecord,
  turnId: string,
  at: number,
): Promise<void> {
  const forgottenAt = await marks.forgottenAt(session.id).catch(() => undefined);
  if (forgottenAt === undefined) return;
  await marks.clearForgotten(session.id).catch(() => undefined);
  emit({
    type: 'notice.posted',
    kind: 'thread-forgotten',
    sessionId: session.id,
    binding: session.binding,
    at,
  });
  await surface
    .postNotice(
      { sessionId: session.id, key: session.key },
      { ...notice('thread-forgotten', turnId), questionKey: null },
    )
    .catch(() => undefined);
}
