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
 *   sure (nested brackets), is shown as the characters the agent wrote, target included;
 * - after an `@` that starts a word: no plain `@channel`, `@here` or `@everyone`. Slack documents
 *   `<!channel>` as the ping and says nothing of plain text in `markdown_text`, so the plain
 *   forms are broken too; an address (`ops@example.com`) keeps its `@`;
 * - before the `:` of a `javascript`, `vbscript` or `data` scheme, in any case: no link that
 *   runs code, which Slack's Markdown documentation neither promises nor rules out.
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
  // Only `<`, `&`, `]`, `@` and `:` can need a break: the loop goes from one to the next (the
  // regex engine's search), not through every character, which most answers are long on and
  // short of those.
  const special = /[<&\]@:]/g;
  for (let found = special.exec(markdown); found !== null; found = special.exec(markdown)) {
    const i = found.index;
    const c = markdown.charCodeAt(i);
    if (c === COLON) {
      // The break goes before the colon: `javascript` stays, its `:` no longer ends a scheme.
      if (SCRIPT_SCHEME.test(markdown.slice(Math.max(0, i - SCHEME_MAX), i))) {
        out += `${markdown.slice(from, i)}${ZWSP}`;
        from = i;
      }
      continue;
    }
    let breakAfter = true;
    if (c === CLOSE_BRACKET) {
      const next = markdown[i + 1];
      breakAfter = next === '[' || next === ':' || (next === '(' && !plainLabelBefore(markdown, i));
    } else if (c === AT) {
      breakAfter = i === 0 || !WORD_CHAR.test(markdown[i - 1] ?? '');
    }
    if (breakAfter) {
      out += `${markdown.slice(from, i + 1)}${ZWSP}`;
      from = i + 1;
    }
  }
  return from === 0 ? markdown : out + markdown.slice(from);
}

const CLOSE_BRACKET = 0x5d;
const AT = 0x40;
const COLON = 0x3a;
/** A character an address's local part can end with before its `@`. */
const WORD_CHAR = /[\p{L}\p{N}_.+-]/u;
/** A scheme that runs code, ending right before a colon and not inside a longer word. */
const SCRIPT_SCHEME = /(?:^|[^\p{L}\p{N}])(?:javascript|vbscript|data)$/iu;
const SCHEME_MAX = 'javascript'.length + 1;

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
