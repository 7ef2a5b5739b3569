import MarkdownIt, { type Token } from 'markdown-it';
import { cutWithMark } from '../../../core/text.js';

/**
 * An agent's Markdown as a tree of plain nodes, which dom.ts turns into elements one by one:
 * nothing here or there is ever HTML text parsed by the browser, so what an agent writes can
 * style its answer but never add markup, script or an event handler. markdown-it parses with raw
 * HTML off (`<script>` and `<img onerror>` stay text), and only the tags and attributes below can
 * come out of it. Links keep their real target in sight: a link whose text is not its address
 * shows the address after it, and only http, https and mailto addresses become links.
 *
 * No DOM here, so the rules can be checked outside a browser.
 */

export type MdTag =
  | 'p'
  | 'h1'
  | 'h2'
  | 'h3'
  | 'h4'
  | 'h5'
  | 'h6'
  | 'ul'
  | 'ol'
  | 'li'
  | 'blockquote'
  | 'pre'
  | 'code'
  | 'div'
  | 'table'
  | 'thead'
  | 'tbody'
  | 'tr'
  | 'th'
  | 'td'
  | 'strong'
  | 'em'
  | 's'
  | 'a'
  | 'span'
  | 'br'
  | 'hr';

/** The attributes a node may carry; dom.ts sets no other. */
export interface MdAttrs {
  className?: string;
  /** a: an absolute http, https or mailto URL (checked again where it is set). */
  href?: string;
  /** ol: the first number. */
  start?: string;
  /** pre: the fence's language, shown as a label. */
  lang?: string;
}

export type MdNode = string | MdElement;

export interface MdElement {
  tag: MdTag;
  attrs: MdAttrs;
  children: MdNode[];
}

/** A shown link address longer than this is cut (its host comes first and stays in sight). */
const TARGET_MAX = 100;
const LINK_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

const md = new MarkdownIt('default', { html: false, linkify: true, breaks: true, typographer: false });
// Only addresses with a scheme (or www.) become links: `main.py` or `notes.md` stay text.
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
// A link to anything else (javascript:, data:, a relative path) stays as the text it was written.
md.validateLink = (url: string): boolean => safeHref(url) !== undefined;

/** The URL as it will be set, when it is an absolute http, https or mailto URL; else undefined. */
export function safeHref(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return undefined; // relative or malformed
  }
  return LINK_PROTOCOLS.has(parsed.protocol) ? parsed.href : undefined;
}

export function markdownTree(source: string): MdNode[] {
  const root: MdElement = { tag: 'div', attrs: {}, children: [] };
  const stack: MdElement[] = [root];
  walk(md.parse(source, {}), stack);
  return root.children;
}

function walk(tokens: readonly Token[], stack: MdElement[]): void {
  for (const token of tokens) {
    const top = stack[stack.length - 1] ?? stack[0];
    if (top === undefined) return;
    // Tight lists hide their paragraphs: the text goes straight into the item.
    if (token.hidden && token.nesting !== 0) continue;
    if (token.nesting === 1) {
      const node = opening(token);
      if (node.tag === 'table') {
        // A wide table scrolls inside its own box, never the page.
        const wrap: MdElement = { tag: 'div', attrs: { className: 'table-wrap' }, children: [node] };
        top.children.push(wrap);
      } else {
        top.children.push(node);
      }
      stack.push(node);
    } else if (token.nesting === -1) {
      // The root is never closed, whatever the tokens say.
      const closed = stack.length > 1 ? stack.pop() : undefined;
      if (closed?.tag === 'a' && token.markup !== 'linkify' && token.markup !== 'autolink') {
        const parent = stack[stack.length - 1];
        const target = shownTarget(closed);
        if (parent !== undefined && target !== undefined) parent.children.push(target);
      }
    } else {
      leaf(token, top, stack);
    }
  }
}

function opening(token: Token): MdElement {
  const tag = blockTag(token.tag);
  const attrs: MdAttrs = {};
  if (tag === 'a') {
    const href = safeHref(attr(token, 'href'));
    if (href !== undefined) attrs.href = href;
  }
  if (tag === 'ol') {
    const start = attr(token, 'start');
    if (/^\d{1,9}$/.test(start)) attrs.start = start;
  }
  if (tag === 'th' || tag === 'td') {
    const align = /text-align:(left|center|right)/.exec(attr(token, 'style'))?.[1];
    if (align !== undefined) attrs.className = `align-${align}`;
  }
  return { tag, attrs, children: [] };
}

function leaf(token: Token, top: MdElement, stack: MdElement[]): void {
  switch (token.type) {
    case 'inline':
      walk(token.children ?? [], stack);
      return;
    case 'text':
      pushText(top, token.content);
      return;
    case 'code_inline':
      top.children.push({ tag: 'code', attrs: {}, children: [token.content] });
      return;
    case 'softbreak':
    case 'hardbreak':
      // Chat convention (as in Slack): a single newline is a line break.
      top.children.push({ tag: 'br', attrs: {}, children: [] });
      return;
    case 'fence':
    case 'code_block': {
      const code: MdElement = { tag: 'code', attrs: {}, children: [token.content.replace(/\n$/, '')] };
      const lang = token.info.trim().split(/\s+/)[0] ?? '';
      const attrs: MdAttrs = lang === '' ? {} : { lang: cutWithMark(lang, 30) };
      top.children.push({ tag: 'pre', attrs, children: [code] });
      return;
    }
    case 'hr':
      top.children.push({ tag: 'hr', attrs: {}, children: [] });
      return;
    case 'image': {
      // Not loaded (the page loads nothing from elsewhere): a link to it, named by its text.
      const href = safeHref(attr(token, 'src'));
      const alt = token.content === '' ? 'image' : token.content;
      if (href === undefined) {
        pushText(top, alt);
        return;
      }
      const link: MdElement = { tag: 'a', attrs: { href }, children: [`🖼 ${alt}`] };
      top.children.push(link);
      const target = shownTarget(link);
      if (target !== undefined) top.children.push(target);
      return;
    }
    default:
      // html_block / html_inline cannot come with html off; anything else unknown: its text.
      if (token.content !== '') pushText(top, token.content);
  }
}

function blockTag(tag: string): MdTag {
  switch (tag) {
    case 'p':
    case 'h1':
    case 'h2':
    case 'h3':
    case 'h4':
    case 'h5':
    case 'h6':
    case 'ul':
    case 'ol':
    case 'li':
    case 'blockquote':
    case 'table':
    case 'thead':
    case 'tbody':
    case 'tr':
    case 'th':
    case 'td':
    case 'strong':
    case 'em':
    case 's':
    case 'a':
    case 'code':
    case 'pre':
      return tag;
    default:
      return 'span'; // a tag this page does not know carries no meaning of its own
  }
}

function attr(token: Token, name: string): string {
  const value = token.attrGet(name);
  return value === null ? '' : String(value);
}

function pushText(node: MdElement, text: string): void {
  const last = node.children[node.children.length - 1];
  if (typeof last === 'string') node.children[node.children.length - 1] = last + text;
  else node.children.push(text);
}

export function textOf(node: MdNode): string {
  return typeof node === 'string' ? node : node.children.map(textOf).join('');
}

/** The link's address, shown after it unless its text already is that address. */
function shownTarget(link: MdElement): MdElement | undefined {
  const href = link.attrs.href;
  if (href === undefined) return undefined;
  const text = textOf(link).trim();
  const bare = href.replace(/^(https?:\/\/|mailto:)/, '').replace(/\/$/, '');
  if (text === href || text === bare || text.replace(/\/$/, '') === bare) return undefined;
  return {
    tag: 'span',
    attrs: { className: 'link-target' },
    children: [` (${cutWithMark(href, TARGET_MAX)})`],
  };
}
