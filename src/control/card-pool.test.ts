import { describe, expect, it, vi } from 'vitest';
import type { AgentCardInfo } from '../a2a/card.js';
import { CardChecker, type CardSource } from './card-check.js';
import { CardCheckPool } from './card-pool.js';

const CARD: AgentCardInfo = {
  name: 'a',
  description: '',
  agentVersion: '1',
  protocolVersion: '1.0',
  cardFormat: '1.0',
  streaming: true,
  extensions: [],
  jsonRpcInterfaces: [],
  skills: [],
};

/** A card source that answers at once, or never (until released). */
function source(kind: 'fast' | 'hang'): CardSource & { reads: number; release(): void } {
  let release: () => void = () => undefined;
  const hung = new Promise<AgentCardInfo>((resolve) => {
    release = () => resolve(CARD);
  });
  const s = {
    reads: 0,
    release: () => release(),
    card: () => {
      s.reads++;
      return kind === 'fast' ? Promise.resolve(CARD) : hung;
    },
    invalidateCard: () => undefined,
  };
  return s;
}

function pool(checked: string[], options: { concurrency?: number; perNamespace?: number } = {}) {
  const checker = new CardChecker({ retryBaseMs: 1000, retryMaxMs: 1000, recheckMs: 60_000 });
  return {
    checker,
    pool: new CardCheckPool(checker, {
      concurrency: options.concurrency ?? 4,
      perNamespace: options.perNamespace ?? 2,
      onChecked: (ref) => checked.push(ref),
    }),
  };
}

describe('card reads off the reconcile workers, fair between namespaces', () => {
  it('a namespace whose agents never answer takes at most its own slots; another namespace is read at once', async () => {
    const checked: string[] = [];
    const { pool: p, checker } = pool(checked);
    const slow = Array.from({ length: 10 }, () => source('hang'));
    for (const [i, s] of slow.entries()) p.request(`team-slow/b${i}`, s, 'f');
    const fast = source('fast');
    p.request('team-fast/chat', fast, 'f');
    await vi.waitFor(() => expect(checked).toEqual(['team-fast/chat']));
    expect(checker.current('team-fast/chat', 'f')?.outcome.ok).toBe(true);
    // Only two of the slow namespace's reads ever started.
    expect(slow.reduce((n, s) => n + s.reads, 0)).toBe(2);
    expect(p.running).toBe(2);
    // When they end, the next two start: the namespace drains at its own pace.
    slow[0]?.release();
    slow[1]?.release();
    await vi.waitFor(() => {
      expect(checked).toContain('team-slow/b0');
      expect(slow.reduce((n, s) => n + s.reads, 0)).toBe(4);
    });
    p.stop();
  });

  it('reads a ref once however often it is asked, and again when its configuration changed mid-read', async () => {
    const checked: string[] = [];
    const { pool: p } = pool(checked);
    const s = source('hang');
    p.request('ns/a', s, 'one');
    p.request('ns/a', s, 'one');
    p.request('ns/a', s, 'two');
    expect(s.reads).toBe(1);
    s.release();
    await p.idle();
    expect(checked).toEqual(['ns/a', 'ns/a']);
    expect(s.reads).toBe(2);
  });

  it('forgets a waiting request and, once stopped, reports nothing', async () => {
    const checked: string[] = [];
    const { pool: p } = pool(checked, { perNamespace: 1 });
    const first = source('hang');
    p.request('ns/a', first, 'f');
    p.request('ns/b', source('fast'), 'f');
    p.forget('ns/b');
    p.stop();
    first.release();
    // A negative: what would have been reported had a turn of the loop to arrive.
    await new Promise((r) => setTimeout(r, 20));
    expect(checked).toEqual([]);
  });
});
