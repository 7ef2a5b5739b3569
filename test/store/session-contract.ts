import { afterEach, beforeEach, describe, expect } from 'vitest';
import type { NewTurn, SessionKey, SessionRecord, SessionStore, TurnRecord } from '../../src/core/store.js';
import { commitsContract } from './session-contract/commits.js';
import { type ContractContext, key, T0 } from './session-contract/fixtures.js';
import { leasesContract } from './session-contract/leases.js';
import { openWithTurnContract } from './session-contract/open-with-turn.js';
import { recordsContract } from './session-contract/records.js';
import { roundTripsContract } from './session-contract/round-trips.js';

/**
 * The behaviour every SessionStore must have, as one suite both implementations run (beside
 * their code: src/store/sqlite/sqlite-store.test.ts, src/store/postgres/postgres-store.test.ts).
 * `open` returns a store on an empty database; the suite migrates it itself, since migrate() is
 * part of the port. It lives under test/, not src/, so it is never built into the product; its
 * parts are in ./session-contract/, each a group of the port's promises.
 */

export function storeContract(
  name: string,
  open: () => Promise<SessionStore>,
  close: (store: SessionStore) => Promise<void> = (store) => store.close(),
): void {
  describe(`SessionStore contract: ${name}`, () => {
    let store: SessionStore;

    beforeEach(async () => {
      store = await open();
      await store.migrate();
    });

    afterEach(async () => {
      await close(store);
    });

    async function session(threadId: string, overrides: Partial<SessionKey> = {}): Promise<SessionRecord> {
      return store.openSession({ key: key(threadId, overrides), binding: 'team-a/support', now: T0 });
    }

    async function added(turn: NewTurn): Promise<TurnRecord> {
      const result = await store.addTurn(turn);
      expect(result.created).toBe(true);
      return result.turn;
    }

    async function stored(id: string): Promise<TurnRecord> {
      const turn = await store.getTurn(id);
      if (turn === undefined) throw new Error(`turn ${id} is not stored`);
      return turn;
    }

    const context: ContractContext = {
      get store() {
        return store;
      },
      session,
      added,
      stored,
    };
    recordsContract(context);
    commitsContract(context);
    leasesContract(context);
    openWithTurnContract(context);
    roundTripsContract(context);
  });
}
