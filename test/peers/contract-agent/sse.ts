/** SSE framing and the small I/O helpers the contract agent writes with. */

import type { ServerResponse } from 'node:http';

/** The JS SDK's framing: one single-line data field per event. */
export function sseFrame(payload: unknown, event?: string): string {
  const head = event === undefined ? '' : `event: ${event}\n`;
  return `${head}data: ${JSON.stringify(payload)}\n\n`;
}

/**
 * The same event the awkward way a valid SSE server may send it: CRLF line endings, the JSON spread
 * over several data: lines (the client joins them with '\n', which JSON allows between tokens),
 * and a comment in front.
 */
export function awkwardSseFrame(payload: unknown, event?: string): string {
  const lines = [': keep-alive', ''];
  if (event !== undefined) lines.push(`event: ${event}`);
  for (const line of JSON.stringify(payload, null, 1).split('\n')) lines.push(`data: ${line}`);
  lines.push('', '');
  return lines.join('\r\n');
}

export function sseHeaders(res: ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
  });
  // Without this the headers wait for the first body byte, and silentStream() would send nothing.
  res.flushHeaders();
}

export function isGone(res: ServerResponse): boolean {
  return res.destroyed || res.writableEnded || res.socket?.destroyed === true;
}

/** Writes and waits for the socket to drain, so a slow reader sees real backpressure. */
export function write(res: ServerResponse, data: string | Buffer): Promise<void> {
  if (isGone(res)) return Promise.resolve();
  return new Promise((resolve) => {
    if (res.write(data)) {
      resolve();
      return;
    }
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Writes `data` chunkSize bytes at a time with a short pause, so the client sees split frames. */
export async function writeInPieces(
  res: ServerResponse,
  data: string,
  chunkSize: number,
  signal: AbortSignal,
): Promise<void> {
  const bytes = Buffer.from(data, 'utf8');
  const size = Math.max(1, chunkSize);
  for (let at = 0; at < bytes.length; at += size) {
    if (isGone(res) || signal.aborted) return;
    // Bytes, not characters: a piece may end inside a multi-byte UTF-8 sequence, as on a real network.
    await write(res, bytes.subarray(at, at + size));
    await sleep(1, signal);
  }
}

/** Resolves after ms, or at once when the agent closes. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Resolves when the client goes away or the agent closes. */
export function untilGone(res: ServerResponse, signal: AbortSignal): Promise<void> {
  if (isGone(res) || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.on('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
