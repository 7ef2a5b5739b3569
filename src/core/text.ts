/**
 * The one unit in which Agent Kourier measures text: UTF-16 code units, what JavaScript's
 * `length` counts and what Slack's and the web chat's limits count. Wherever text is cut to a
 * limit it is cut here, and never between the two halves of a surrogate pair, so a cut text is
 * still well-formed (an emoji is dropped whole, not turned into a lone surrogate).
 */

/** The length of `text` in the unit every limit uses. */
export function textLength(text: string): number {
  return text.length;
}

/** The longest prefix of `text` of at most `max` units that does not end inside a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  let end = max;
  const last = text.charCodeAt(end - 1);
  const next = text.charCodeAt(end);
  // A high surrogate whose low half lies beyond the cut would be left alone: drop it too.
  if (last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) end -= 1;
  return text.slice(0, end);
}

/** `text` cut so that it and `mark` fit in `max` units together (`mark` added only when cut). */
export function cutWithMark(text: string, max: number, mark = '…'): string {
  if (text.length <= max) return text;
  if (max <= mark.length) return cutText(mark, max);
  return `${cutText(text, max - mark.length)}${mark}`;
}

// C0/C1 controls other than newline and tab, and the bidirectional overrides and isolates that
// can make text read differently from what it is (a tool name "rm\u202Eetad" shown as "rmdate").
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it finds
const DISGUISING = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/**
 * An agent's text made safe to show as plain text: characters that would disguise it (controls,
 * bidirectional overrides) written as `\uXXXX`, lone surrogates replaced.
 */
export function visibleText(text: string): string {
  return text
    .toWellFormed()
    .replace(DISGUISING, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
