import type { RecordedCall } from '../testkit/slack/index.js';

/**
 * How far the text a thread shows in Slack is behind the text the agent has written
 * (bench/freshness.ts), computed after the run from two records kept on one clock (Date.now in
 * the bench's parent process):
 *
 * - the agent's timeline: E(k), the time the agent had written the first k characters of its
 *   answer (the time the token holding character k left it; E(0) is its first token's time);
 * - what Slack shows: V(t), the answer message's text after the last call Slack accepted at or
 *   before t (a post or stream start sets it, an edit replaces it, an append or stop adds to it);
 *   empty before the first.
 *
 * The lag at t is t − E(|V(t)|), read only over the prefix V(t) shares with the agent's text. It
 * is sampled every `stepMs` from the agent's first token until the moment Slack shows the whole
 * answer (or its last accepted call, if it never does), so the catch-up after the agent's last
 * token counts, and a thread that is shown nothing for long counts all along.
 */

export interface Shown {
  at: number;
  text: string;
}

/** The thread's answer message, as each accepted call left it, in order. */
export function shownTimeline(
  calls: readonly RecordedCall[],
  channel: string,
  root: string,
  answerTs: string,
): Shown[] {
  const out: Shown[] = [];
  let text = '';
  for (const call of calls) {
    if (!call.ok || call.args.channel !== channel) continue;
    const a = call.args;
    const markdown = typeof a.markdown_text === 'string' ? a.markdown_text : '';
    switch (call.method) {
      case 'chat.postMessage':
        if (a.thread_ts !== root) continue;
        text = typeof a.text === 'string' ? a.text : '';
        break;
      case 'chat.startStream':
        if (a.thread_ts !== root) continue;
        text = markdown;
        break;
      case 'chat.appendStream':
      case 'chat.stopStream':
        if (a.ts !== answerTs) continue;
        text += markdown;
        break;
      case 'chat.update':
        if (a.ts !== answerTs) continue;
        text = typeof a.text === 'string' ? a.text : '';
        break;
      default:
        continue;
    }
    out.push({ at: call.at, text });
  }
  return out;
}

export interface ThreadLag {
  /** Lag samples, seconds. */
  samples: number[];
  mean: number;
  /** Shown texts that were not a prefix of the agent's text (a garbled answer). */
  notPrefix: number;
  /** When Slack first showed the whole answer (undefined: never). */
  completeAt: number | undefined;
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * @param tokens the agent's tokens in order
 * @param emittedAt when each token left the agent
 * @param whole the text the thread must end with (the answer, trimmed as the broker shows it)
 */
export function threadLag(
  tokens: readonly string[],
  emittedAt: readonly number[],
  shown: readonly Shown[],
  whole: string,
  stepMs = 100,
): ThreadLag {
  const full = tokens.join('');
  // ends[j]: characters written once token j is out.
  const ends: number[] = [];
  let total = 0;
  for (const t of tokens) {
    total += t.length;
    ends.push(total);
  }
  const first = emittedAt[0] ?? 0;
  const written = (k: number): number => {
    if (k === 0) return first;
    let lo = 0;
    let hi = ends.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((ends[mid] as number) >= k) hi = mid;
      else lo = mid + 1;
    }
    return emittedAt[lo] ?? first;
  };
  let notPrefix = 0;
  const lengths = shown.map((s) => {
    const k = commonPrefix(s.text, full);
    if (k !== s.text.length) notPrefix++;
    return k;
  });
  const complete = shown.findIndex((s) => s.text === whole);
  const completeAt = complete === -1 ? undefined : (shown[complete] as Shown).at;
  const end = completeAt ?? shown.at(-1)?.at ?? first;
  const samples: number[] = [];
  let i = -1;
  for (let t = first; t <= end; t += stepMs) {
    while (i + 1 < shown.length && (shown[i + 1] as Shown).at <= t) i++;
    const k = i === -1 ? 0 : (lengths[i] as number);
    samples.push(Math.max(0, t - written(k)) / 1000);
  }
  const mean = samples.length === 0 ? 0 : samples.reduce((a, b) => a + b, 0) / samples.length;
  return { samples, mean, notPrefix, completeAt };
}

/** The q-quantile (0–1) of `xs`, nearest rank. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}
