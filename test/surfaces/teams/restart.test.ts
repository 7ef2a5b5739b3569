import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { answer } from '../../peers/contract-agent/contract-agent.js';
import { startTeamsHarness, type TeamsHarness } from './harness.js';

const SEND = 'SendStreamingMessage';

/**
 * A broker that stops mid-answer and starts again on the same store: the agent is asked once,
 * and the answer ends whole, in the message it was being written in (a channel), or in a new one
 * (a personal chat, whose stream Teams does not let anyone take up again).
 */
describe('Microsoft Teams after a restart mid-answer', () => {
  const open: TeamsHarness[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((h) => h.close()));
  });

  const chunks = Array.from({ length: 16 }, (_, i) => `chunk ${i} `);

  async function crashMidAnswer(where: 'channel' | 'personal') {
    const store = new SqliteStore(':memory:');
    const a = await startTeamsHarness({ store, agentWorksOn: true });
    a.agent.enqueueFor(SEND, answer({ chunks, chunkDelayMs: 300 }));
    const conversation = where === 'channel' ? a.channel : a.personal;
    await a.connector.deliver(
      a.endpoint,
      a.connector.message({ conversation, from: a.ada, text: 'long job' }),
    );
    const bot = () => a.connector.messages(conversation.id).filter((m) => m.from === 'bot');
    await a.waitFor('the answer shown in part', () => bot().some((m) => m.text.includes('chunk 2')));
    await a.close({ keep: true });
    const b = await startTeamsHarness({ store, agent: a.agent, connector: a.connector, entra: a.entra });
    open.push(b);
    return { b, conversationId: conversation.id, bot };
  }

  it('in a channel, edits the message it was writing (its persisted ref) to the whole answer; the agent is asked once', async () => {
    const { b, conversationId, bot } = await crashMidAnswer('channel');
    await b.settled(1, 20_000);
    await b.waitFor('the whole answer', () =>
      bot().some((m) => m.text === chunks.join('').trimEnd() || m.text === chunks.join('')),
    );
    expect(bot()).toHaveLength(1);
    expect(bot()[0]?.attachments).toEqual([]);
    expect(b.agent.rpc(SEND)).toHaveLength(1);
    expect(b.connector.messages(conversationId).filter((m) => m.from === 'bot')).toHaveLength(1);
  });

  it('in a personal chat, ends the answer whole in a new message, the stream left as it was; the agent is asked once', async () => {
    const { b, bot } = await crashMidAnswer('personal');
    await b.settled(1, 20_000);
    await b.waitFor('the whole answer', () =>
      bot().some(
        (m) => m.stream === undefined && m.text.startsWith('chunk 0') && m.text.includes('chunk 15'),
      ),
    );
    const [streamed, whole, ...more] = bot();
    expect(streamed?.stream).toBeDefined();
    expect(streamed?.text).not.toContain('chunk 15');
    expect(whole?.text.trimEnd()).toBe(chunks.join('').trimEnd());
    expect(more).toEqual([]);
    expect(b.agent.rpc(SEND)).toHaveLength(1);
  });
});
