/// <reference lib="dom" />
import type {
  ActivityView,
  BindingView,
  MessageView,
  ThreadEvent,
  ThreadSummary,
  ThreadView,
} from '../view.js';
import { activityText, offersStop } from './activity.js';
import { Api, ApiError, takeTokenFromUrl } from './api.js';
import { el, must } from './dom.js';
import { follow } from './follow.js';
import { type AnswerBody, type Rendered, renderMessage } from './render.js';
import { bindingOptions, firstMessageHint, markCurrent, markRunning, threadList } from './sidebar.js';

/**
 * The web chat page: threads per Binding in a list, the open thread beside it (on a phone, one
 * screen at a time), following the thread's events so answers grow in place. No framework: the
 * state is a few variables and each message is its own list item, replaced when it changes.
 */

const SIDEBAR_REFRESH_MS = 5_000;
const EMPTY_HEAD = 'No thread open. Start one, or pick one from the list.';

const api = new Api();
const ui = {
  app: must('app', HTMLElement),
  bindings: must('bindings', HTMLElement),
  newThread: must('new-thread', HTMLFormElement),
  newBinding: must('new-binding', HTMLSelectElement),
  newText: must('new-text', HTMLTextAreaElement),
  back: must('back', HTMLButtonElement),
  head: must('thread-head', HTMLElement),
  messages: must('messages', HTMLOListElement),
  activity: must('activity', HTMLElement),
  activityText: must('activity-text', HTMLElement),
  stop: must('stop', HTMLButtonElement),
  composer: must('composer', HTMLFormElement),
  composerText: must('composer-text', HTMLTextAreaElement),
  status: must('status', HTMLElement),
};
/** Side by side (not a phone's one screen at a time): the same width as the stylesheet's. */
const wide = window.matchMedia('(min-width: 721px)');

let current: { id: string; stop: () => void } | undefined;
const shown = new Map<string, Rendered & { view: MessageView }>();
let statusTimer: number | undefined;
let activity: ActivityView | null = null;
let activityTimer: number | undefined;

function showError(error: unknown): void {
  ui.status.textContent = error instanceof Error ? error.message : 'Something went wrong.';
  window.clearTimeout(statusTimer);
  statusTimer = window.setTimeout(() => {
    ui.status.textContent = '';
  }, 8_000);
}

// ---- sidebar ---------------------------------------------------------------------------------

/** The Bindings as last listed (their example requests follow the chosen one). */
let known: BindingView[] = [];
ui.newBinding.addEventListener('change', () => {
  ui.newText.placeholder = firstMessageHint(known, ui.newBinding.value);
});

async function refreshSidebar(): Promise<void> {
  const [{ bindings }, { threads }] = await Promise.all([
    api.get<{ bindings: BindingView[] }>('/api/bindings'),
    api.get<{ threads: ThreadSummary[] }>('/api/threads'),
  ]);
  bindingOptions(ui.newBinding, bindings);
  known = bindings;
  ui.newText.placeholder = firstMessageHint(known, ui.newBinding.value);
  ui.bindings.replaceChildren(...threadList(bindings, threads, current?.id, (id) => openThread(id, true)));
  // The list was read before the open thread's latest activity, maybe: the stream knows better.
  if (current !== undefined) markRunning(ui.bindings, current.id, activity !== null);
}

// ---- the open thread --------------------------------------------------------------------------

/**
 * Whether the thread follows its newest message: true until the person scrolls up, true again
 * once they scroll back down. Content that grows later (a throttled Markdown render) keeps
 * the view at the bottom through the observer below.
 */
let stuck = true;
ui.messages.addEventListener('scroll', () => {
  const m = ui.messages;
  stuck = m.scrollHeight - m.scrollTop - m.clientHeight < 80;
});
const keepAtBottom = (): void => {
  if (stuck) ui.messages.scrollTop = ui.messages.scrollHeight;
};
new MutationObserver(keepAtBottom).observe(ui.messages, {
  childList: true,
  subtree: true,
  characterData: true,
});
// A narrower window (a phone turned, the keyboard opening) changes the height too.
new ResizeObserver(keepAtBottom).observe(ui.messages);

function place(view: MessageView): void {
  const rendered = renderMessage(view, { answer });
  const old = shown.get(view.id);
  if (old === undefined) ui.messages.append(rendered.item);
  else old.item.replaceWith(rendered.item);
  shown.set(view.id, { ...rendered, view });
}

function apply(event: ThreadEvent): void {
  if (event.event === 'snapshot') {
    shown.clear();
    ui.messages.replaceChildren();
    showHead(event.data);
    for (const m of event.data.messages) place(m);
    showActivity(event.data.activity);
  } else if (event.event === 'message') {
    place(event.data);
  } else if (event.event === 'activity') {
    showActivity(event.data.activity);
  } else {
    const target = shown.get(event.data.id);
    if (target === undefined || target.view.text.length !== event.data.at) {
      void resync();
      return;
    }
    // The answer grows in place by the new text only (see MarkdownText for its rendering).
    target.grow(event.data.text);
    target.view.text += event.data.text;
  }
}

function showHead(thread: ThreadSummary): void {
  ui.head.replaceChildren(
    el('span', { text: thread.title === '' ? 'Thread' : thread.title }),
    el('span', { className: 'state', text: ` · ${thread.binding}` }),
  );
  ui.head.title = thread.title;
}

/** The agent at work: what the engine does for the thread, and for how long, every second. */
function showActivity(next: ActivityView | null): void {
  activity = next;
  // The list refreshes every few seconds; the open thread's mark follows at once.
  if (current !== undefined) markRunning(ui.bindings, current.id, next !== null);
  window.clearInterval(activityTimer);
  activityTimer = undefined;
  ui.activity.hidden = next === null;
  // Stop is offered once the agent has a task to cancel (it works on it, or is followed again,
  // or it waits for a prompt a message is queued behind).
  ui.stop.hidden = !offersStop(next);
  if (next === null) {
    ui.activityText.textContent = '';
    ui.stop.disabled = false;
    return;
  }
  ui.activity.setAttribute('data-state', next.state);
  const tick = (): void => {
    if (activity !== null) ui.activityText.textContent = activityText(activity);
  };
  tick();
  activityTimer = window.setInterval(tick, 1_000);
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
  showActivity(null);
  stuck = true;
  ui.app.setAttribute('data-screen', 'thread');
  ui.composer.hidden = false;
  const stop = follow(api, id, apply, (state) => {
    ui.head.parentElement?.classList.toggle('reconnecting', state === 'reconnecting');
  });
  current = { id, stop };
  markCurrent(ui.bindings, id);
  // On a phone the keyboard would cover the thread just opened: focus only side by side.
  if (wide.matches) ui.composerText.focus();
}

/** Back to no open thread (on a phone: back to the list). */
function closeThread(push: boolean): void {
  current?.stop();
  current = undefined;
  if (push) history.pushState(null, '', location.pathname);
  shown.clear();
  ui.messages.replaceChildren();
  showActivity(null);
  ui.head.textContent = EMPTY_HEAD;
  ui.head.removeAttribute('title');
  ui.composer.hidden = true;
  ui.app.setAttribute('data-screen', 'list');
  markCurrent(ui.bindings, undefined);
  refreshSidebar().catch(() => undefined);
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

ui.back.addEventListener('click', () => closeThread(true));

/** Stop: the broker cancels the task; the thread then says how it ended (a notice). */
ui.stop.addEventListener('click', () => {
  if (current === undefined) return;
  ui.stop.disabled = true;
  api
    .post<{ status: string }>(`/api/threads/${encodeURIComponent(current.id)}/cancel`, {})
    .then(({ status }) => {
      if (status === 'nothing-running') showError(new Error('Nothing is running to stop.'));
      if (status === 'failed')
        showError(new Error('The agent did not stop its task; it may still be running.'));
    })
    .catch(showError)
    .finally(() => {
      ui.stop.disabled = false;
    });
});

window.addEventListener('popstate', () => {
  const id = new URLSearchParams(location.search).get('thread');
  if (id !== null) openThread(id, false);
  else closeThread(false);
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
