import { describe, expect, it } from 'vitest';
import { ManualClock, settle } from '../../../../test/surfaces/slack/manual-clock.js';
import { InvalidConfigError } from '../../../core/errors.js';
import { BudgetBook, BudgetClosedError, DEFAULT_METHOD_BUDGETS, RateBudget } from './budget.js';

/** Takes for `requester` in a loop, recording when each was granted, until stopped. */
function taker(budget: RateBudget, clock: ManualClock, requester: string, log: Array<[string, number]>) {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        await budget.take(requester);
      } catch {
        return;
      }
      log.push([requester, clock.now()]);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      budget.close();
      await loop;
    },
  };
}

describe('RateBudget', () => {
  it('lets the burst go at once, then one call per 60/perMinute seconds: never more than perMinute + burst a minute', async () => {
    const clock = new ManualClock();
    const budget = new RateBudget({ perMinute: 45, burst: 5 }, clock);
    const log: Array<[string, number]> = [];
    const t = taker(budget, clock, 'a', log);
    await settle();
    expect(log).toHaveLength(5);
    await clock.advance(60_200, 100);
    // 5 at once, then 45 over the minute.
    expect(log.length).toBe(50);
    const start = log[0]?.[1] ?? 0;
    for (let i = 0; i < log.length; i++) {
      const at = log[i]?.[1] ?? 0;
      expect(log.filter(([, when]) => when >= at && when < at + 60_000).length).toBeLessThanOrEqual(50);
    }
    const gaps = log.slice(6).map(([, at], i) => at - (log[i + 5]?.[1] ?? start));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(1_300);
    await t.stop();
  });

  it('shares the budget fairly: waiting requesters are served in turn', async () => {
    const clock = new ManualClock();
    const budget = new RateBudget({ perMinute: 60, burst: 1 }, clock);
    const log: Array<[string, number]> = [];
    const takers = ['a', 'b', 'c'].map((r) => taker(budget, clock, r, log));
    await clock.advance(12_000, 100);
    const order = log.map(([who]) => who).join('');
    expect(order.length).toBeGreaterThanOrEqual(12);
    expect(order.slice(0, 12)).toBe('abcabcabcabc');
    for (const t of takers) await t.stop();
  });

  it('serves urgent takes first, and a waiting take can be promoted', async () => {
    const clock = new ManualClock();
    const budget = new RateBudget({ perMinute: 60, burst: 1 }, clock);
    await budget.take('warm-up');
    const order: string[] = [];
    const track = (who: string, p: Promise<void>) => p.then(() => order.push(who));
    const all = [
      track('slow-1', budget.take('slow-1')),
      track('slow-2', budget.take('slow-2')),
      track('final', budget.take('final', { urgent: true })),
      track('late', budget.take('late')),
    ];
    budget.promote('late');
    await clock.advance(5_000, 100);
    await Promise.all(all);
    expect(order).toEqual(['final', 'late', 'slow-1', 'slow-2']);
  });

  it('after a 429 lets nothing out for Retry-After, then resumes at the sustained rate, not in a burst', async () => {
    const clock = new ManualClock();
    const budget = new RateBudget({ perMinute: 30, burst: 5 }, clock);
    const log: Array<[string, number]> = [];
    budget.pause(10_000);
    const paused = clock.now();
    const t = taker(budget, clock, 'a', log);
    await clock.advance(9_900, 100);
    expect(log).toHaveLength(0);
    await clock.advance(6_500, 100);
    // Empty at the end of the pause: the first call waits one refill (2 s at 30 a minute).
    expect(log.length).toBe(3);
    expect((log[0]?.[1] ?? 0) - paused).toBeGreaterThanOrEqual(12_000);
    await t.stop();
  });

  it('tryTake takes only a free token nobody waits for; refund gives one back', async () => {
    const clock = new ManualClock();
    const budget = new RateBudget({ perMinute: 60, burst: 2 }, clock);
    expect(budget.tryTake()).toBe(true);
    expect(budget.tryTake()).toBe(true);
    expect(budget.tryTake()).toBe(false);
    budget.refund();
    expect(budget.tryTake()).toBe(true);
    const waiting = budget.take('x');
    expect(budget.waiting).toBe(1);
    await clock.advance(1_000, 100);
    expect(budget.tryTake()).toBe(false);
    await waiting;
  });

  it('rejects waiting takes when closed, and a take whose signal aborts', async () => {
    const clock = new ManualClock();
    const budget = new RateBudget({ perMinute: 1, burst: 1 }, clock);
    await budget.take('first');
    const controller = new AbortController();
    const aborted = budget.take('a', { signal: controller.signal });
    const closed = budget.take('b');
    const reason = new Error('gone');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    budget.close();
    await expect(closed).rejects.toBeInstanceOf(BudgetClosedError);
    await expect(closed).rejects.toMatchObject({ code: 'budget_closed' });
    await expect(budget.take('c')).rejects.toBeInstanceOf(BudgetClosedError);
  });

  it('a closed book refuses every take, in the budgets it had and in those first asked for after', async () => {
    const book = new BudgetBook(new ManualClock());
    const known = book.for('chat.postMessage', 'T1', 'C1');
    while (known.tryTake()) {
      // Spend the burst, so the next take waits.
    }
    const waiting = known.take('second');
    book.close();
    await expect(waiting).rejects.toBeInstanceOf(BudgetClosedError);
    await expect(book.for('chat.postMessage', 'T1', 'C1').take('third')).rejects.toBeInstanceOf(
      BudgetClosedError,
    );
    // A channel nobody had posted to yet: before, the book made it a fresh, open budget.
    await expect(book.for('chat.postMessage', 'T1', 'C2').take('fourth')).rejects.toBeInstanceOf(
      BudgetClosedError,
    );
  });

  it('refuses a rate that could never grant a call', () => {
    expect(() => new RateBudget({ perMinute: 0, burst: 1 }, new ManualClock())).toThrow(InvalidConfigError);
    expect(() => new RateBudget({ perMinute: 10, burst: 0 }, new ManualClock())).toThrow(InvalidConfigError);
  });
});

describe('BudgetBook', () => {
  it('keeps one budget per method and workspace, and per channel for chat.postMessage', () => {
    const book = new BudgetBook(new ManualClock());
    expect(book.for('chat.update', 'T1', 'C1')).toBe(book.for('chat.update', 'T1', 'C2'));
    expect(book.for('chat.update', 'T1', undefined)).not.toBe(book.for('chat.update', 'T2', undefined));
    expect(book.for('chat.postMessage', 'T1', 'C1')).not.toBe(book.for('chat.postMessage', 'T1', 'C2'));
    expect(book.for('chat.update', 'T1', undefined)).not.toBe(book.for('chat.delete', 'T1', undefined));
    book.close();
  });

  it('lets ten answers that begin together all stream, and end together, within Tier 2’s 20 a minute', async () => {
    // Slack allows 20 chat.startStream (and chat.stopStream) a minute per workspace; a thread
    // that finds no start token is answered by edits from the budget all such threads share.
    const clock = new ManualClock();
    const book = new BudgetBook(clock);
    for (const method of ['chat.startStream', 'chat.stopStream']) {
      const budget = book.for(method, 'T1', undefined);
      let now = 0;
      while (budget.tryTake()) now++;
      expect(now, method).toBeGreaterThanOrEqual(10);
      let inTheMinute = now;
      for (let s = 0; s < 60; s++) {
        await clock.advance(1_000, 1_000);
        while (budget.tryTake()) inTheMinute++;
      }
      expect(inTheMinute, method).toBeLessThanOrEqual(20);
      const rate = DEFAULT_METHOD_BUDGETS[method];
      expect((rate?.perMinute ?? 0) + (rate?.burst ?? 0), method).toBeLessThanOrEqual(20);
    }
    book.close();
  });
});
