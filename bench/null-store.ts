import type { Commit, SessionRecord, SessionStore } from '../src/core/store.js';
import { sessionIdOf } from '../src/core/store.js';
import { newSessionRecord } from '../src/store/rows.js';
import { newTurnRecord, writtenSessionRecord } from '../src/store/written-records.js';

/**
 * A diagnosis for the engine's throughput rounds (`BENCH_STORE=null` or `null-later`): a store
 * that keeps nothing and answers every write of a new thread's one turn as a store would, so a
 * round shows what the engine costs without any store. `later`: each answer comes after a turn
 * of the event loop (setImmediate), as a group commit's does, but with no SQL behind it — what
 * a store's waits cost apart from its statements. Only what the throughput rounds call is
 * there: nothing else may run on it.
 */
export function nullStore(later: boolean): SessionStore {
  const answer = <T>(value: T): Promise<T> =>
    later ? new Promise((resolve) => setImmediate(() => resolve(value))) : Promise.resolve(value);
  const store: Pick<
    SessionStore,
    | 'sharedByReplicas'
    | 'migrate'
    | 'close'
    | 'sessionsWithWork'
    | 'openSessionAndAddTurn'
    | 'commit'
    | 'setAnswerRef'
  > = {
    sharedByReplicas: false,
    migrate: async () => undefined,
    close: async () => undefined,
    sessionsWithWork: async () => [],
    openSessionAndAddTurn: (init, build) => {
      const session: SessionRecord = newSessionRecord(sessionIdOf(init.key), init);
      return answer({ session, turn: newTurnRecord(build(session, true), 1), created: true });
    },
    commit: (commit: Commit) =>
      answer(commit.session === undefined ? undefined : writtenSessionRecord(commit.session, commit.now)),
    setAnswerRef: () => answer(undefined),
  };
  return store as SessionStore;
}
