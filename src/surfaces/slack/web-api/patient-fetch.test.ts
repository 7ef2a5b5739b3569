import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../core/clock.js';
import { SlackRateLimitedError, SlackUnavailableError } from './errors.js';
import { patientFetch } from './patient-fetch.js';

/** A server that answers each request with the next of `answers` (the last repeats). */
async function serve(
  answers: Array<{ status: number; body?: string; headers?: Record<string, string> } | 'hang'>,
): Promise<{ url: string; hits: number[]; server: Server }> {
  const hits: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    const answer = answers[Math.min(hits.length, answers.length - 1)];
    hits.push(Date.now());
    if (answer === 'hang' || answer === undefined) return;
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(answer.body ?? '{"ok":false,"error":"service_unavailable"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/apps.connections.open`,
    hits,
    server,
  };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

const logger = pino({ level: 'silent' });
const backoff = { baseMs: 20, maxMs: 40 };

describe('patientFetch', () => {
  it('waits out 5xx and 429 (Retry-After at least), telling each miss, then hands up the answer', async () => {
    const { url, hits } = await serve([
      { status: 503 },
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 200, body: '{"ok":true,"url":"ws://x/link/"}' },
    ]);
    const misses: Array<SlackUnavailableError | SlackRateLimitedError> = [];
    const halt = new AbortController();
    const patient = patientFetch({
      clock: systemClock,
      backoff,
      logger,
      halt: halt.signal,
      onMiss: (e) => misses.push(e),
    });
    const response = await patient(url, { method: 'POST' });
    expect(await response.json()).toEqual({ ok: true, url: 'ws://x/link/' });
    expect(hits).toHaveLength(3);
    expect((hits[2] ?? 0) - (hits[1] ?? 0)).toBeGreaterThanOrEqual(990);
    expect(misses).toEqual([expect.any(SlackUnavailableError), expect.any(SlackRateLimitedError)]);
    expect(misses[0]?.method).toBe('apps.connections.open');
    expect((misses[1] as SlackRateLimitedError).retryAfterMs).toBe(1000);
  });

  it('tells a refusal and still hands the answer up whole', async () => {
    const { url } = await serve([{ status: 200, body: '{"ok":false,"error":"missing_scope"}' }]);
    const refused: string[] = [];
    const patient = patientFetch({
      clock: systemClock,
      backoff,
      logger,
      halt: new AbortController().signal,
      onRefused: (method, code) => refused.push(`${method} ${code}`),
    });
    const response = await patient(url, { method: 'POST' });
    expect(await response.json()).toEqual({ ok: false, error: 'missing_scope' });
    expect(refused).toEqual(['apps.connections.open missing_scope']);
  });

  it('leaves the caller’s own deadline to the caller: no wait, no retry', async () => {
    const { url, hits } = await serve(['hang']);
    const misses: unknown[] = [];
    const patient = patientFetch({
      clock: systemClock,
      backoff,
      logger,
      halt: new AbortController().signal,
      onMiss: (e) => misses.push(e),
    });
    await expect(patient(url, { method: 'POST', signal: AbortSignal.timeout(100) })).rejects.toThrow();
    expect(hits).toHaveLength(1);
    expect(misses).toEqual([]);
  });

  it('once halted, neither settles nor asks again', async () => {
    const { url, hits } = await serve([{ status: 503 }]);
    const halt = new AbortController();
    const misses: unknown[] = [];
    const patient = patientFetch({
      clock: systemClock,
      backoff,
      logger,
      halt: halt.signal,
      onMiss: (e) => misses.push(e),
    });
    let settled = false;
    void patient(url, { method: 'POST' }).then(
      () => (settled = true),
      () => (settled = true),
    );
    await expect.poll(() => misses.length).toBeGreaterThanOrEqual(2);
    halt.abort(new Error('stopping'));
    const asked = hits.length;
    // Several backoffs long: a wait still running would have asked again by now.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hits).toHaveLength(asked);
    expect(settled).toBe(false);
  });
});
