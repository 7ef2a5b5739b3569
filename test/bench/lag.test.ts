import { describe, expect, it } from 'vitest';
import { quantile, shownTimeline, threadLag } from '../../bench/lag.js';
import type { RecordedCall } from '../../testkit/slack/index.js';

const TOKENS = ['aa ', 'bb ', 'cc ', 'dd '];
/** One token a second from t = 0. */
const EMITTED = [0, 1_000, 2_000, 3_000];
const WHOLE = 'aa bb cc dd';

function call(method: string, at: number, args: Record<string, unknown>): RecordedCall {
  return { method, args: { channel: 'C1', ...args }, ok: true, status: 200, at };
}

describe('lag of the shown text behind the agent', () => {
  it('is the time since the agent wrote the prefix shown: nothing shown counts from the first token', () => {
    // Shown whole only at 5 s: until then a sample's lag is its time since the first token; at
    // 5 s the whole answer, written by 3 s, is shown 2 s late.
    const lag = threadLag(TOKENS, EMITTED, [{ at: 5_000, text: WHOLE }], WHOLE, 1_000);
    expect(lag.samples).toEqual([0, 1, 2, 3, 4, 2]);
    expect(lag.completeAt).toBe(5_000);
    expect(lag.notPrefix).toBe(0);
  });

  it('reads a shown prefix by the token that completed it, and stops sampling once the answer is whole', () => {
    // 'aa bb' (token 1, written at 1 s) is shown at 1.5 s; the whole answer at 3.5 s.
    const shown = [
      { at: 1_500, text: 'aa bb' },
      { at: 3_500, text: WHOLE },
    ];
    const lag = threadLag(TOKENS, EMITTED, shown, WHOLE, 500);
    // Samples at 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5 s.
    expect(lag.samples).toEqual([0, 0.5, 1, 0.5, 1, 1.5, 2, 0.5]);
    expect(lag.mean).toBeCloseTo(7 / 8, 12);
  });

  it('counts a shown text that is not a prefix of the agent’s, and reads only the prefix they share', () => {
    const lag = threadLag(TOKENS, EMITTED, [{ at: 2_000, text: 'aa bX' }], WHOLE, 1_000);
    expect(lag.notPrefix).toBe(1);
    expect(lag.completeAt).toBeUndefined();
    // 'aa b' is shared: written with token 1, at 1 s.
    expect(lag.samples).toEqual([0, 1, 1]);
  });
});

describe('the answer message as Slack shows it after each accepted call', () => {
  it('follows a post and its edits, and a stream with its appends and stop, ignoring refusals and other threads', () => {
    const calls = [
      call('chat.postMessage', 1, { thread_ts: 'root', text: 'aa' }),
      call('chat.postMessage', 2, { thread_ts: 'other', text: 'zz' }),
      { ...call('chat.update', 3, { ts: 'ans', text: 'refused' }), ok: false, status: 429 },
      call('chat.update', 4, { ts: 'ans', text: 'aa bb' }),
    ];
    expect(shownTimeline(calls, 'C1', 'root', 'ans')).toEqual([
      { at: 1, text: 'aa' },
      { at: 4, text: 'aa bb' },
    ]);
    const stream = [
      call('chat.startStream', 1, { thread_ts: 'root', markdown_text: 'aa' }),
      call('chat.appendStream', 2, { ts: 'ans', markdown_text: ' bb' }),
      call('chat.stopStream', 3, { ts: 'ans', markdown_text: ' cc' }),
    ];
    expect(shownTimeline(stream, 'C1', 'root', 'ans').map((s) => s.text)).toEqual([
      'aa',
      'aa bb',
      'aa bb cc',
    ]);
  });

  it('takes the nearest-rank quantile', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(xs, 0.5)).toBe(50);
    expect(quantile(xs, 0.99)).toBe(99);
  });
});
