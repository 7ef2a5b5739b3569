import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../src/core/events.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { queuedTurn } from '../../testkit/turns.js';
import { startChatServer } from '../crash/chat-server.js';
import {
  CRASH_TIMINGS,
  crashTurnId,
  killChild as kill,
  startEngineChild as startChild,
} from '../crash/children.js';
import type { ChildConfig } from '../crash/engine-child.js';
import { startHarness, untilEvent } from '../helpers/engine-harness.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { answer } from '../peers/contract-agent/behaviours.js';
import { startContractAgent } from '../peers/contract-agent/contract-agent.js';

// Several replicas on one PostgreSQL: each session is driven by one replica at a time through
// a lease; when a replica dies, another takes its sessions over and follows their tasks.
describe('two replicas on one PostgreSQL', () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => pg.stop());

  it('[M-2][M-3] a replica killed mid-turn: the other takes its sessions over and finishes the turns', async () => {
    const agent = await startContractAgent({
      version: '1.0',
      defaultAnswer: { chunks: Array.from({ length: 10 }, (_, i) => `part ${i} `), chunkDelayMs: 300 },
      workOn: true,
    });
    const chat = await startChatServer();
    const schema = `replicas_${process.pid}`;
    const messages = [0, 1, 2].map((t) => ({ thread: `t${t}`, ts: '1.0', text: `question ${t}` }));
    const base: Omit<ChildConfig, 'owner' | 'messages'> = {
      store: { kind: 'postgres', url: pg.connectionString, schema },
      agentEndpoint: agent.endpoint,
      chatUrl: chat.url,
      binding: 'team-a/replicas',
      // The crash runs' timings, with longer leases and slower scans.
      timings: { ...CRASH_TIMINGS, leaseTtlMs: 1_500, scanIntervalMs: 150 },
    };
    const a = startChild({ ...base, owner: 'replica-a', messages });
    let b: ChildProcess | undefined;
    const reader = new PostgresStore({ connectionString: pg.connectionString, schema });
    try {
      // Kill replica A once every turn is accepted and its answer is streaming.
      const turnIds = messages.map(crashTurnId);
      const until = Date.now() + 20_000;
      for (;;) {
        const turns = await Promise.all(turnIds.map((id) => reader.getTurn(id).catch(() => undefined)));
        if (turns.every((t) => t?.state === 'accepted')) break;
        if (Date.now() > until)
          throw new Error(`replica A never got going: ${JSON.stringify(turns.map((t) => t?.state))}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // Replica B starts while A holds every session's lease: it can take nothing yet.
      b = startChild({ ...base, owner: 'replica-b', messages: [] });
      await quietWindow(
        1_000,
        'B starts and scans several times (150 ms apart) while A holds every lease: it takes none',
      );
      const sendsBeforeKill = agent.rpc('SendStreamingMessage').length;
      await kill(a);
      const deadline = Date.now() + 30_000;
      for (;;) {
        const turns = await Promise.all(turnIds.map((id) => reader.getTurn(id)));
        if (turns.every((t) => t?.state === 'settled')) break;
        if (Date.now() > deadline)
          throw new Error(`replica B did not finish: ${JSON.stringify(turns.map((t) => t?.state))}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await quietWindow(
        400,
        'two scans of replica B (150 ms apart): a settled turn run again would have been sent',
      );
      for (const id of turnIds) {
        expect((await reader.getTurn(id))?.outcome).toBe('completed');
        expect(agent.runs.get(id)).toBe(1);
        const shown = [...chat.answers.values()].filter((x) => x.turnId === id);
        expect(shown).toHaveLength(1);
        expect(shown[0]?.final).toBe(true);
        expect(shown[0]?.text).toBe(Array.from({ length: 10 }, (_, i) => `part ${i} `).join(''));
      }
      // Replica B followed the tasks (GetTask, SubscribeToTask); it sent nothing again.
      expect(agent.rpc('SendStreamingMessage')).toHaveLength(sendsBeforeKill);
      expect(agent.rpc('GetTask').length).toBeGreaterThanOrEqual(3);
    } finally {
      await kill(a);
      if (b !== undefined) await kill(b);
      await reader.close();
      await chat.close();
      await agent.close();
    }
  });

  it('[R-7] a message another replica stores while this one drives the thread is sent when the lease is released, not at a scan', async () => {
    const schema = `replicas_release_${process.pid}`;
    const store = new PostgresStore({ connectionString: pg.connectionString, schema });
    // The other replica: its own store on the same database; it stores the thread's next
    // message, cannot take the lease this engine holds, and so leaves the turn to it.
    const other = new PostgresStore({ connectionString: pg.connectionString, schema });
    const h = await startHarness({
      version: '1.0',
      store,
      owner: 'replica-a',
      // The scan is a minute away: only the lease's release can say the turn came in.
      timings: { scanIntervalMs: 60_000 },
    });
    try {
      h.agent.enqueue(answer({ chunks: ['one ', 'two ', 'three'], chunkDelayMs: 100 }));
      const first = await h.say('t1', '1.0', 'hello');
      await untilEvent(h, (e) => e.type === 'turn.accepted' && e.turnId === first.turnId);
      await other.migrate();
      const { turn } = await other.addTurn(
        queuedTurn({
          id: 'ak-stored-by-replica-b',
          sessionId: first.sessionId,
          chatMessageId: '2.0',
          text: 'and then',
          now: Date.now(),
        }),
      );
      const settled = (id: string) => (e: EngineEvent) => e.type === 'turn.settled' && e.turnId === id;
      expect(await untilEvent(h, settled(first.turnId), 5_000)).toMatchObject({ outcome: 'completed' });
      expect(await untilEvent(h, settled(turn.id), 5_000)).toMatchObject({ outcome: 'completed' });
      await h.engine.idle();
      expect((await store.openTurns(first.sessionId)).length).toBe(0);
    } finally {
      await h.close();
      await other.close();
    }
  });
});
