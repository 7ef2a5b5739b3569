import { looksLikeAddress } from './link-label.js';

/**
 * The Markdown a native stream carries (chat.appendStream's `markdown_text`, which Slack renders
 * with its own Markdown engine). It stays Markdown so Slack formats it, but what Slack might
 * read as markup we did not mean is broken up with a zero-width space, which shows nothing:
 *
 * - after every `<` and `&`: no `<!here>`, `<@U123>` or `<url|label>` token, no entity that
 *   could turn into one;
 * - between `]` and `[` or `:`: no reference link, no link definition;
 * - between `]` and `(` unless the label before it is plain prose: a link whose label names an
 *   address (`[https://good.example](https://evil.example)`), or whose label we cannot read for
 *   sure (nested brackets), is shown as the characters the agent wrote, target included.
 *
 * This applies everywhere, fenced code included. Whether Slack takes a piece of text for code
 * (a `~~~` fence, an indented block, a fence that never closes) is Slack's decision, not ours
 * to guess: its documentation names only the ``` fence, and the cost of the rule inside real
 * code is an invisible character.
 *
 * Every decision reads only what comes before, so a longer text renders to an extension of a
 * shorter one's rendering, whatever the cut, which is what appending to a stream needs.
 */

const ZWSP = '\u200B';
/** How far back a link label is looked for; a longer one is not approved. */
const LABEL_MAX = 1_000;

export function markdownForStream(markdown: string): string {
  let out = '';
  let from = 0;
  // Only `<`, `&` and `]` can need a break: the loop goes from one to the next (the regex
  // engine's search), not through every character, which most answers are long on and short
  // of those three.
  const special = /[<&\]]/g;
  for (let found = special.exec(markdown); found !== null; found = special.exec(markdown)) {
    const i = found.index;
    let breakAfter = true;
    if (markdown.charCodeAt(i) === CLOSE_BRACKET) {
      const next = markdown[i + 1];
      breakAfter = next === '[' || next === ':' || (next === '(' && !plainLabelBefore(markdown, i));
    }
    if (breakAfter) {
      out += `${markdown.slice(from, i + 1)}${ZWSP}`;
      from = i + 1;
    }
  }
  return from === 0 ? markdown : out + markdown.slice(from);
}

const CLOSE_BRACKET = 0x5d;

/**
 * Whether the `]` at `close` ends a label of plain prose: one `[` since the previous `]` or blank
 * line, nothing bracketed inside, no address in it. Anything less certain is not approved.
 */
function plainLabelBefore(text: string, close: number): boolean {
  const start = Math.max(0, close - LABEL_MAX);
  let open = -1;
  for (let j = close - 1; j >= start; j--) {
    const c = text[j];
    if (c === ']' || (c === '\n' && text[j - 1] === '\n')) {
      if (open >= 0) break;
      return false;
    }
    if (c === '[') {
      if (open >= 0) return false;
      open = j;
    }
  }
  if (open < 0) return false;
  const label = text.slice(open + 1, close);
  return !looksLikeAddress(label);
}
