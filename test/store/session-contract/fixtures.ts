import {
  type NewTurn,
  type PendingQuestion,
  type RecordedTask,
  type SessionKey,
  type SessionRecord,
  type SessionStore,
  sessionIdOf,
  type TurnRecord,
} from '../../../src/core/store.js';
import { queuedTurn } from '../../../testkit/turns.js';

/** The values the parts of the SessionStore contract build their cases from. */

/** A realistic clock (ms since epoch, beyond 32 bits) so bigint columns are exercised. */
export const T0 = 1_700_000_000_000;
export const MINUTE = 60_000;
export const DAY = 24 * 60 * MINUTE;

export function key(threadId: string, overrides: Partial<SessionKey> = {}): SessionKey {
  return { surface: 'slack', workspaceId: 'T01', channelId: 'C01', threadId, ...overrides };
}

/** A session as a store records it when it opens it at T0 with nothing recorded yet. */
export function freshSession(threadId: string, binding = 'team-a/support'): SessionRecord {
  return {
    id: sessionIdOf(key(threadId)),
    key: key(threadId),
    binding,
    contextId: null,
    task: null,
    question: null,
    lastQuestionKey: null,
    version: 1,
    createdAt: T0,
    updatedAt: T0,
  };
}

export function newTurn(sessionId: string, id: string, overrides: Partial<NewTurn> = {}): NewTurn {
  return queuedTurn({
    id,
    sessionId,
    chatMessageId: `chat-${id}`,
    text: `text of ${id}`,
    metadata: { actor: { id: 'U01', name: 'Ada' } },
    now: T0,
    ...overrides,
  });
}

export function task(turnId: string): RecordedTask {
  return { taskId: `task-${turnId}`, turnId, state: 'working', lastActivityAt: T0 + 5, streamLostAt: null };
}

export function question(): PendingQuestion {
  return {
    taskId: 'task-q',
    contextId: 'ctx-q',
    kind: 'structured',
    questionKey: 'status-msg-1',
    askedAt: T0 + 10,
    expiresAt: T0 + 10 + 15 * MINUTE,
    promptRef: 'C01/1700000000.000100',
    payload: [{ tool: 'delete_pod', args: { name: 'web-1', force: true } }, null, 3.5],
  };
}

/** What each part of the contract gets: the store under test and the helpers that fill it. */
export interface ContractContext {
  /** The store of the running test, migrated, on an empty database. */
  readonly store: SessionStore;
  session(threadId: string, overrides?: Partial<SessionKey>): Promise<SessionRecord>;
  added(turn: NewTurn): Promise<TurnRecord>;
  stored(id: string): Promise<TurnRecord>;
}
