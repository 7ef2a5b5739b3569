import { afterEach, describe, expect, it } from 'vitest';
import type { MessageView, ThreadSummary, ThreadView } from '../../src/surfaces/webchat/index.js';
import { held, kagentApproval, script } from '../peers/contract-agent/contract-agent.js';
import { ADA, CHANNEL, type SlackHarness, startSlackHarness } from '../surfaces/slack/e2e-harness.js';
import { BINDING, startWebChatHarness, type WebChatHarness } from '../surfaces/webchat/harness.js';

/**
 * A person's stop against what races it, in the web chat over real HTTP with the real engine,
 * and in Slack through the real Bolt app (the fake Web API behind it):
 *
 * - A decision pressed while the stop's CancelTask is on its way. The probe found it accepted
 *   (202) and then sent, after the task was cancelled, as a new message in the context with no
 *   task id. Now the stop closes the question before it asks the agent, the decision is refused
 *   (409 question_closed), and nothing of it is ever sent. The CancelTask is held open by the
 *   agent until the decision has been answered, so the race is the same on every run.
 * - An agent that answers the cancel with `canceled` but keeps its stream open and silent. The
 *   probe found the thread held until the stream's idle bound. Now the cancel's answer settles
 *   the turn and the stream is left at once. The client's idle bound here is far beyond the
 *   test's wait, so only the cancel's answer can end the turn in time.
 * - Artifact text an agent sends after its terminal status, in the grace before its stream
 *   closes, is not appended to the answer, even when the agent's record of the task keeps it.
 */

const SEND = 'SendStreamingMessage';
const CANCEL = 'CancelTask';

const APPROVAL = {
  type: 'tool_approval_request',
  hint: 'One tool needs approval.',
  tools: [{ id: 'conf-1', call_id: 'call-a', name: 'delete_file', args: { path: '/srv/data' } }],
  nested: null,
};

let h: WebChatHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function harness(options: Parameters<typeof startWebChatHarness>[0] = {}): Promise<WebChatHarness> {
  h = await startWebChatHarness(options);
  return h;
}

async function start(w: WebChatHarness, text: string): Promise<ThreadSummary> {
  const res = await w.api('POST', '/api/threads', { binding: BINDING, text });
  expect(res.status, res.text).toBe(201);
  return (res.json as { thread: ThreadSummary }).thread;
}

function errorCode(json: unknown): string {
  return (json as { error: { code: string } }).error.code;
}

function notices(t: ThreadView): string[] {
  return t.messages.filter((m) => m.kind === 'notice').map((m) => m.text);
}

/** A promise and the function that resolves it: the agent's CancelTask waits on it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('stop means stop (web chat)', () => {
  it('[Q-5][M-4] a decision pressed while the stop cancels the task is refused and never sent', async () => {
    const w = await harness();
    w.agent.enqueueFor(
      SEND,
      script([
        { event: 'task' },
        { event: 'input-required', parts: [{ data: APPROVAL }] },
        { event: 'task' },
      ]),
    );
    const thread = await start(w, 'clean up');
    const asked = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'approval'),
      'the approval',
    );
    const prompt = asked.messages.find((m) => m.kind === 'approval') as MessageView;

    const cancelHeld = gate();
    w.agent.enqueueFor(CANCEL, held(cancelHeld.opened));
    const stop = w.api('POST', `/api/threads/${thread.id}/cancel`);
    await until('the CancelTask to reach the agent', () => w.agent.rpc(CANCEL).length === 1);

    const decided = await w.api('POST', `/api/threads/${thread.id}/messages/${prompt.id}/answer`, {
      decisions: [{ id: 'conf-1', approved: true }],
    });
    expect(decided.status, decided.text).toBe(409);
    expect(errorCode(decided.json)).toBe('question_closed');

    cancelHeld.open();
    const stopped = await stop;
    expect(stopped.json).toMatchObject({ status: 'canceled' });
    const after = await w.waitForThread(
      thread.id,
      (t) => notices(t).some((n) => n.includes('canceled')),
      'the canceled notice',
    );
    await w.engine.idle();
    // One send: the first message. No answer to the task, and nothing in the context after it.
    expect(w.agent.rpc(SEND)).toHaveLength(1);
    expect(after.messages.find((m) => m.id === prompt.id)?.approval?.status).toBe('closed');
    expect(notices(after)).not.toContain(expect.stringContaining('was not sent'));
  });

  it('[Q-5][M-4] a decision taken just before the stop, still waiting to be sent, is not sent after the task is cancelled', async () => {
    const w = await harness();
    w.agent.enqueueFor(
      SEND,
      script([
        { event: 'task' },
        { event: 'input-required', parts: [{ data: APPROVAL }] },
        { event: 'task' },
      ]),
    );
    const thread = await start(w, 'clean up');
    const asked = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'approval'),
      'the approval',
    );
    const prompt = asked.messages.find((m) => m.kind === 'approval') as MessageView;
    // The decision is accepted, and its send waits behind a read of the paused task, held open.
    const readHeld = gate();
    w.agent.enqueueFor('GetTask', held(readHeld.opened));
    const decided = await w.api('POST', `/api/threads/${thread.id}/messages/${prompt.id}/answer`, {
      decisions: [{ id: 'conf-1', approved: true }],
    });
    expect(decided.status, decided.text).toBe(202);
    await until('the read of the paused task', () => w.agent.rpc('GetTask').length === 1);

    const stopped = await w.api('POST', `/api/threads/${thread.id}/cancel`);
    expect(stopped.json).toMatchObject({ status: 'canceled' });
    readHeld.open();
    const after = await w.waitForThread(
      thread.id,
      (t) => notices(t).some((n) => n.includes('was not sent')),
      'the notice that the decision was not sent',
    );
    await w.engine.idle();
    expect(w.agent.rpc(SEND)).toHaveLength(1);
    expect(notices(after)).toEqual(
      expect.arrayContaining([
        "The agent's task was canceled.",
        "An answer to the agent's question was not sent: the task that asked it had ended (stopped or timed out) first.",
      ]),
    );
  });

  it('[M-4][T-4] an agent that acknowledges the cancel but keeps its stream open: the turn settles at once, the partial answer stays, the next message goes', async () => {
    const w = await harness({ streamIdleMs: 120_000 });
    w.agent.enqueueFor(
      SEND,
      script([{ event: 'task' }, { event: 'chunk', text: 'Working on it: step one' }], 'hang'),
    );
    const thread = await start(w, 'a long job');
    await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'answer' && m.text.includes('step one')),
      'the partial answer',
    );
    const stopped = await w.api('POST', `/api/threads/${thread.id}/cancel`);
    expect(stopped.json).toMatchObject({ status: 'canceled' });
    const settled = await w.waitForThread(
      thread.id,
      (t) => notices(t).includes("The agent's task was canceled."),
      'the turn settled by the cancel',
    );
    const answerMessage = settled.messages.find((m) => m.kind === 'answer');
    expect(answerMessage).toMatchObject({ text: 'Working on it: step one', final: true });

    const next = await w.api('POST', `/api/threads/${thread.id}/messages`, { text: 'and now?' });
    expect(next.status, next.text).toBe(202);
    await w.waitForThread(
      thread.id,
      (t) => t.messages.filter((m) => m.kind === 'answer' && m.final === true).length === 2,
      'the next message answered',
    );
    expect(w.agent.rpc(SEND)).toHaveLength(2);
  });

  it('[R-5] artifact text sent after the terminal status is not appended to the answer', async () => {
    const w = await harness();
    // The agent keeps it in its record of the task too, so the task read after the stream has it.
    w.agent.enqueueFor(
      SEND,
      script(
        [
          { event: 'task' },
          { event: 'chunk', text: 'The answer.' },
          { event: 'completed' },
          { event: 'chunk', text: ' And a late postscript.', append: true },
        ],
        'hang',
      ),
    );
    const thread = await start(w, 'hello');
    const done = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'answer' && m.final === true),
      'the final answer',
    );
    expect(done.messages.find((m) => m.kind === 'answer')?.text).toBe('The answer.');
  });
});

describe('stop means stop (Slack)', () => {
  const GROUP = 'S0APPROVERS';
  const BOB = 'U0BOB';
  let slack: SlackHarness | undefined;
  afterEach(async () => {
    await slack?.close();
    slack = undefined;
  });

  it('[Q-5][M-4] Stop and Approve pressed together: the approval is refused and nothing is sent after the cancel', async () => {
    const s = await startSlackHarness({
      dialect: 'kagent-v1',
      toolApprovals: { enabled: true, approverGroups: [GROUP], approvers: [] },
      budgets: { 'chat.postMessage': { scope: 'channel', perMinute: 600, burst: 50 } },
    });
    slack = s;
    s.fake.addUser({ id: BOB, name: 'bob', realName: 'Bob Builder' });
    s.fake.addUserGroup(GROUP, [ADA, BOB]);
    // The agent pauses only once Ada has pressed Stop: Slack shows the button while the session
    // processes, and delivers the press after the approval is up.
    const pause = gate();
    s.agent.enqueueFor(
      SEND,
      held(
        pause.opened,
        kagentApproval([
          { id: 'conf-1', callId: 'call_a', name: 'delete_file', args: { path: '/srv/data' } },
          { id: 'conf-2', callId: 'call_b', name: 'restart', args: { name: 'api' } },
        ]),
      ),
    );
    const { ts } = await s.mention('clean up the server');
    await s.waitFor('the session processing', () => s.fake.session(CHANNEL, ts)?.status === 'processing');
    const stopPress = s.fake.pressStop(CHANNEL, ts, ADA);
    pause.open();
    await s.waitFor('the approval', () =>
      s.botMessages(ts).some((m) => s.buttons(CHANNEL, m.ts).some((b) => b.text === 'Approve all')),
    );
    const prompt = s.botMessages(ts).find((m) => s.buttons(CHANNEL, m.ts).length > 0);
    const approveAll = s.buttons(CHANNEL, prompt?.ts ?? '').find((b) => b.text === 'Approve all');
    if (prompt === undefined || approveAll === undefined) throw new Error('no approve-all button');

    const cancelHeld = gate();
    s.agent.enqueueFor(CANCEL, held(cancelHeld.opened));
    const stopped = s.deliver(stopPress);
    await s.waitFor('the CancelTask at the agent', () => s.agent.rpc(CANCEL).length === 1);
    expect((await s.press({ ts: prompt.ts }, approveAll, BOB)).status).toBe(200);
    await s.waitFor('the refusal to Bob', () =>
      s.fake.ephemerals.some((e) => e.user === BOB && e.text.includes('being stopped')),
    );

    cancelHeld.open();
    await stopped;
    await s.waitFor('the canceled notice', () =>
      s.botMessages(ts).some((m) => m.text.includes("The agent's task was canceled.")),
    );
    await s.engine.idle();
    // One send: the mention. No answer to the task, nothing in the context after it.
    expect(s.agent.rpc(SEND)).toHaveLength(1);
    expect(s.agent.kagent.ran).toEqual([]);
    expect(s.logs.filter((l) => l.audit === 'tool-approval')).toEqual([]);
  });
});
