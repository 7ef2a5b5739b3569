import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACTOR_METADATA_KEY } from '../../src/core/compose.js';
import type { FeedbackRows } from '../../src/core/feedback-store.js';
import type { IdentityLinkStore } from '../../src/core/identity-link-store.js';
import type { RetentionStore } from '../../src/core/retention-store.js';
import type { SessionStore } from '../../src/core/store.js';
import type { TranscriptStore } from '../../src/core/transcript-store.js';
import { queuedTurn } from '../../testkit/turns.js';
import { DAY, key, T0 } from './session-contract/fixtures.js';

/**
 * What every RetentionStore must do, one suite both databases run: idle threads forgotten in
 * bounded batches with nothing in flight touched, the forgotten mark, a person's erasure (their
 * threads, their words in others' threads, their feedback), and the store's size.
 */

export interface OpenedRetention {
  sessions: SessionStore;
  retention: RetentionStore;
  feedback: FeedbackRows;
  transcripts: TranscriptStore;
  links: IdentityLinkStore;
}

const ADA = { id: 'U0ADA', name: 'Ada', email: 'ada@example.com' };
const BOB = { id: 'U0BOB', name: 'Bob', email: 'bob@example.com' };
const labelOf = (p: typeof ADA) => `[Slack: ${p.name} (${p.id}) <${p.email}>]`;

export function retentionContract(name: string, open: () => Promise<OpenedRetention>): void {
  describe(`RetentionStore contract: ${name}`, () => {
    let s: OpenedRetention;

    beforeEach(async () => {
      s = await open();
      await s.sessions.migrate();
    });

    afterEach(async () => {
      await s.sessions.close();
    });

    /** A thread opened at `at` whose turns (by these people, settled unless said) were written then. */
    async function thread(
      threadId: string,
      at: number,
      turns: { by: typeof ADA; text: string; open?: boolean }[] = [],
    ): Promise<string> {
      const session = await s.sessions.openSession({
        key: key(threadId),
        binding: 'team-a/support',
        now: at,
      });
      let n = 0;
      for (const t of turns) {
        n += 1;
        await s.sessions.addTurn(
          queuedTurn({
            id: `${threadId}-t${n}`,
            sessionId: session.id,
            chatMessageId: `${threadId}.${n}`,
            text: t.text,
            label: labelOf(t.by),
            metadata: { [ACTOR_METADATA_KEY]: { id: t.by.id, name: t.by.name, email: t.by.email } },
            state: t.open === true ? 'queued' : 'settled',
            now: at,
          }),
        );
      }
      return session.id;
    }

    /** The answer to a turn ends: the turn is settled, as the engine writes it. */
    async function settle(turnId: string, now: number): Promise<void> {
      const turn = await s.sessions.getTurn(turnId);
      if (turn === undefined) throw new Error(`no turn ${turnId}`);
      await s.sessions.commit({ turns: [{ ...turn, state: 'settled', outcome: 'completed' }], now });
    }

    it('forgets a thread idle since before the cut, with its turns and feedback, and marks it forgotten', async () => {
      const old = await thread('1.1', T0, [{ by: ADA, text: 'an old question' }]);
      const recent = await thread('2.2', T0 + 40 * DAY, [{ by: ADA, text: 'a recent one' }]);
      await s.feedback.press({
        sessionId: old,
        turnId: '1.1-t1',
        taskId: null,
        actorId: ADA.id,
        value: 'positive',
        now: T0,
      });
      const now = T0 + 45 * DAY;
      const gone = await s.retention.forgetIdleThreads(T0 + 30 * DAY, 100, now);
      expect(gone).toEqual({ threads: 1, turns: 1, feedback: 1 });
      expect(await s.sessions.getSession(old)).toBeUndefined();
      expect(await s.sessions.getTurn('1.1-t1')).toBeUndefined();
      expect(await s.sessions.getSession(recent)).toBeDefined();
      expect(await s.retention.forgottenAt(old)).toBe(now);
      expect(await s.retention.forgottenAt(recent)).toBeUndefined();
      // Opened again: a new session of the same thread, whose lease is a first take again.
      const again = await s.sessions.openSession({ key: key('1.1'), binding: 'team-a/support', now });
      expect(await s.sessions.openTurns(again.id)).toEqual([]);
      expect(await s.sessions.acquireLease(again.id, 'me', now, 60_000)).toBe('first');
      await s.retention.clearForgotten(old);
      expect(await s.retention.forgottenAt(old)).toBeUndefined();
    });

    it('keeps an old thread with anything in flight: a turn not settled, or one written since the cut', async () => {
      const waiting = await thread('3.3', T0, [{ by: ADA, text: 'still queued', open: true }]);
      const touched = await thread('4.4', T0, [{ by: ADA, text: 'old' }]);
      await s.sessions.addTurn(
        queuedTurn({
          id: 'late',
          sessionId: touched,
          chatMessageId: '4.4.9',
          text: 'a late reply',
          state: 'settled',
          now: T0 + 35 * DAY,
        }),
      );
      const gone = await s.retention.forgetIdleThreads(T0 + 30 * DAY, 100, T0 + 45 * DAY);
      expect(gone.threads).toBe(0);
      expect(await s.sessions.getSession(waiting)).toBeDefined();
      expect(await s.sessions.getSession(touched)).toBeDefined();
    });

    it('forgets in batches of at most the limit, oldest first', async () => {
      const first = await thread('5.1', T0);
      const second = await thread('5.2', T0 + DAY);
      const third = await thread('5.3', T0 + 2 * DAY);
      const cut = T0 + 30 * DAY;
      expect((await s.retention.forgetIdleThreads(cut, 2, cut)).threads).toBe(2);
      expect(await s.sessions.getSession(first)).toBeUndefined();
      expect(await s.sessions.getSession(second)).toBeUndefined();
      expect(await s.sessions.getSession(third)).toBeDefined();
      expect((await s.retention.forgetIdleThreads(cut, 2, cut)).threads).toBe(1);
      expect((await s.retention.forgetIdleThreads(cut, 2, cut)).threads).toBe(0);
    });

    it('drops forgotten marks older than asked', async () => {
      const id = await thread('6.6', T0);
      await s.retention.forgetIdleThreads(T0 + DAY, 10, T0 + 2 * DAY);
      expect(await s.retention.pruneForgotten(T0 + 2 * DAY)).toBe(0);
      expect(await s.retention.pruneForgotten(T0 + 3 * DAY)).toBe(1);
      expect(await s.retention.forgottenAt(id)).toBeUndefined();
    });

    it('forgets web chat threads last written before the cut, with their messages', async () => {
      const scope = { surface: 'webchat', workspaceId: 'local' };
      const threadOf = (threadId: string, updatedAt: number) => ({
        threadId,
        binding: 'default/demo',
        title: threadId,
        createdAt: T0,
        updatedAt,
      });
      await s.transcripts.saveTranscript({
        scope,
        threads: [threadOf('old', T0), threadOf('new', T0 + 40 * DAY)],
        messages: [
          { threadId: 'old', seq: 1, body: '{"text":"hi"}', updatedAt: T0 },
          { threadId: 'new', seq: 1, body: '{"text":"hello"}', updatedAt: T0 + 40 * DAY },
        ],
        keepPerThread: 500,
      });
      expect(await s.retention.forgetIdleTranscripts(T0 + 30 * DAY, 10)).toBe(1);
      const left = await s.transcripts.loadTranscripts(scope, { threads: 10, messagesPerThread: 10 });
      expect(left.map((t) => t.thread.threadId)).toEqual(['new']);
    });

    it("erases a person: the threads they started entirely, their words in others' threads, their feedback", async () => {
      const hers = await thread('7.1', T0, [
        { by: ADA, text: 'my own thread' },
        { by: BOB, text: 'Bob answers in it' },
      ]);
      const his = await thread('7.2', T0, [
        { by: BOB, text: 'Bob starts' },
        { by: ADA, text: 'Ada replies in his thread' },
        { by: BOB, text: `his words\n\n${labelOf(ADA)}\na reply of hers he carried` },
      ]);
      await s.feedback.press({
        sessionId: his,
        turnId: '7.2-t1',
        taskId: null,
        actorId: ADA.id,
        value: 'negative',
        now: T0,
      });
      for (const person of [ADA, BOB])
        await s.links.put({
          subject: `slack:T1:${person.id}`,
          provider: 'https://idp.example x',
          personId: person.id,
          email: person.email,
          keyId: 'k1',
          sealed: 'v1.k1.sealed',
          linkedAt: T0,
          updatedAt: T0,
        });
      const erased = await s.retention.erasePerson({ userId: ADA.id }, T0);
      expect(erased).toEqual({ threads: 1, turns: 2, feedback: 1, wordsCleared: 2, links: 1, waiting: 0 });
      expect(await s.retention.pendingErasures()).toEqual([]);
      expect(await s.links.get('slack:T1:U0ADA', 'https://idp.example x')).toBeUndefined();
      expect(await s.links.get('slack:T1:U0BOB', 'https://idp.example x')).toBeDefined();
      expect(await s.sessions.getSession(hers)).toBeUndefined();
      expect(await s.retention.forgottenAt(hers)).toBeUndefined();
      expect((await s.sessions.getTurn('7.2-t1'))?.text).toBe('Bob starts');
      for (const id of ['7.2-t2', '7.2-t3']) {
        const turn = await s.sessions.getTurn(id);
        expect(turn?.text).toBe('');
        expect(turn?.label).toBeNull();
        expect(turn?.metadata).toBeNull();
        expect(turn?.state).toBe('settled');
      }
      // Nothing of hers is left to find, by id or by email.
      expect(await s.retention.erasePerson({ userId: ADA.id }, T0)).toEqual({
        threads: 0,
        turns: 0,
        feedback: 0,
        wordsCleared: 0,
        links: 0,
        waiting: 0,
      });
      expect((await s.retention.erasePerson({ email: 'ADA@example.com' }, T0)).wordsCleared).toBe(0);
    });

    it('erases by email, whatever its case', async () => {
      const his = await thread('8.1', T0, [
        { by: BOB, text: 'Bob starts' },
        { by: ADA, text: 'Ada replies' },
      ]);
      await s.links.put({
        subject: 'slack:T1:U0ADA',
        provider: 'https://idp.example x',
        personId: ADA.id,
        email: 'ADA@example.com',
        keyId: 'k1',
        sealed: 'v1.k1.sealed',
        linkedAt: T0,
        updatedAt: T0,
      });
      expect(await s.retention.erasePerson({ email: 'Ada@Example.com' }, T0)).toEqual({
        threads: 0,
        turns: 0,
        feedback: 0,
        wordsCleared: 1,
        links: 1,
        waiting: 0,
      });
      expect((await s.sessions.getTurn('8.1-t2'))?.text).toBe('');
      expect(await s.sessions.getSession(his)).toBeDefined();
    });

    it('leaves what is still answering, keeps the erasure, and finishes it once the answer has ended', async () => {
      // Her thread, its answer under way; his thread, where a reply of hers waits to be sent.
      const hers = await thread('11.1', T0, [{ by: ADA, text: 'my question, being answered', open: true }]);
      await thread('11.2', T0, [
        { by: BOB, text: 'Bob starts' },
        { by: ADA, text: 'Ada replied, settled' },
        { by: ADA, text: 'Ada replies again, queued', open: true },
      ]);
      const first = await s.retention.erasePerson({ userId: ADA.id }, T0 + 5);
      expect(first).toMatchObject({ threads: 0, wordsCleared: 1, waiting: 2 });
      expect((await s.sessions.getTurn('11.1-t1'))?.text).toBe('my question, being answered');
      expect((await s.sessions.getTurn('11.2-t2'))?.text).toBe('');
      expect((await s.sessions.getTurn('11.2-t3'))?.text).toBe('Ada replies again, queued');
      expect(await s.retention.pendingErasures()).toEqual([{ userId: ADA.id }]);
      // Asked again before the answers end: still one kept erasure, nothing more gone.
      expect((await s.retention.erasePerson({ userId: ADA.id }, T0 + 6)).waiting).toBe(2);
      expect(await s.retention.pendingErasures()).toEqual([{ userId: ADA.id }]);

      // Her answer ends; his thread's queued turn is still in flight.
      await settle('11.1-t1', T0 + 10);
      expect(await s.retention.erasePerson({ userId: ADA.id }, T0 + 11)).toMatchObject({
        threads: 1,
        turns: 1,
        waiting: 1,
      });
      expect(await s.sessions.getSession(hers)).toBeUndefined();
      await settle('11.2-t3', T0 + 12);
      expect(await s.retention.erasePerson({ userId: ADA.id }, T0 + 13)).toMatchObject({
        wordsCleared: 1,
        waiting: 0,
      });
      expect((await s.sessions.getTurn('11.2-t3'))?.text).toBe('');
      expect((await s.sessions.getTurn('11.2-t1'))?.text).toBe('Bob starts');
      expect(await s.retention.pendingErasures()).toEqual([]);
    });

    it('keeps an erasure by email as the person was named, in lower case', async () => {
      await thread('12.1', T0, [{ by: ADA, text: 'still answering', open: true }]);
      expect((await s.retention.erasePerson({ email: 'Ada@Example.COM' }, T0)).waiting).toBe(1);
      expect(await s.retention.pendingErasures()).toEqual([{ email: 'ada@example.com' }]);
    });

    it('clears the words of settled turns written before the cut, in batches; keeps ids, states and open turns', async () => {
      const id = await thread('10.1', T0, [
        { by: ADA, text: 'settled words one' },
        { by: ADA, text: 'settled words two' },
        { by: ADA, text: 'still waiting', open: true },
      ]);
      await thread('10.2', T0 + 2 * DAY, [{ by: ADA, text: 'too recent to clear' }]);
      expect(await s.retention.clearSettledWords(T0 + DAY, 1)).toBe(1);
      expect(await s.retention.clearSettledWords(T0 + DAY, 10)).toBe(1);
      expect(await s.retention.clearSettledWords(T0 + DAY, 10)).toBe(0);
      for (const t of ['10.1-t1', '10.1-t2']) {
        const turn = await s.sessions.getTurn(t);
        expect(turn).toMatchObject({
          text: '',
          label: null,
          metadata: null,
          state: 'settled',
          chatMessageId: `10.1.${t.at(-1)}`,
        });
      }
      expect((await s.sessions.getTurn('10.1-t3'))?.text).toBe('still waiting');
      expect((await s.sessions.getTurn('10.2-t1'))?.text).toBe('too recent to clear');
      expect(await s.sessions.getSession(id)).toBeDefined();
    });

    it('says how many threads it holds and how many bytes the store takes', async () => {
      await thread('9.1', T0);
      await thread('9.2', T0);
      const size = await s.retention.size();
      expect(size.threads).toBe(2);
      expect(size.bytes).toBeGreaterThan(0);
    });
  });
}

/** The sign-in link store, on each database. */
export function identityLinkContract(name: string, open: () => Promise<OpenedRetention>): void {
  describe(`IdentityLinkStore contract: ${name}`, () => {
    let s: OpenedRetention;
    beforeEach(async () => {
      s = await open();
      await s.sessions.migrate();
    });
    afterEach(async () => {
      await s.sessions.close();
    });

    it('keeps one link per person and provider: a put again replaces it, remove takes one or all', async () => {
      const link = {
        subject: 'slack:T1:U0ADA',
        provider: 'https://idp.example agentkourier',
        personId: 'U0ADA',
        email: 'ada@example.com',
        keyId: 'k1',
        sealed: 'v1.k1.first',
        linkedAt: T0,
        updatedAt: T0,
      };
      expect(await s.links.get(link.subject, link.provider)).toBeUndefined();
      await s.links.put(link);
      await s.links.put({ ...link, keyId: 'k2', sealed: 'v1.k2.second', updatedAt: T0 + 1 });
      await s.links.put({ ...link, provider: 'https://other.example agentkourier' });
      expect(await s.links.get(link.subject, link.provider)).toEqual({
        ...link,
        keyId: 'k2',
        sealed: 'v1.k2.second',
        updatedAt: T0 + 1,
      });
      expect(await s.links.remove(link.subject, link.provider)).toBe(1);
      expect(await s.links.get(link.subject, link.provider)).toBeUndefined();
      expect(await s.links.get(link.subject, 'https://other.example agentkourier')).toBeDefined();
      expect(await s.links.remove(link.subject)).toBe(1);
      expect(await s.links.remove(link.subject)).toBe(0);
    });
  });
}
