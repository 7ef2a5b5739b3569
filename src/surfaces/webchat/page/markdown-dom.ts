/// <reference lib="dom" />
import { type MdNode, markdownTree, safeHref } from './markdown.js';

/**
 * Markdown on the page: markdown.ts's tree made into elements with createElement and text
 * nodes (never innerHTML), and an answer that re-renders as it streams in.
 */

export function markdownNodes(nodes: readonly MdNode[]): DocumentFragment {
  const out = document.createDocumentFragment();
  for (const node of nodes) out.append(toDom(node));
  return out;
}

function toDom(node: MdNode): Node {
  if (typeof node === 'string') return document.createTextNode(node);
  const element = document.createElement(node.tag);
  const { className, href, start, lang } = node.attrs;
  if (className !== undefined) element.className = className;
  if (node.tag === 'a') {
    // Checked again here: this is the one place an address becomes a link.
    const safe = href === undefined ? undefined : safeHref(href);
    if (safe !== undefined) {
      element.setAttribute('href', safe);
      element.setAttribute('target', '_blank');
      element.setAttribute('rel', 'noopener noreferrer');
    }
  }
  if (node.tag === 'ol' && start !== undefined) element.setAttribute('start', start);
  if (node.tag === 'pre' && lang !== undefined) element.setAttribute('data-lang', lang);
  for (const child of node.children) element.append(toDom(child));
  return element;
}

/**
 * An agent's text shown as Markdown while it grows. `append` is O(chunk): it only adds to the
 * source and asks for a render. The render parses the whole answer (Markdown is not safely
 * parsed in pieces: a later line can turn earlier ones into a table or a list), so it is
 * throttled: at most once per animation frame, and never more than a fifth of the time (the next
 * render waits four times as long as the last one took), so a long answer streaming fast costs a
 * bounded share of the page's time rather than a full parse per chunk. The final text comes as a
 * message of its own, rendered once.
 */
export class MarkdownText {
  readonly element: HTMLDivElement;
  #source: string;
  #pending = false;
  #notBefore = 0;

  constructor(source: string, className: string) {
    this.element = document.createElement('div');
    this.element.className = className;
    this.#source = source;
    this.#render();
  }

  get source(): string {
    return this.#source;
  }

  append(text: string): void {
    this.#source += text;
    if (this.#pending) return;
    this.#pending = true;
    const wait = Math.max(0, this.#notBefore - performance.now());
    const frame = (): void => {
      requestAnimationFrame(() => this.#render());
    };
    if (wait === 0) frame();
    else window.setTimeout(frame, wait);
  }

  #render(): void {
    this.#pending = false;
    const began = performance.now();
    this.element.replaceChildren(markdownNodes(markdownTree(this.#source)));
    const took = performance.now() - began;
    this.#notBefore = began + took * 5;
  }
}
