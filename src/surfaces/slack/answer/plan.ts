import { markdownForStream } from './mrkdwn.js';

/**
 * What the next Slack call for an answer is, given the pages the answer should show and the
 * messages that show it now. Pure, so the whole reconciliation is unit-tested without Slack:
 * the answer's worker calls it again after every call (and after every wait), so whatever
 * happened in between — new text, a 429, a stream Slack ended — the next step is computed from
 * the latest text and what Slack really shows.
 */

export interface ShownPage {
  ts: string;
  /** streaming: a native stream is open on it; stopped or posted: an ordinary message. */
  state: 'streaming' | 'stopped' | 'posted';
  /** The page text (Markdown source) the message shows; null when unknown (after a restart). */
  shown: string | null;
}

export type Step =
  | { kind: 'create'; index: number; text: string; stream: boolean }
  | { kind: 'append'; index: number; text: string; delta: string }
  /**
   * `delta` (with the page's `text`): what the stream still lacks, sent with the stop itself
   * (chat.stopStream takes `markdown_text` like an append): one call where an append and a stop
   * would be two, the common case of a short answer that finishes before its next append.
   */
  | { kind: 'stop'; index: number; text?: string; delta?: string }
  | { kind: 'edit'; index: number; text: string }
  | { kind: 'delete'; index: number };

/**
 * @param desired the pages to show, in order (Markdown source, never empty strings)
 * @param final the answer is complete: open streams are stopped, nothing is held back
 * @param canStream a new page may be a native stream
 */
export function nextStep(
  desired: readonly string[],
  pages: readonly ShownPage[],
  final: boolean,
  canStream: boolean,
): Step | null {
  const count = Math.max(desired.length, pages.length);
  for (let index = 0; index < count; index++) {
    const want = desired[index];
    const page = pages[index];
    if (page === undefined) {
      if (want === undefined) return null;
      // Only the open end of an answer streams; a page that is already whole is posted whole.
      const last = index === desired.length - 1;
      return { kind: 'create', index, text: want, stream: canStream && last && !final };
    }
    if (want === undefined) {
      // The answer shrank (an artifact was replaced): surplus messages go, unless we cannot
      // tell what they show, in which case they are left alone rather than destroyed.
      if (page.state === 'streaming') return { kind: 'stop', index };
      if (page.shown === null) continue;
      return { kind: 'delete', index };
    }
    if (page.state === 'streaming') {
      const closed = final || index < desired.length - 1;
      if (page.shown !== null) {
        const shown = markdownForStream(page.shown);
        const wanted = markdownForStream(want);
        if (wanted.length > shown.length && wanted.startsWith(shown)) {
          const delta = wanted.slice(shown.length);
          return closed
            ? { kind: 'stop', index, text: want, delta }
            : { kind: 'append', index, text: want, delta };
        }
        if (wanted === shown) {
          if (closed) return { kind: 'stop', index };
          continue;
        }
      }
      // The text was replaced, or we do not know what the stream shows: stop it, then edit.
      return { kind: 'stop', index };
    }
    if (page.shown !== want) return { kind: 'edit', index, text: want };
  }
  return null;
}
