/**
 * The reference the engine persists for a turn's answer (`onRef`), so that after a restart the
 * surface edits the same messages instead of posting the answer again. It names the channel and
 * the message of every page, in order, and marks a page whose native stream may still be open
 * (it must be stopped before it can be edited).
 *
 *   slack1|C0123|1700000000.000100~,1700000000.000200
 */

export interface RefPage {
  ts: string;
  /** Its native stream was started and not yet stopped. */
  streaming: boolean;
}

export interface AnswerRef {
  channel: string;
  pages: RefPage[];
}

const PREFIX = 'slack1';
const TS = /^\d+\.\d+$/;
const CHANNEL = /^[A-Z0-9]+$/;

export function encodeAnswerRef(ref: AnswerRef): string {
  return `${PREFIX}|${ref.channel}|${ref.pages.map((p) => `${p.ts}${p.streaming ? '~' : ''}`).join(',')}`;
}

/** undefined for anything that is not a reference this surface wrote (a foreign or damaged one). */
export function decodeAnswerRef(value: string): AnswerRef | undefined {
  const [prefix, channel, list, ...rest] = value.split('|');
  if (prefix !== PREFIX || channel === undefined || list === undefined || rest.length > 0) return undefined;
  if (!CHANNEL.test(channel)) return undefined;
  const pages: RefPage[] = [];
  for (const item of list.split(',')) {
    const streaming = item.endsWith('~');
    const ts = streaming ? item.slice(0, -1) : item;
    if (!TS.test(ts)) return undefined;
    pages.push({ ts, streaming });
  }
  return pages.length === 0 ? undefined : { channel, pages };
}
