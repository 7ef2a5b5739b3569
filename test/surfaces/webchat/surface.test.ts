import { describe, expect, it } from 'vitest';
import type { AnswerView } from '../../../src/core/answer.js';
import type { ChatTarget } from '../../../src/core/ports.js';
import { formOf } from '../../../src/dialects/kagent-v1/index.js';
import { type ThreadEvent, WebChatSurface } from '../../../src/surfaces/webchat/index.js';
import { readStructured } from '../../../src/surfaces/webchat/structured.js';

const target: ChatTarget = {
  sessionId: 's1',
  key: { surface: 'webchat', workspaceId: 'local', channelId: 'team-a/support', threadId: 't-1' },
};

/** An answer that grows by one chunk per update, as the engine's AnswerBuffer does. */
class GrowingAnswer implements AnswerView {
  #chunks: string[] = [];
  version = 0;
  joins = 0;
  get length(): number {
    return this.#chunks.reduce((n, c) => n + c.length, 0);
  }
  add(chunk: string): void {
    this.#chunks.push(chunk);
    this.version++;
  }
  text(): string {
    this.joins++;
    return this.#chunks.join('');
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('WebChatSurface', () => {
  it('coalesces answer updates to at most one per interval and shows the exact final text', async () => {
    const surface = new WebChatSurface({ answerIntervalMs: 100 });
    const events: ThreadEvent[] = [];
    surface.threads.forKey(target.key).subscribe((e) => events.push(e));
    const refs: string[] = [];
    const sink = surface.openAnswer(target, 'turn-1', null, (ref) => refs.push(ref));
    const view = new GrowingAnswer();
    const started = Date.now();
    // 3,000 chunks over ~300 ms: the engine calls update for every one.
    for (let i = 0; i < 30; i++) {
      for (let j = 0; j < 100; j++) {
        view.add(`${i}.${j} `);
        sink.update(view);
      }
      await sleep(10);
    }
    const elapsed = Date.now() - started;
    await sink.finish(view);
    const shown = events.filter((e) => e.event !== 'snapshot');
    // The text is joined ≤ 10 times per second while streaming (+1 leading edge), plus the final.
    expect(view.joins).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 2);
    expect(view.joins).toBeGreaterThanOrEqual(2);
    // One event per join, plus the one that added the message.
    expect(shown.length).toBe(view.joins + 1);
    const message = surface.threads.get('t-1')?.view().messages[0];
    expect(message).toMatchObject({ author: 'agent', kind: 'answer', final: true, turnId: 'turn-1' });
    expect(message?.text).toBe(view.text());
    expect(refs).toEqual([message?.id]);
  });

  it('keeps growing the same message when the engine hands back its ref', async () => {
    const surface = new WebChatSurface({ answerIntervalMs: 10 });
    const view = new GrowingAnswer();
    view.add('first');
    let ref = '';
    await surface
      .openAnswer(target, 'turn-1', null, (r) => {
        ref = r;
      })
      .finish(view);
    view.add(' and more');
    await surface.openAnswer(target, 'turn-1', ref, () => undefined).finish(view);
    const messages = surface.threads.get('t-1')?.view().messages ?? [];
    expect(messages.map((m) => m.text)).toEqual(['first and more']);
  });

  it('shows nothing for an empty answer that never grew', async () => {
    const surface = new WebChatSurface();
    await surface.openAnswer(target, 'turn-1', null, () => undefined).finish(new GrowingAnswer());
    expect(surface.threads.get('t-1')?.view().messages ?? []).toEqual([]);
  });

  it('keeps notices, questions and tool steps in order, and closes prompts a newer one replaces', async () => {
    const surface = new WebChatSurface();
    await surface.showToolStep(target, 'turn-1', {
      kind: 'call',
      toolName: 'get_pods',
      summary: '{"ns":"a"}',
    });
    const first = await surface.askQuestion(target, {
      binding: 'team-a/support',
      turnId: 'turn-1',
      taskId: 'task-1',
      question: { kind: 'text', text: 'Which namespace?', key: 'q1', choices: ['a', 'b'] },
    });
    await surface.askQuestion(target, {
      binding: 'team-a/support',
      turnId: 'turn-2',
      taskId: 'task-1',
      question: { kind: 'text', text: 'Sure?', key: 'q2' },
    });
    await surface.postNotice(target, { kind: 'question-timeout', text: 'No answer came in time.' });
    const messages = surface.threads.get('t-1')?.view().messages ?? [];
    expect(messages.map((m) => [m.author, m.kind, m.question?.status ?? null])).toEqual([
      ['agent', 'tool-step', null],
      ['agent', 'question', 'closed'],
      ['agent', 'question', 'expired'],
      ['broker', 'notice', null],
    ]);
    expect(messages[0]?.text).toBe('Calling get_pods: {"ns":"a"}');
    expect(messages[1]?.id).toBe(first);
    expect(messages[1]?.question?.choices).toEqual(['a', 'b']);
    expect(messages[3]).toMatchObject({ noticeKind: 'question-timeout', text: 'No answer came in time.' });
  });
});

describe('reading a structured question’s form (as the kagent-v1 dialect makes it)', () => {
  it('shows the deepest nested tool calls (the ones a person actually authorises)', () => {
    const reading = readStructured(
      formOf({
        type: 'tool_approval_request',
        hint: 'Remote agent k8s_agent requires approval',
        tools: [{ id: 'parent-conf-1', call_id: 'p', name: 'k8s_agent', args: { request: '…' } }],
        nested: {
          subagent_name: 'k8s_agent',
          tools: [{ id: 'child-conf-1', call_id: 'c', name: 'delete_pod', args: { name: 'obsolete' } }],
        },
      }),
    );
    expect(reading).toMatchObject({
      kind: 'approval',
      subagent: 'k8s_agent',
      tools: [{ id: 'child-conf-1', name: 'delete_pod' }],
    });
  });

  it('cuts long arguments for display and keeps every tool call', () => {
    const tools = Array.from({ length: 60 }, (_, i) => ({
      id: `c${i}`,
      call_id: `call-${i}`,
      name: 'write',
      args: { body: 'x'.repeat(10_000) },
    }));
    const reading = readStructured(formOf({ type: 'tool_approval_request', tools }));
    if (reading.kind !== 'approval') throw new Error(`read as ${reading.kind}`);
    expect(reading.tools).toHaveLength(60);
    expect(reading.tools[0]?.argsTruncated).toBe(true);
    expect(reading.tools[0]?.args.length).toBeLessThan(4_100);
  });

  it('makes disguising characters visible and keeps choices exactly as the agent wrote them', () => {
    const reading = readStructured({
      kind: 'ask',
      items: [{ question: 'rm\u202Eetad?', choices: ['a\u202Eb', 'c'], multiple: false }],
    });
    expect(reading).toEqual({
      kind: 'ask-user',
      items: [{ question: 'rm\\u202eetad?', choices: ['a\u202Eb', 'c'], multiple: false }],
    });
  });

  it('reads a question without a form as unknown', () => {
    expect(readStructured(undefined)).toEqual({ kind: 'unknown' });
  });
});
