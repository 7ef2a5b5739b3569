import { fenceAfter } from './markdown-fences.js';

/**
 * Splits an answer into the pages that fit one chat message each: a surface cuts or refuses
 * long messages (Slack's limits in slack/answer/pages.ts, Teams' in teams/answer/edited.ts), so
 * an answer longer than a page continues in follow-up messages.
 *
 * Pages close at the first good boundary after they are long enough: a paragraph break after
 * `soft`, a line break a little later, and only when nothing else came, a line inside a code
 * block (the fence is closed at the end of the page and opened again at the start of the
 * next, so every message renders a whole code block). Past `hard` a page is cut where it is.
 *
 * Every decision looks only at what came before it, never ahead, so while an answer streams a
 * page that has closed never changes and the open page only grows: a stream can keep appending.
 * Length is measured per UTF-16 unit with the surface's `cost` of it: the worst case of its
 * rendering (Slack's mrkdwn escapes `&` as `&amp;`) or its bytes (Teams counts bytes), so what
 * the surface sends of a page never exceeds `hard` either.
 */

export interface PageLimits {
  /** A page closes at the first paragraph break after this much (in `cost`). */
  soft: number;
  /** No page costs more than this, as the surface sends it. */
  hard: number;
  /** What a UTF-16 code unit costs as sent; 1 when unset. */
  cost?: (code: number) => number;
}

/** A code unit's share of its character's UTF-8 bytes (a surrogate pair's four are two and two). */
export function utf8Cost(code: number): number {
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdfff) return 2;
  return 3;
}

/** Room kept at the end of a page for the closing fence of a code block cut in two. */
const RESERVE = 8;
/** How far before the hard limit a long line is cut at a space rather than anywhere. */
const SPACE_WINDOW = 200;

const unit = (): number => 1;

/** The pages of a Markdown text, each one self-contained Markdown (code fences balanced). */
export function paginate(text: string, limits: PageLimits): string[] {
  const cost = limits.cost ?? unit;
  const stringCost = (part: string): number => {
    let total = 0;
    for (let i = 0; i < part.length; i++) total += cost(part.charCodeAt(i));
    return total;
  };
  const hard = Math.max(limits.hard - RESERVE, 16);
  const soft = Math.min(limits.soft, hard);
  const lineAt = soft + Math.floor((hard - soft) / 2);
  const codeAt = Math.max(lineAt, hard - SPACE_WINDOW);
  const pages: string[] = [];
  let start = 0;
  let prefix = '';
  let used = 0;
  let fence: string | null = null;
  let openLine = '';
  let lineStart = 0;

  const close = (end: number, next: number): void => {
    const body = text.slice(start, end);
    // Whitespace alone makes no page: it is dropped at the boundary.
    if (body.trim() !== '') pages.push(`${prefix}${body}${fence === null ? '' : '\n```'}`);
    start = next;
    // A code block cut in two opens again on the next page, with its info string.
    prefix = fence === null ? '' : `${openLine}\n`;
    used = stringCost(prefix);
  };

  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 10) {
      const line = text.slice(lineStart, i);
      const before = fence;
      fence = fenceAfter(fence, line);
      if (before === null && fence !== null) openLine = line.trim();
      lineStart = i + 1;
      used += 1;
      const blank = line.trim() === '';
      if (fence === null && blank && used >= soft) close(i, i + 1);
      else if (fence === null && used >= lineAt) close(i, i + 1);
      else if (fence !== null && before !== null && used >= codeAt) close(i, i + 1);
      continue;
    }
    const next = used + cost(code);
    if (next > hard) {
      // Never between the two halves of a surrogate pair.
      const at = code >= 0xdc00 && code <= 0xdfff && i > start ? i - 1 : i;
      close(at, at);
      used += stringCost(text.slice(start, i + 1));
      continue;
    }
    used = next;
    if (code === 32 && fence === null && used >= hard - SPACE_WINDOW) close(i + 1, i + 1);
  }
  const rest = text.slice(start);
  if (rest.trim() !== '') pages.push(`${prefix}${rest}`);
  return pages;
}

/**
 * What of a page may be shown while the answer is still growing: trailing whitespace is held
 * back (it may turn out to be the paragraph break that closes the page), and so is a last line
 * that is still only the start of a possible code fence.
 */
export function settledPart(page: string): string {
  let end = page.length;
  while (end > 0 && /\s/.test(page[end - 1] ?? '')) end--;
  const lastLine = page.lastIndexOf('\n', end - 1) + 1;
  const tail = page.slice(lastLine, end);
  if (tail.length > 0 && tail.length < 3 && /^ {0,3}[`~]+$/.test(tail)) end = lastLine;
  while (end > 0 && /\s/.test(page[end - 1] ?? '')) end--;
  return page.slice(0, end);
}
