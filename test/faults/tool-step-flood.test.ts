import { afterEach, describe, expect, it } from 'vitest';
import { type Step, script } from '../peers/contract-agent/contract-agent.js';
import { type SlackHarness, startSlackHarness } from '../surfaces/slack/e2e-harness.js';

/**
 * Defect: an agent that sent 3,000 tool steps before its answer held the Slack turn for about
 * an hour. The broker posted one message per tool step, paced by the channel's budget (325 in
 * 6.4 minutes), and the answer waited behind them, with every later message of the thread. Now
 * a turn shows its first few tool cards, then one message that counts the rest, edited now and
 * then without holding the turn; the answer comes at once.
 */

const TOOL_STEPS = 3_000;
const ANSWER = 'Done: the answer after the tool calls.';

describe('a flood of tool steps in a Slack turn', () => {
  let h: SlackHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('shows the answer at once, a few tool cards and one message counting the rest', async () => {
    h = await startSlackHarness();
    const steps: Step[] = [{ event: 'task' }];
    for (let i = 0; i < TOOL_STEPS; i++)
      steps.push({
        event: 'working',
        parts: [{ data: { name: `tool_${i}`, args: { i } }, metadata: { adk_type: 'function_call' } }],
      });
    steps.push({ event: 'chunk', text: ANSWER }, { event: 'completed' }, { event: 'task' });
    h.agent.enqueueFor('SendStreamingMessage', script(steps));

    const started = Date.now();
    const { ts } = await h.mention('go');
    const harness = h;
    // Well under the channel's pace for 3,000 messages (about an hour), and under a minute.
    await h.waitFor(
      'the answer, settled',
      () => harness.botMessages(ts).some((m) => m.text === ANSWER && !m.streaming),
      30_000,
    );
    const answeredAfterMs = Date.now() - started;
    expect(answeredAfterMs).toBeLessThan(30_000);
    await h.settled(1, 30_000);

    const toolCards = h.botMessages(ts).filter((m) => m.text.startsWith('Tool call:'));
    expect(toolCards.length).toBeGreaterThan(0);
    expect(toolCards.length).toBeLessThanOrEqual(10);
    // The rest are counted in one message, brought up to date once the turn is over.
    await h.waitFor(
      'the count of the other tool calls',
      () =>
        harness
          .botMessages(ts)
          .some(
            (m) =>
              m.text === `…and ${(TOOL_STEPS - toolCards.length).toLocaleString('en-US')} more tool calls`,
          ),
      30_000,
    );
    expect(h.botMessages(ts).length).toBe(toolCards.length + 2);
  }, 120_000);
});
