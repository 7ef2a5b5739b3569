/**
 * What a late sample of the latency benchmark overlapped: the broker process's garbage
 * collections (perf_hooks 'gc' entries) and its SQLite transactions (BEGIN … COMMIT on the
 * event loop, timed by wrapping DatabaseSync#exec in this child only). A first chunk that
 * waited while one of them ran was held up by it; one that overlapped neither waited for the
 * loop's other work or for the OS (on a shared machine, other processes). Diagnosis printed
 * under the figure, not a figure.
 */

import { openSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import { readWalIndex } from '../src/store/sqlite/checkpoint-worker.js';

interface Span {
  /** Start and end on the monotonic clock, in ns (process.hrtime.bigint()). */
  from: bigint;
  to: bigint;
  kind: string;
}

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'gc.minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'gc.major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'gc.incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'gc.weakcb',
};

export interface StallReport {
  /** Late samples (over the threshold) by what covered most of their wait (a third at least). */
  lateBy: Record<string, number>;
  late: number;
  /** The longest spans of each kind seen while recording, in ms. */
  longestMs: Record<string, number>;
  /** How many spans of each kind, and their total time, in ms. */
  totals: Record<string, { count: number; ms: number; over5ms: number }>;
}

export class StallRecorder {
  readonly #spans: Span[] = [];
  readonly #observer: PerformanceObserver;
  #since = 0n;
  readonly #offsetNs: bigint;
  #recording = false;
  readonly #restoreExec: () => void;

  constructor() {
    // performance.now() and hrtime share the monotonic clock; only their origins differ.
    this.#offsetNs = process.hrtime.bigint() - BigInt(Math.round(performance.now() * 1e6));
    this.#observer = new PerformanceObserver((list) => {
      if (!this.#recording) return;
      for (const entry of list.getEntries()) {
        const detail = (entry as unknown as { detail?: { kind?: number } }).detail;
        const from = this.#offsetNs + BigInt(Math.round(entry.startTime * 1e6));
        const to = from + BigInt(Math.round(entry.duration * 1e6));
        // Entries arrive after the fact: one that ended before the recording began is not its.
        if (to < this.#since) continue;
        this.#spans.push({ from, to, kind: GC_KINDS[detail?.kind ?? -1] ?? 'gc.other' });
      }
    });
    this.#observer.observe({ entryTypes: ['gc'] });
    const proto = DatabaseSync.prototype;
    const exec = proto.exec;
    let begun: bigint | undefined;
    const spans = this.#spans;
    const self = this;
    // A COMMIT that started the WAL over (its last frame lower after than before) is told apart:
    // that commit fsyncs the new log header on the event loop.
    const lastFrame = (db: DatabaseSync): number | undefined => {
      if (!self.#recording) return undefined;
      const location = db.location();
      if (location === null) return undefined;
      try {
        shm ??= openSync(`${location}-shm`, 'r');
        return readWalIndex(shm)?.mxFrame;
      } catch {
        return undefined;
      }
    };
    let shm: number | undefined;
    proto.exec = function (this: DatabaseSync, sql: string): void {
      if (sql === 'BEGIN IMMEDIATE') begun = process.hrtime.bigint();
      const before = sql === 'COMMIT' ? lastFrame(this) : undefined;
      const at = process.hrtime.bigint();
      exec.call(this, sql);
      if (sql === 'COMMIT' && begun !== undefined) {
        const end = process.hrtime.bigint();
        if (self.#recording) {
          const after = lastFrame(this);
          const restarted = before !== undefined && after !== undefined && after < before;
          spans.push({ from: begun, to: at, kind: 'sqlite.statements' });
          spans.push({
            from: at,
            to: end,
            kind: restarted ? 'sqlite.commit-restarting-log' : 'sqlite.commit',
          });
        }
        begun = undefined;
      }
    };
    this.#restoreExec = () => {
      proto.exec = exec;
    };
  }

  start(): void {
    this.#since = process.hrtime.bigint();
    this.#recording = true;
  }

  stop(): void {
    this.#recording = false;
  }

  close(): void {
    this.#observer.disconnect();
    this.#restoreExec();
  }

  /** Each sample is [written at, seen at] in ns on the monotonic clock. */
  report(samples: Array<[bigint, bigint]>, thresholdMs: number): StallReport {
    const lateBy: Record<string, number> = {};
    let late = 0;
    const spans = [...this.#spans].sort((a, b) => (a.from < b.from ? -1 : 1));
    for (const [from, to] of samples) {
      if (Number(to - from) / 1e6 <= thresholdMs) continue;
      late++;
      // The kind that covered most of the wait, if it covered at least a third of it.
      const covered = new Map<string, number>();
      for (const s of spans) {
        if (s.from >= to || s.to <= from) continue;
        const overlap = Math.min(Number(s.to), Number(to)) - Math.max(Number(s.from), Number(from));
        covered.set(s.kind, (covered.get(s.kind) ?? 0) + overlap);
      }
      let kind = 'neither';
      let most = Number(to - from) / 3;
      for (const [k, v] of covered) {
        if (v > most) {
          kind = k;
          most = v;
        }
      }
      lateBy[kind] = (lateBy[kind] ?? 0) + 1;
    }
    const longestMs: Record<string, number> = {};
    const totals: Record<string, { count: number; ms: number; over5ms: number }> = {};
    for (const s of spans) {
      const ms = Number(s.to - s.from) / 1e6;
      longestMs[s.kind] = Math.max(longestMs[s.kind] ?? 0, ms);
      const t = totals[s.kind] ?? { count: 0, ms: 0, over5ms: 0 };
      totals[s.kind] = t;
      t.count++;
      if (ms > 5) t.over5ms++;
      t.ms += ms;
    }
    return { lateBy, late, longestMs, totals };
  }
}
