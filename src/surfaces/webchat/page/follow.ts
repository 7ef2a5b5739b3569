/// <reference lib="dom" />
import { backoffDelay } from '../../../core/backoff.js';
import type { ThreadEvent } from '../view.js';
import type { Api } from './api.js';

/**
 * Follows a thread's server-sent events. EventSource cannot send an Authorization header, so
 * this reads the stream with fetch and parses the frames itself. A dropped stream reconnects
 * with a growing pause; each connection starts with a full snapshot, so nothing is lost.
 */

export type FollowState = 'live' | 'reconnecting';

export function follow(
  api: Api,
  threadId: string,
  onEvent: (event: ThreadEvent) => void,
  onState: (state: FollowState) => void,
): () => void {
  const controller = new AbortController();
  // Reconnects wait 500 ms, doubling to 10 s, and start again from 500 ms once live.
  let retries = 0;
  const loop = async (): Promise<void> => {
    while (!controller.signal.aborted) {
      try {
        const res = await fetch(`/api/threads/${encodeURIComponent(threadId)}/events`, {
          headers: api.headers(),
          signal: controller.signal,
        });
        if (res.status === 404) return; // the thread is gone (a restarted server): stop following
        if (res.status === 401 && !api.askForToken()) return;
        if (res.ok && res.body !== null) {
          onState('live');
          retries = 0;
          await readFrames(res.body, onEvent);
        }
      } catch {
        // A network error or the abort: the loop decides below.
      }
      if (controller.signal.aborted) return;
      onState('reconnecting');
      const delay = backoffDelay(retries++, { baseMs: 500, maxMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  };
  void loop();
  return () => controller.abort();
}

async function readFrames(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: ThreadEvent) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const event = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event !== undefined) onEvent(event);
      end = buffer.indexOf('\n\n');
    }
  }
}

function parseFrame(frame: string): ThreadEvent | undefined {
  let name = '';
  let data = '';
  for (const line of frame.split('\n')) {
    if (line.startsWith('event: ')) name = line.slice(7);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  if (name === '' || data === '') return undefined; // a keep-alive comment
  // Our own server's frames (follow.ts on the server writes them from view.ts types).
  return { event: name, data: JSON.parse(data) } as ThreadEvent;
}
