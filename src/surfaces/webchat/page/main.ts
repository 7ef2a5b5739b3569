/// <reference lib="dom" />
import type { BindingView, MessageView, ThreadEvent, ThreadSummary, ThreadView } from '../view.js';
import { Api, ApiError, takeTokenFromUrl } from './api.js';
import { el, must } from './dom.js';
import { follow } from './follow.js';
import { type AnswerBody, type Rendered, renderMessage } from './render.js';

/**
 * The web chat page: threads per Binding on the left, the open thread on the right, following
 * the thread's events so answers grow in place. No framework: the state is a few variables and
 * each message is its own list item, replaced when it changes.
 */

const SIDEBAR_REFRESH_MS = 5_000;

const api = new Api();
const ui = {
  bindings: must('bindings', HTMLElement),
  newThread: must('new-thread', HTMLFormElement),
  newBinding: must('new-binding', HTMLSelectElement),
  newText: must('new-text', HTMLTextAreaElement),
  head: must('thread-head', HTMLElement),
  messages: must('messages', HTMLOListElement),
  composer: must('composer', HTMLFormElement),
  composerText: must('composer-text', HTMLTextAreaElement),
  status: must('status', HTMLElement),
};

let current: { id: string; stop: () => void } | undefined;
const shown = new Map<string, Rendered & { view: MessageView }>();
let statusTimer: number | undefined;

function showError(error: unknown): void {
  ui.status.textContent = error instanceof Error ? error.message : 'Something went wrong.';
  window.clearTimeout(statusTimer);
  statusTimer = window.setTimeout(() => {
    ui.status.textContent = '';
  }, 8_000);
}

// ---- sidebar ---------------------------------------------------------------------------------

async function refreshSidebar(): Promise<void> {
  const [{ bindings }, { threads }] = await Promise.all([
    api.get<{ bindings: BindingView[] }>('/api/bindings'),
    api.get<{ threads: ThreadSummary[] }>('/api/threads'),
  ]);
  const selected = ui.newBinding.value;
  ui.newBinding.replaceChildren(
    ...bindings.map((b) => el('option', { text: b.ref, attrs: { value: b.ref } })),
  );
  if (bindings.some((b) => b.ref === selected)) ui.newBinding.value = selected;
  const known = new Set(bindings.map((b) => b.ref));
  // Threads of a Binding that is gone stay listed under their Binding's name.
  for (const t of threads) known.add(t.binding);
  ui.bindings.replaceChildren(
    ...[...known].sort().map((ref) => {
      const mine = threads.filter((t) => t.binding === ref);
      const list = el(
        'ul',
        {},
        mine.map((t) => {
          const link = el('a', {
            text: t.title === '' ? '(untitled thread)' : t.title,
            attrs: { href: `?thread=${encodeURIComponent(t.id)}`, 'data-thread': t.id },
          });
          if (t.id === current?.id) link.setAttribute('aria-current', 'page');
          link.addEventListener('click', (event) => {
            event.preventDefault();
            openThread(t.id, true);
          });
          return el('li', {}, [link]);
        }),
      );
      if (mine.length === 0) list.append(el('li', { className: 'empty', text: 'No threads yet' }));
      return el('section', { className: 'binding' }, [el('h2', { text: ref }), list]);
    }),
  );
}

// ---- the open thread --------------------------------------------------------------------------

function nearBottom(): boolean {
  const m = ui.messages;
  return m.scrollHeight - m.scrollTop - m.clientHeight < 80;
}

function place(view: MessageView): void {
  const rendered = renderMessage(view, { answer });
  const old = shown.get(view.id);
  if (old === undefined) ui.messages.append(rendered.item);
  else old.item.replaceWith(rendered.item);
  shown.set(view.id, { ...rendered, view });
}

function apply(event: ThreadEvent): void {
  const stick = nearBottom();
  if (event.event === 'snapshot') {
    shown.clear();
    ui.messages.replaceChildren();
    showHead(event.data);
    for (const m of event.data.messages) place(m);
  } else if (event.event === 'message') {
    place(event.data);
  } else {
    const target = shown.get(event.data.id);
    if (target === undefined || target.view.text.length !== event.data.at) {
      void resync();
      return;
    }
    // The answer grows in place: one text node, appended to, no re-render.
    target.text.appendData(event.data.text);
    target.view.text += event.data.text;
  }
  if (stick) ui.messages.scrollTop = ui.messages.scrollHeight;
}

function showHead(thread: ThreadSummary): void {
  ui.head.replaceChildren(
    el('span', { text: thread.title === '' ? 'Thread' : thread.title }),
    el('span', { className: 'state', text: ` · ${thread.binding}` }),
  );
}

async function resync(): Promise<void> {
  if (current === undefined) return;
  const thread = await api.get<ThreadView>(`/api/threads/${encodeURIComponent(current.id)}`);
  apply({ event: 'snapshot', data: thread });
}

function openThread(id: string, push: boolean): void {
  current?.stop();
  if (push) history.pushState(null, '', `?thread=${encodeURIComponent(id)}`);
  shown.clear();
  ui.messages.replaceChildren();
  ui.composer.hidden = false;
  const stop = follow(api, id, apply, (state) => {
    ui.head.classList.toggle('reconnecting', state === 'reconnecting');
  });
  current = { id, stop };
  for (const link of ui.bindings.querySelectorAll('a[data-thread]')) {
    if (link.getAttribute('data-thread') === id) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  ui.composerText.focus();
}

async function answer(messageId: string, body: AnswerBody): Promise<void> {
  if (current === undefined) return;
  try {
    await api.post(
      `/api/threads/${encodeURIComponent(current.id)}/messages/${encodeURIComponent(messageId)}/answer`,
      body,
    );
  } catch (error) {
    showError(error);
    throw error;
  }
}

// ---- forms -------------------------------------------------------------------------------------

/** Enter sends, Shift+Enter makes a new line (as in most chats). */
function sendOnEnter(area: HTMLTextAreaElement, form: HTMLFormElement): void {
  area.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
}

ui.newThread.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = ui.newText.value;
  if (text.trim() === '' || ui.newBinding.value === '') return;
  api
    .post<{ thread: ThreadSummary }>('/api/threads', { binding: ui.newBinding.value, text })
    .then(async ({ thread }) => {
      ui.newText.value = '';
      openThread(thread.id, true);
      await refreshSidebar();
    })
    .catch(showError);
});

ui.composer.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = ui.composerText.value;
  if (current === undefined || text.trim() === '') return;
  ui.composerText.value = '';
  api.post(`/api/threads/${encodeURIComponent(current.id)}/messages`, { text }).catch((error: unknown) => {
    ui.composerText.value = text; // nothing typed is lost when the send fails
    showError(error);
  });
});

sendOnEnter(ui.newText, ui.newThread);
sendOnEnter(ui.composerText, ui.composer);

window.addEventListener('popstate', () => {
  const id = new URLSearchParams(location.search).get('thread');
  if (id !== null) openThread(id, false);
});

// ---- start ---------------------------------------------------------------------------------------

takeTokenFromUrl();
refreshSidebar()
  .then(() => {
    const id = new URLSearchParams(location.search).get('thread');
    if (id !== null) openThread(id, false);
  })
  .catch((error: unknown) => {
    showError(
      error instanceof ApiError && error.status === 401
        ? new Error('Not authorised: reload with the token.')
        : error,
    );
  });
window.setInterval(() => {
  if (document.visibilityState === 'visible') refreshSidebar().catch(() => undefined);
}, SIDEBAR_REFRESH_MS);
