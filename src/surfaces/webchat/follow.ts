import type { ServerResponse } from 'node:http';
import { BASE_HEADERS } from './http.js';
import type { Thread } from './threads.js';
import type { ThreadEvent } from './view.js';

/**
 * A thread's changes as server-sent events: the whole thread first, then each change. Each
 * connection starts from its own snapshot, so a follower that reconnects is whole again.
 */

export interface FollowOptions {
  /** A comment this often keeps proxies and idle timers from closing the stream. */
  keepAliveMs: number;
  /**
   * A follower that reads slower than the thread changes is cut once this much is waiting to
   * be sent: memory stays bounded, and it reconnects to a fresh snapshot.
   */
  maxBufferedBytes: number;
}

export const DEFAULT_FOLLOW: FollowOptions = { keepAliveMs: 15_000, maxBufferedBytes: 8 * 1024 * 1024 };

export function frame(event: ThreadEvent): string {
  // JSON has no raw newlines, so one data line carries the whole event.
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** Streams a thread to one response until the client goes away; returns a function that ends it. */
export function followThread(res: ServerResponse, thread: Thread, options: FollowOptions): () => void {
  res.writeHead(200, {
    ...BASE_HEADERS,
    'Content-Type': 'text/event-stream; charset=utf-8',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  let ended = false;
  let unsubscribe: () => void = () => undefined;
  let keepAlive: NodeJS.Timeout | undefined;
  const end = (): void => {
    if (ended) return;
    ended = true;
    unsubscribe();
    clearInterval(keepAlive);
    res.end();
  };
  const send = (chunk: string): void => {
    if (ended) return;
    if (res.writableLength > options.maxBufferedBytes) {
      end();
      res.destroy();
      return;
    }
    res.write(chunk);
  };
  // Snapshot and subscription in the same tick: no change can fall between them.
  send(frame({ event: 'snapshot', data: thread.view() }));
  unsubscribe = thread.subscribe((event) => send(frame(event)));
  keepAlive = setInterval(() => send(': keep-alive\n\n'), options.keepAliveMs);
  keepAlive.unref();
  res.on('close', end);
  return end;
}
