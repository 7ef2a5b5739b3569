/// <reference lib="dom" />

/**
 * The page's only way to make elements: text goes in as text nodes, never as HTML, so nothing an
 * agent or a person wrote can become markup or script.
 */

export interface Props {
  className?: string;
  text?: string;
  attrs?: Record<string, string>;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  children: ReadonlyArray<Node | string> = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.className !== undefined) node.className = props.className;
  if (props.text !== undefined) node.textContent = props.text;
  for (const [name, value] of Object.entries(props.attrs ?? {})) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/** An element the HTML must have, of the expected type (a missing one is a bug in the page). */
export function must<T extends HTMLElement>(id: string, type: new () => T): T {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`page element #${id} is missing`);
  return node;
}

export function button(text: string, onClick: () => void, className?: string): HTMLButtonElement {
  const node = el('button', {
    text,
    attrs: { type: 'button' },
    ...(className === undefined ? {} : { className }),
  });
  node.addEventListener('click', onClick);
  return node;
}
