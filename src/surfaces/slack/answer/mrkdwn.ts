/**
 * Agents write Markdown; Slack messages speak mrkdwn, a different dialect (`*bold*`,
 * `_italic_`, `<url|text>`, no headings). Everything an agent writes is untrusted, so text is
 * shown as text: `&`, `<` and `>` are escaped everywhere (https://docs.slack.dev/messaging/
 * formatting-message-text#escaping), and the only `<…>` we emit are links we built from a
 * Markdown link with an http(s) or mailto URL. An agent cannot ping `@channel` (`<!channel>`),
 * mention someone, or dress a link up as something else.
 *
 * Conversion is line by line (headings, lists, quotes and code fences are line constructs in
 * Markdown), with inline formatting inside a line; emphasis spanning lines stays literal.
 */

import { fenceAfter } from '../../common/markdown-fences.js';
import { labelFitsTarget } from './link-label.js';

/** Private-use characters standing in for rendered pieces while the rest is converted. */
const TOKEN_OPEN = '\uE000';
const TOKEN_CLOSE = '\uE001';
const BOLD = '\uE002';
const PRIVATE = /[\uE000-\uE002]/g;

/** Slack's three control characters, escaped the way Slack documents. */
export function escapeSlack(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

/** Converts a Markdown text to Slack mrkdwn, escaping everything else. */
export function markdownToMrkdwn(markdown: string): string {
  const lines = markdown.replace(PRIVATE, '\uFFFD').split('\n');
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of lines) {
    const next = fenceAfter(fence, line);
    if (fence === null && next !== null) out.push('```');
    else if (fence !== null && next === null) out.push('```');
    else if (fence !== null) out.push(escapeSlack(line));
    else out.push(renderLine(line));
    fence = next;
  }
  return out.join('\n');
}

function renderLine(line: string): string {
  const heading = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
  if (heading !== null) {
    const text = (heading[2] ?? '').replace(/\*\*|__/g, '');
    return text === '' ? '' : `*${inline(text)}*`;
  }
  if (/^ {0,3}([-*_])( *\1){2,} *$/.test(line))
    return '─'.repeat(Math.min(20, Math.max(3, line.trim().length)));
  const quote = /^ {0,3}> ?(.*)$/.exec(line);
  // The one `>` we keep: a quote marker at the start of a line cannot open a Slack token.
  if (quote !== null) return `> ${renderLine(quote[1] ?? '')}`;
  const bullet = /^(\s*)[-*+]\s+(?:\[([ xX])\]\s+)?(.*)$/.exec(line);
  if (bullet !== null) {
    const box = bullet[2] === undefined ? '' : bullet[2] === ' ' ? '☐ ' : '☑ ';
    return `${bullet[1] ?? ''}• ${box}${inline(bullet[3] ?? '')}`;
  }
  const ordered = /^(\s*)(\d{1,9})([.)])\s+(.*)$/.exec(line);
  if (ordered !== null) return `${ordered[1] ?? ''}${ordered[2] ?? ''}. ${inline(ordered[4] ?? '')}`;
  return inline(line);
}

const CODE_SPAN = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g;
const LINK = /(!?)\[([^\]\n]*)\]\(\s*<?([^\s)<>]+)>?(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)/g;
const AUTOLINK = /<((?:https?:\/\/|mailto:)[^\s<>]+)>/g;
const ESCAPED = /\\([!-/:-@[-`{-~])/g;

/** Inline Markdown (code spans, links, emphasis, strikethrough) to mrkdwn, escaped. */
export function inline(text: string): string {
  const tokens: string[] = [];
  const keep = (rendered: string): string => {
    tokens.push(rendered);
    return `${TOKEN_OPEN}${tokens.length - 1}${TOKEN_CLOSE}`;
  };
  let work = text.replace(PRIVATE, '\uFFFD');
  // Code spans first: nothing inside them is Markdown.
  work = work.replace(CODE_SPAN, (_m, _ticks: string, body: string) => {
    const content = body.length > 2 && body.startsWith(' ') && body.endsWith(' ') ? body.slice(1, -1) : body;
    return keep(`\`${escapeSlack(content.replace(/`/g, "'"))}\``);
  });
  work = work.replace(ESCAPED, (_m, c: string) => keep(escapeSlack(c)));
  work = work.replace(LINK, (_m, _bang: string, label: string, url: string) => keep(link(url, label)));
  work = work.replace(AUTOLINK, (_m, url: string) => keep(link(url, '')));
  work = escapeSlack(work);
  work = work
    .replace(/\*\*\*(?=\S)([^\n]*?\S)\*\*\*/g, `${BOLD}_$1_${BOLD}`)
    .replace(/\*\*(?=\S)([^\n]*?\S)\*\*/g, `${BOLD}$1${BOLD}`)
    .replace(/__(?=\S)([^\n]*?\S)__/g, `${BOLD}$1${BOLD}`)
    .replace(/(^|[^\w*\\])\*(?=[^\s*])([^\n*]*?[^\s*])\*(?![\w*])/g, '$1_$2_')
    .replace(/(^|[^\w*\\])\*(?=[^\s*])([^\s*])\*(?![\w*])/g, '$1_$2_')
    .replace(/~~(?=\S)([^\n]*?\S)~~/g, '~$1~')
    .replace(new RegExp(BOLD, 'g'), '*');
  return work.replace(
    new RegExp(`${TOKEN_OPEN}(\\d+)${TOKEN_CLOSE}`, 'g'),
    (_m, index: string) => tokens[Number(index)] ?? '',
  );
}

/**
 * A link we write ourselves. Only http(s) and mailto URLs become links; anything else
 * (javascript:, slack://, a relative path) is shown as text next to its label. A label that
 * names another address than the link's (link-label.ts) is not shown: Slack shows the target.
 */
function link(url: string, label: string): string {
  const safe = /^(https?:\/\/|mailto:)/i.test(url);
  // A label that names another address than the target is dropped: the real target is shown.
  const fits = !safe || labelFitsTarget(label, url);
  const shown = label.trim() === '' || !fits ? '' : escapeSlack(label.replace(/\|/g, '¦'));
  if (!safe) return shown === '' ? escapeSlack(url) : `${shown} (${escapeSlack(url)})`;
  // `|` and `>` end the URL part of a Slack link: percent-encode them (and `<`, for symmetry).
  const target = url.replace(
    /[|<> ]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
  return shown === '' ? `<${target}>` : `<${target}|${shown}>`;
}

export { markdownForStream } from './stream-markdown.js';
