import { describe, expect, it } from 'vitest';
import type { ArtifactUpdateEvent, Part } from './agent/model.js';
import { AnswerBuffer } from './answer.js';

function update(artifactId: string, parts: Part[], append = false): ArtifactUpdateEvent {
  return {
    kind: 'artifact-update',
    taskId: 't',
    contextId: 'c',
    artifact: { artifactId, parts },
    append,
    lastChunk: false,
  };
}
const text = (t: string): Part => ({ kind: 'text', text: t });

describe('AnswerBuffer', () => {
  it('[R-9] appends with append: true and replaces otherwise, per artifact', () => {
    const answer = new AnswerBuffer();
    answer.apply(update('a', [text('Hel')]));
    answer.apply(update('a', [text('lo')], true));
    answer.apply(update('b', [text(' world')]));
    expect(answer.text()).toBe('Hello world');
    answer.apply(update('a', [text('Bye')]));
    expect(answer.text()).toBe('Bye world');
    expect(answer.length).toBe('Bye world'.length);
  });

  it('[R-9] shows no file or data parts and does not read lastChunk', () => {
    const answer = new AnswerBuffer();
    answer.apply(
      update('a', [text('x'), { kind: 'file', uri: 'https://f' }, { kind: 'data', data: { secret: 1 } }]),
    );
    answer.apply({ ...update('a', [text('y')], true), lastChunk: true });
    answer.apply(update('a', [text('z')], true));
    expect(answer.text()).toBe('xyz');
  });

  it('[R-4] replaces everything from a task snapshot, but an empty snapshot keeps the text', () => {
    const answer = new AnswerBuffer();
    answer.apply(update('a', [text('partial')]));
    expect(answer.replaceAll([])).toBe(false);
    expect(answer.text()).toBe('partial');
    expect(answer.replaceAll([{ artifactId: 'a', parts: [text('partial and complete')] }])).toBe(true);
    expect(answer.text()).toBe('partial and complete');
  });

  it('shows only what an answer adds to a paused task, not what the question turn showed', () => {
    const answer = new AnswerBuffer();
    answer.setBaseline([{ artifactId: 'asking', parts: [text('I need your name.')] }]);
    answer.replaceAll([{ artifactId: 'asking', parts: [text('I need your name.')] }]);
    expect(answer.text()).toBe('');
    expect(answer.length).toBe(0);
    answer.apply(update('asking', [text(' Thanks, Ada.')], true));
    answer.apply(update('reply', [text(' Done.')]));
    expect(answer.text()).toBe(' Thanks, Ada. Done.');
    answer.apply(update('asking', [text('Rewritten')]));
    expect(answer.text()).toBe('Rewritten Done.');
  });

  it('counts versions only on real changes', () => {
    const answer = new AnswerBuffer();
    answer.apply(update('a', [text('a')]));
    const v = answer.version;
    answer.apply(update('a', [], true));
    expect(answer.version).toBe(v);
    answer.apply(update('a', [text('b')], true));
    expect(answer.version).toBe(v + 1);
  });

  it('keeps a long answer exact when read now and then while it grows', () => {
    const answer = new AnswerBuffer();
    for (let i = 0; i < 100_000; i++) {
      answer.apply(update('a', [text('word ')], i > 0));
      if (i % 1000 === 0) answer.text();
    }
    expect(answer.text().length).toBe(500_000);
  });

  it('keeps every chunk in its place as appends are joined into blocks, read or not, across artifacts', () => {
    const answer = new AnswerBuffer();
    const model = new Map<string, string>();
    const apply = (id: string, chunk: string, append: boolean) => {
      answer.apply(update(id, [text(chunk)], append));
      model.set(id, append ? (model.get(id) ?? '') + chunk : chunk);
    };
    const expected = () => [...model.values()].join('');
    for (let i = 0; i < 300; i++) {
      // Two artifacts interleaved, distinct chunks, reads at uneven points, between blocks too.
      apply(i % 3 === 0 ? 'b' : 'a', `${i};`, i > 1);
      if (i % 37 === 0) expect(answer.text()).toBe(expected());
      expect(answer.length).toBe(expected().length);
      if (i === 150) {
        // A task read again mid-stream, grown: only its end is new.
        const grown = `${model.get('a')}grown;`;
        // (In the order they are held: a task that lists them otherwise reorders them.)
        answer.replaceAll([
          { artifactId: 'b', parts: [text(model.get('b') ?? '')] },
          { artifactId: 'a', parts: [text(grown)] },
        ]);
        model.set('a', grown);
      }
      if (i === 200) apply('b', 'replaced;', false);
    }
    expect(answer.text()).toBe(expected());
  });

  it('[P-3] reads a task again: grown artifacts show their whole text, rewritten, shorter or reordered ones are replaced', () => {
    const answer = new AnswerBuffer();
    const task = (...artifacts: Array<[string, string]>) =>
      artifacts.map(([artifactId, t]) => ({ artifactId, parts: [text(t)] }));
    expect(answer.replaceAll(task(['a', 'one ']))).toBe(true);
    const v1 = answer.version;
    expect(answer.replaceAll(task(['a', 'one ']))).toBe(false);
    expect(answer.version).toBe(v1);
    expect(answer.replaceAll(task(['a', 'one two ']))).toBe(true);
    expect(answer.replaceAll(task(['a', 'one two three'], ['b', '!']))).toBe(true);
    expect(answer.text()).toBe('one two three!');
    expect(answer.length).toBe('one two three!'.length);
    // Rewritten, not grown: replaced as a whole.
    expect(answer.replaceAll(task(['a', 'ONE two three'], ['b', '!']))).toBe(true);
    expect(answer.text()).toBe('ONE two three!');
    // Shorter: replaced.
    expect(answer.replaceAll(task(['a', 'ONE'], ['b', '!']))).toBe(true);
    expect(answer.text()).toBe('ONE!');
    // The same artifacts in another order.
    expect(answer.replaceAll(task(['b', '!'], ['a', 'ONE']))).toBe(true);
    expect(answer.text()).toBe('!ONE');
    // A read that lists no artifacts says nothing.
    expect(answer.replaceAll([])).toBe(false);
    expect(answer.text()).toBe('!ONE');
  });

  it('[R-9] appends to an artifact as a task read left it: rewritten, replaced by another, or grown', () => {
    const answer = new AnswerBuffer();
    const task = (...artifacts: Array<[string, string]>) =>
      artifacts.map(([artifactId, t]) => ({ artifactId, parts: [text(t)] }));
    answer.apply(update('a', [text('Hel')]));
    answer.apply(update('a', [text('lo')], true));
    // The read rewrote the artifact the last update went to: later chunks add to the new text.
    answer.replaceAll(task(['a', 'Rewritten']));
    answer.apply(update('a', [text('!')], true));
    expect(answer.text()).toBe('Rewritten!');
    // A read that dropped it: an append to it starts it again, after what the read holds.
    answer.replaceAll(task(['b', 'Other']));
    answer.apply(update('a', [text('again')], true));
    expect(answer.text()).toBe('Otheragain');
    // A read that grew it keeps the same entry: appends go on after the grown text.
    answer.replaceAll(task(['b', 'Other'], ['a', 'again and more']));
    answer.apply(update('a', [text('.')], true));
    expect(answer.text()).toBe('Otheragain and more.');
    expect(answer.length).toBe('Otheragain and more.'.length);
  });

  it('[R-4] compares a streamed answer of many chunks with the final Task: the same, grown, or rewritten', () => {
    const chunks = Array.from({ length: 50 }, (_, i) => `token ${i}, `);
    const streamed = (): AnswerBuffer => {
      const answer = new AnswerBuffer();
      chunks.forEach((chunk, i) => {
        answer.apply(update('a', [text(chunk)], i > 0));
      });
      return answer;
    };
    const whole = chunks.join('');
    // The final Task holds what was streamed: nothing changes, the surface is not told again.
    const same = streamed();
    const version = same.version;
    expect(same.replaceAll([{ artifactId: 'a', parts: [text(whole)] }])).toBe(false);
    expect(same.version).toBe(version);
    expect(same.text()).toBe(whole);
    // Then more of it streams: appended after what was held.
    same.apply(update('a', [text('and more')], true));
    expect(same.text()).toBe(`${whole}and more`);
    // It holds more than was streamed: only the rest is added.
    const grown = streamed();
    expect(grown.replaceAll([{ artifactId: 'a', parts: [text(`${whole}the end`)] }])).toBe(true);
    expect(grown.text()).toBe(`${whole}the end`);
    expect(grown.length).toBe(whole.length + 'the end'.length);
    // A chunk in the middle differs: the Task's text replaces the streamed one.
    const rewritten = streamed();
    const other = whole.replace('token 25,', 'TOKEN 25,');
    expect(rewritten.replaceAll([{ artifactId: 'a', parts: [text(other)] }])).toBe(true);
    expect(rewritten.text()).toBe(other);
  });
});
