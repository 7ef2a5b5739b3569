/// <reference lib="dom" />
import type { BindingView, ThreadSummary } from '../view.js';
import { el } from './dom.js';
import { timeOf } from './render.js';

/**
 * The thread list: a section per Binding, newest activity first, each thread with its title,
 * the time of its last message and a mark while the agent works on it.
 */

export function bindingOptions(select: HTMLSelectElement, bindings: readonly BindingView[]): void {
  const selected = select.value;
  select.replaceChildren(
    ...bindings.map((b) =>
      el('option', { text: b.ready ? b.ref : `${b.ref} (not ready)`, attrs: { value: b.ref } }),
    ),
  );
  if (bindings.some((b) => b.ref === selected)) select.value = selected;
}

/**
 * What the first message's box offers: the chosen agent's example requests, from its card; for a
 * Binding that is not ready, why, and that a message waits until it is.
 */
export function firstMessageHint(bindings: readonly BindingView[], ref: string): string {
  const binding = bindings.find((b) => b.ref === ref);
  if (binding !== undefined && !binding.ready) return notReadyText(binding);
  const examples = binding?.examples ?? [];
  return examples.length === 0 ? 'Ask the agent…' : `Ask the agent… (try: ${examples.join(' · ')})`;
}

/** A Binding that is not ready, in words: its reason and message, and what a message does meanwhile. */
export function notReadyText(binding: BindingView): string {
  const why = binding.problem === undefined ? '' : ` (${binding.problem.reason}: ${binding.problem.message})`;
  return `This agent is not ready${why}. A message waits until it is.`;
}

export function threadList(
  bindings: readonly BindingView[],
  threads: readonly ThreadSummary[],
  currentId: string | undefined,
  open: (id: string) => void,
): HTMLElement[] {
  const known = new Set(bindings.map((b) => b.ref));
  // Threads of a Binding that is gone stay listed under their Binding's name.
  for (const t of threads) known.add(t.binding);
  return [...known].sort().map((ref) => {
    const mine = threads.filter((t) => t.binding === ref);
    const list = el(
      'ul',
      {},
      mine.map((t) => {
        const title = t.title === '' ? '(untitled thread)' : t.title;
        const link = el(
          'a',
          {
            attrs: { href: `?thread=${encodeURIComponent(t.id)}`, 'data-thread': t.id, title },
            ...(t.activity === null ? {} : { className: 'running' }),
          },
          [el('span', { className: 'title', text: title }), timeOf(t.updatedAt)],
        );
        if (t.id === currentId) link.setAttribute('aria-current', 'page');
        link.addEventListener('click', (event) => {
          event.preventDefault();
          open(t.id);
        });
        return el('li', {}, [link]);
      }),
    );
    if (mine.length === 0) list.append(el('li', { className: 'empty', text: 'No threads yet' }));
    const binding = bindings.find((b) => b.ref === ref);
    const heading =
      binding === undefined || binding.ready
        ? [el('h2', { text: ref })]
        : [
            el('h2', { text: `${ref} · not ready` }),
            el('p', { className: 'not-ready', text: notReadyText(binding) }),
          ];
    return el('section', { className: 'binding' }, [...heading, list]);
  });
}

export function markCurrent(nav: HTMLElement, id: string | undefined): void {
  for (const link of nav.querySelectorAll('a[data-thread]')) {
    if (link.getAttribute('data-thread') === id) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

export function markRunning(nav: HTMLElement, id: string, running: boolean): void {
  for (const link of nav.querySelectorAll('a[data-thread]')) {
    if (link.getAttribute('data-thread') === id) link.classList.toggle('running', running);
  }
}
