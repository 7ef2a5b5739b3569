import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../core/clock.js';
import {
  checkLeaderTimings,
  LeaderElector,
  LeaderTimingsError,
  type LeaseRecord,
  type LeaseStore,
  type VersionedLease,
} from './leader.js';

/**
 * The election algorithm on an in-memory lease with the API server's optimistic concurrency,
 * under a manual clock. test/integration/k8s-controller.test.ts runs it on a real Lease.
 */

class ManualClock implements Clock {
  #now = 1_000_000;
  #timers: Array<{ at: number; resolve: () => void }> = [];
  now(): number {
    return this.#now;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = { at: this.#now + ms, resolve };
      this.#timers.push(timer);
      signal?.addEventListener('abort', () => {
        this.#timers = this.#timers.filter((t) => t !== timer);
        reject(signal.reason);
      });
    });
  }
  /** Moves time forward in small steps, letting the loops run between them. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    while (this.#now < end) {
      this.#now = Math.min(end, this.#now + 50);
      const due = this.#timers.filter((t) => t.at <= this.#now);
      this.#timers = this.#timers.filter((t) => t.at > this.#now);
      for (const t of due) t.resolve();
      for (let i = 0; i < 20; i++) await Promise.resolve();
    }
  }
}

class MemoryLeaseStore implements LeaseStore {
  lease: VersionedLease | undefined;
  #version = 0;
  /** Fails every call while true: an API server that cannot be reached. */
  down = false;
  writes = 0;
  async get(): Promise<VersionedLease | undefined> {
    if (this.down) throw new Error('unreachable');
    return this.lease === undefined ? undefined : structuredClone(this.lease);
  }
  async create(record: LeaseRecord): Promise<VersionedLease> {
    if (this.down) throw new Error('unreachable');
    if (this.lease !== undefined) throw new Error('409 AlreadyExists');
    return this.#put(record);
  }
  async update(record: LeaseRecord, version: string): Promise<VersionedLease> {
    if (this.down) throw new Error('unreachable');
    if (this.lease?.version !== version) throw new Error('409 Conflict');
    return this.#put(record);
  }
  #put(record: LeaseRecord): VersionedLease {
    this.writes++;
    this.lease = { record: structuredClone(record), version: String(++this.#version) };
    return structuredClone(this.lease);
  }
}

const timings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
const logger = pino({ level: 'silent' });

function elector(store: LeaseStore, clock: Clock, identity: string, log: string[]) {
  return new LeaderElector({
    store,
    clock,
    identity,
    timings,
    logger,
    random: () => 0,
    onStartedLeading: () => log.push(`${identity} leads`),
    onStoppedLeading: () => log.push(`${identity} follows`),
  });
}

describe('LeaderElector', () => {
  it('elects exactly one of two candidates and keeps it while it renews', async () => {
    const clock = new ManualClock();
    const store = new MemoryLeaseStore();
    const log: string[] = [];
    const a = elector(store, clock, 'a', log);
    const b = elector(store, clock, 'b', log);
    a.start();
    await clock.advance(100);
    b.start();
    await clock.advance(10_000);
    expect([a.isLeader, b.isLeader]).toEqual([true, false]);
    expect(log).toEqual(['a leads']);
    expect(store.lease?.record.holderIdentity).toBe('a');
    await a.stop({ release: false });
    await b.stop({ release: false });
  });

  it('lets the other take over once a crashed leader’s lease expires, not before', async () => {
    const clock = new ManualClock();
    const store = new MemoryLeaseStore();
    const log: string[] = [];
    const a = elector(store, clock, 'a', log);
    const b = elector(store, clock, 'b', log);
    a.start();
    await clock.advance(100);
    b.start();
    await clock.advance(1000);
    await a.stop({ release: false }); // a kill: no release
    await clock.advance(2000);
    expect(b.isLeader).toBe(false);
    await clock.advance(2500);
    expect(b.isLeader).toBe(true);
    expect(store.lease?.record).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.stop();
  });

  it('hands over at once on release', async () => {
    const clock = new ManualClock();
    const store = new MemoryLeaseStore();
    const log: string[] = [];
    const a = elector(store, clock, 'a', log);
    const b = elector(store, clock, 'b', log);
    a.start();
    await clock.advance(100);
    b.start();
    await clock.advance(1000);
    await a.stop();
    expect(store.lease?.record.holderIdentity).toBe('');
    await clock.advance(1100);
    expect(b.isLeader).toBe(true);
    expect(log).toEqual(['a leads', 'a follows', 'b leads']);
    await b.stop();
  });

  it('stops leading when it cannot renew for renewDeadline, before anyone else may lead', async () => {
    const clock = new ManualClock();
    const store = new MemoryLeaseStore();
    const log: string[] = [];
    const a = elector(store, clock, 'a', log);
    a.start();
    await clock.advance(600);
    expect(a.isLeader).toBe(true);
    store.down = true;
    await clock.advance(1500);
    expect(a.isLeader).toBe(true);
    await clock.advance(1000);
    expect(a.isLeader).toBe(false);
    expect(log).toEqual(['a leads', 'a follows']);
    store.down = false;
    await clock.advance(1000);
    expect(a.isLeader).toBe(true);
    await a.stop();
  });

  it('checks its timings as client-go does', () => {
    const longerLease = () =>
      checkLeaderTimings({ leaseDurationMs: 2000, renewDeadlineMs: 2000, retryPeriodMs: 500 });
    expect(longerLease).toThrow(LeaderTimingsError);
    expect(longerLease).toThrow(/leaseDurationMs/);
    const jitter = () =>
      checkLeaderTimings({ leaseDurationMs: 3000, renewDeadlineMs: 1000, retryPeriodMs: 900 });
    expect(jitter).toThrow(LeaderTimingsError);
    expect(jitter).toThrow(/1.2/);
  });
});
