/**
 * The peer's way of showing a growing answer, for the freshness bench to print beside ours: a
 * model of kagent's Slack bot, not our code. Each thread's message is posted at its first tick
 * and then edited with chat.update every 2 seconds with the whole text so far, whatever the
 * other threads do; an edit Slack refuses (429) is dropped, the next tick carries newer text.
 * Once the agent is done, the last edit is tried again after each Retry-After until Slack takes
 * it, so the answer ends exact. The agent is modelled here too (tokens at a fixed pace from the
 * start), since what is compared is how the text reaches Slack, not how it comes from the agent.
 */

const TICK_MS = 2_000;

export interface PeerThread {
  channel: string;
  root: string;
  /** When each token is written (ms). */
  emittedAt: number[];
}

export interface PeerRun {
  /** Calls Slack refused for rate (429). */
  refused: number;
}

async function call(
  url: string,
  token: string,
  method: string,
  body: Record<string, unknown>,
): Promise<{ status: number; retryAfter: number; ts?: string }> {
  const res = await fetch(`${url}${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const answer = (await res.json()) as { ok?: boolean; ts?: string; error?: string };
  if (res.status === 200 && answer.ok !== true) throw new Error(`peer ${method}: ${answer.error}`);
  return {
    status: res.status,
    retryAfter: Number(res.headers.get('retry-after') ?? '1'),
    ...(answer.ts === undefined ? {} : { ts: answer.ts }),
  };
}

/** Shows each thread's `text(tokens written by now)` by the peer's rule; resolves when all are exact. */
export async function runPeer(
  url: string,
  token: string,
  threads: readonly PeerThread[],
  tokens: readonly string[],
): Promise<PeerRun> {
  let refused = 0;
  const textAt = (t: PeerThread, now: number): string => {
    let n = 0;
    while (n < t.emittedAt.length && (t.emittedAt[n] as number) <= now) n++;
    return tokens.slice(0, n).join('').trimEnd();
  };
  const one = async (t: PeerThread): Promise<void> => {
    let ts: string | undefined;
    const last = t.emittedAt.at(-1) ?? 0;
    let next = (t.emittedAt[0] ?? Date.now()) + TICK_MS;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
      const now = Date.now();
      const done = now >= last;
      const text = textAt(t, now);
      const r =
        ts === undefined
          ? await call(url, token, 'chat.postMessage', { channel: t.channel, thread_ts: t.root, text })
          : await call(url, token, 'chat.update', { channel: t.channel, ts, text });
      if (r.status === 429) {
        refused++;
        // The final edit must land: it waits as Slack asks; an interim one waits for the next tick.
        next = done ? Date.now() + r.retryAfter * 1000 : next + TICK_MS;
        continue;
      }
      if (ts === undefined) ts = r.ts;
      if (done) return;
      next += TICK_MS;
    }
  };
  await Promise.all(threads.map(one));
  return { refused };
}
