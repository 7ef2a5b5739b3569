import type { Logger } from 'pino';
import { type Clock, systemClock } from '../core/clock.js';
import { InvalidConfigError } from '../core/errors.js';

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it
 * (docs/reference/real-apiserver.md, "Leader election against it"): acquire, renew every retry
 * period, give up leadership when no renewal succeeded for renewDeadline, take over a lease
 * whose holder stopped renewing for leaseDuration, and release on shutdown so another replica
 * takes over at once.
 *
 * Expiry is measured on the local clock from when this replica last saw the record change,
 * never from the server's renewTime, so clock skew between nodes does not matter.
 * Mutual exclusion is the resourceVersion precondition of every update (409 on a race).
 */

export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: Date;
  renewTime: Date;
  leaseTransitions: number;
}

export interface VersionedLease {
  record: LeaseRecord;
  /** resourceVersion: the precondition of the next update. */
  version: string;
}

/** Where the lease lives; the Kubernetes implementation is ./lease-store.ts. */
export interface LeaseStore {
  get(): Promise<VersionedLease | undefined>;
  /** Fails when the lease exists already. */
  create(record: LeaseRecord): Promise<VersionedLease>;
  /** Fails (409) when the lease changed since `version`. */
  update(record: LeaseRecord, version: string): Promise<VersionedLease>;
}

export interface LeaderTimings {
  /** How long others wait after the last renewal they saw before taking over. */
  leaseDurationMs: number;
  /** How long the leader keeps trying to renew before it stops leading. */
  renewDeadlineMs: number;
  /** Time between attempts. */
  retryPeriodMs: number;
}

/** controller-runtime's defaults. */
export const DEFAULT_LEADER_TIMINGS: LeaderTimings = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

const JITTER = 1.2;

export class LeaderTimingsError extends InvalidConfigError {}

/** client-go's own check: leaseDuration > renewDeadline > 1.2 × retryPeriod. */
export function checkLeaderTimings(t: LeaderTimings): void {
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) {
    throw new LeaderTimingsError('leaseDurationMs must be greater than renewDeadlineMs');
  }
  if (!(t.renewDeadlineMs > JITTER * t.retryPeriodMs)) {
    throw new LeaderTimingsError('renewDeadlineMs must be greater than 1.2 × retryPeriodMs');
  }
  if (t.leaseDurationMs < 1000)
    throw new LeaderTimingsError('leaseDurationMs must be at least 1000 (whole seconds)');
}

export interface LeaderElectorOptions {
  store: LeaseStore;
  identity: string;
  timings?: LeaderTimings;
  clock?: Clock;
  logger: Logger;
  /** Called when this replica starts leading. */
  onStartedLeading: () => void;
  /** Called when it stops (lost the lease, or released it on stop). */
  onStoppedLeading: () => void;
  random?: () => number;
}

function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.leaseTransitions === b.leaseTransitions &&
    a.renewTime.getTime() === b.renewTime.getTime() &&
    a.acquireTime.getTime() === b.acquireTime.getTime()
  );
}

export class LeaderElector {
  readonly #o: Required<Omit<LeaderElectorOptions, 'timings'>> & { timings: LeaderTimings };
  #leading = false;
  #observed: VersionedLease | undefined;
  #observedAt = 0;
  #loop: Promise<void> | undefined;
  #abort = new AbortController();

  constructor(options: LeaderElectorOptions) {
    const timings = options.timings ?? DEFAULT_LEADER_TIMINGS;
    checkLeaderTimings(timings);
    this.#o = { clock: systemClock, random: Math.random, ...options, timings };
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  get identity(): string {
    return this.#o.identity;
  }

  start(): void {
    if (this.#loop !== undefined) return;
    this.#abort = new AbortController();
    this.#loop = this.#run(this.#abort.signal);
  }

  /**
   * Stops campaigning. With `release` (a graceful shutdown) the lease is handed back so another
   * replica leads at once; without it, others wait for the lease to expire, as after a crash.
   */
  async stop(options: { release: boolean } = { release: true }): Promise<void> {
    this.#abort.abort();
    await this.#loop;
    this.#loop = undefined;
    const wasLeading = this.#leading;
    this.#setLeading(false);
    if (options.release && wasLeading) await this.#release();
  }

  async #run(signal: AbortSignal): Promise<void> {
    const { clock, timings } = this.#o;
    while (!signal.aborted) {
      // Acquire: try every retry period (jittered, so replicas do not move in step).
      while (!signal.aborted && !(await this.#tryAcquireOrRenew())) {
        if (!(await this.#sleep(timings.retryPeriodMs * (1 + this.#o.random() * JITTER), signal))) return;
      }
      if (signal.aborted) return;
      this.#setLeading(true);
      // Renew: every retry period; leadership ends when no renewal succeeded for renewDeadline.
      let lastRenew = clock.now();
      while (!signal.aborted) {
        if (!(await this.#sleep(timings.retryPeriodMs, signal))) return;
        if (await this.#tryAcquireOrRenew()) {
          lastRenew = clock.now();
        } else if (clock.now() - lastRenew >= timings.renewDeadlineMs) {
          this.#o.logger.warn(
            { identity: this.#o.identity },
            'leader election: lease lost, no longer leading',
          );
          this.#setLeading(false);
          break;
        }
      }
    }
  }

  async #sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    try {
      await this.#o.clock.sleep(ms, signal);
      return true;
    } catch {
      return false;
    }
  }

  #setLeading(leading: boolean): void {
    if (this.#leading === leading) return;
    this.#leading = leading;
    this.#o.logger.info(
      { identity: this.#o.identity, leading },
      leading ? 'leader election: leading' : 'leader election: following',
    );
    if (leading) this.#o.onStartedLeading();
    else this.#o.onStoppedLeading();
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { store, clock, identity, timings } = this.#o;
    const now = new Date(clock.now());
    const durationSeconds = Math.ceil(timings.leaseDurationMs / 1000);
    try {
      // Fast path: still the holder by our own clock; renew the lease we hold.
      const held = this.#observed;
      if (
        this.#leading &&
        held !== undefined &&
        held.record.holderIdentity === identity &&
        clock.now() < this.#observedAt + timings.leaseDurationMs
      ) {
        try {
          this.#remember(
            await store.update(
              { ...held.record, renewTime: now, leaseDurationSeconds: durationSeconds },
              held.version,
            ),
          );
          return true;
        } catch {
          // Fall through to the slow path: read what is there now.
        }
      }
      const current = await store.get();
      if (current === undefined) {
        const created = await store.create({
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: 0,
        });
        this.#remember(created);
        return true;
      }
      if (this.#observed === undefined || !sameRecord(this.#observed.record, current.record)) {
        this.#observed = current;
        this.#observedAt = clock.now();
      } else {
        this.#observed = current;
      }
      const holder = current.record.holderIdentity;
      const expiresAt = this.#observedAt + current.record.leaseDurationSeconds * 1000;
      if (holder !== '' && holder !== identity && expiresAt > clock.now()) return false;
      const mine = holder === identity;
      const next: LeaseRecord = {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: mine ? current.record.acquireTime : now,
        renewTime: now,
        leaseTransitions: mine ? current.record.leaseTransitions : current.record.leaseTransitions + 1,
      };
      this.#remember(await store.update(next, current.version));
      return true;
    } catch (error) {
      // A conflict (someone else wrote first) or a transient API error: the next tick retries.
      this.#o.logger.debug({ err: error, identity }, 'leader election: attempt failed');
      return false;
    }
  }

  #remember(lease: VersionedLease): void {
    this.#observed = lease;
    this.#observedAt = this.#o.clock.now();
  }

  async #release(): Promise<void> {
    const { store, identity, clock } = this.#o;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const current = await store.get();
        if (current === undefined || current.record.holderIdentity !== identity) return;
        const now = new Date(clock.now());
        await store.update(
          {
            holderIdentity: '',
            leaseDurationSeconds: 1,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: current.record.leaseTransitions,
          },
          current.version,
        );
        this.#o.logger.info({ identity }, 'leader election: lease released');
        return;
      } catch (error) {
        this.#o.logger.warn({ err: error, identity }, 'leader election: release failed, retrying');
      }
    }
  }
}
