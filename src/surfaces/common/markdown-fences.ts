/** Markdown's fenced code blocks, as CommonMark reads them: what every surface's pages keep whole. */

/** An opening code fence: up to 3 spaces, then ``` or ~~~ (3 or more), then an info string. */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fence state after a complete line: the opening fence while inside a code block. */
export function fenceAfter(open: string | null, line: string): string | null {
  const match = FENCE.exec(line);
  if (open === null) {
    if (match === null) return null;
    const marker = match[1] ?? '';
    // A backtick fence's info string may not contain backticks (CommonMark 4.5).
    if (marker.startsWith('`') && (match[2] ?? '').includes('`')) return null;
    return marker;
  }
  if (match !== null) {
    const marker = match[1] ?? '';
    if (marker[0] === open[0] && marker.length >= open.length && (match[2] ?? '').trim() === '') return null;
  }
  return open;
}
