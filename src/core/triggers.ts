import { createHash, timingSafeEqual } from 'node:crypto';
import { KourierError } from './errors.js';
import type { SessionKey } from './store.js';

/**
 * Triggers: what starts a thread without a person — an Alertmanager notification, a generic
 * webhook, a schedule (docs/triggers.md). This file holds what the pieces share without
 * depending on each other: the configuration the control plane resolves (k8s/ and local/ write
 * the directory, triggers/ reads it) and the port through which triggers/ opens threads in a chat
 * surface (surfaces/ implement it).
 */

export const TRIGGER_KINDS = ['alertmanager', 'webhook', 'schedule'] as const;
export type TriggerKind = (typeof TRIGGER_KINDS)[number];

/** What a resolved alert group does in its thread: a notice only, or a notice and one more turn. */
export type ResolvedAction = 'notice' | 'turn';

export interface TriggerSchedule {
  /** Five fields (minute hour day-of-month month day-of-week), read by croner. */
  cron: string;
  /** An IANA time zone name ('Europe/Berlin', 'UTC'). */
  timeZone: string;
}

/**
 * Where a trigger's threads go: a channel of the Binding on a chat surface, or (unset) the web
 * chat.
 */
export interface TriggerTarget {
  /** The surface ('slack', 'teams'); unset: the web chat. */
  surface?: string;
  /** The channel on that surface (one of the Binding's). */
  channel?: string;
  /** The channel's workspace (Slack's team, Teams' tenant), when the Binding names one. */
  workspaceId?: string;
}

/** Why a trigger cannot take a delivery now (shown in status, answered with 503). */
export interface TriggerProblem {
  reason: string;
  message: string;
}

/** One trigger of a Binding as the control plane resolved it. */
export interface TriggerConfig {
  /** 'namespace/name' of the Binding. */
  binding: string;
  name: string;
  kind: TriggerKind;
  instruction: string;
  onResolved: ResolvedAction;
  target: TriggerTarget;
  schedule?: TriggerSchedule;
  /**
   * sha256 of the bearer token a webhook must present. The token itself is not kept: the
   * digest is all a constant-time comparison needs.
   */
  tokenDigest?: Buffer;
  /** The Binding's storm limit: new threads its triggers may open per minute. */
  threadsPerMinute: number;
  /** Set while the trigger cannot take deliveries (the Binding is not ready, a Secret is missing). */
  problem?: TriggerProblem;
}

export const TRIGGER_PATH_PREFIX = '/triggers/';

/** The URL path a webhook trigger is served at: /triggers/<namespace>/<binding>/<name>. */
export function triggerPath(binding: string, name: string): string {
  return `${TRIGGER_PATH_PREFIX}${binding}/${name}`;
}

export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * Whether `presented` is the trigger's token, in time that does not depend on where the two
 * differ: both sides are digests of the same length, compared with timingSafeEqual.
 */
export function tokenMatches(presented: string, digest: Buffer): boolean {
  return timingSafeEqual(tokenDigest(presented), digest);
}

/**
 * Every Binding's triggers, fed by the control plane on every replica (a delivery may land on
 * any of them) and read by triggers/. A Binding that exists but cannot be served still has its
 * triggers here, each with a problem: a sender with the token then hears 503 (retry), not 401.
 */
export class TriggerDirectory {
  readonly #bindings = new Map<string, ReadonlyMap<string, TriggerConfig>>();
  readonly #listeners = new Set<() => void>();

  /** Sets a Binding's triggers (none: the Binding has no triggers). */
  set(binding: string, triggers: readonly TriggerConfig[]): void {
    const next = new Map(triggers.map((t) => [t.name, t] as const));
    const before = this.#bindings.get(binding);
    if (before !== undefined && sameTriggers(before, next)) return;
    if (next.size === 0 && before === undefined) return;
    if (next.size === 0) this.#bindings.delete(binding);
    else this.#bindings.set(binding, next);
    this.#changed();
  }

  remove(binding: string): void {
    if (this.#bindings.delete(binding)) this.#changed();
  }

  get(binding: string, name: string): TriggerConfig | undefined {
    return this.#bindings.get(binding)?.get(name);
  }

  /** Every trigger, by Binding then name. */
  list(): TriggerConfig[] {
    return [...this.#bindings.values()].flatMap((triggers) => [...triggers.values()]);
  }

  /** Called after every change (the scheduler looks at its schedules again). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }
}

function sameTriggers(a: ReadonlyMap<string, TriggerConfig>, b: ReadonlyMap<string, TriggerConfig>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, x] of a) {
    const y = b.get(name);
    if (y === undefined || fingerprint(x) !== fingerprint(y)) return false;
  }
  return true;
}

function fingerprint(t: TriggerConfig): string {
  return JSON.stringify([
    t.kind,
    t.instruction,
    t.onResolved,
    t.target,
    t.schedule ?? null,
    t.tokenDigest?.toString('hex') ?? null,
    t.threadsPerMinute,
    t.problem ?? null,
  ]);
}

// ---- the chat port ------------------------------------------------------------------------------

/** One line of a trigger's message: a label and its value, both plain text. */
export interface TriggerLine {
  label: string;
  text: string;
  /**
   * Shown literally (a code span on Slack): a link or an id from the payload, readable and
   * copyable but never a clickable link dressed up as something else.
   */
  verbatim?: boolean;
}

/** A message a trigger posts: a thread's root summary, a resolution, a storm thread's entry. */
export interface TriggerMessage {
  title: string;
  lines: TriggerLine[];
}

/** Where in a chat a trigger's thread goes: the surface, its workspace and channel. */
export interface TriggerPlace {
  surface: string;
  workspaceId: string;
  channelId: string;
}

/**
 * Identifies a trigger's post so an attempt that may have posted it already finds it instead of
 * posting it again (write-before-effect: the attempt is recorded before the post).
 */
export interface PostRef {
  /** Unique per post: the piece of work it belongs to. */
  id: string;
  /** No earlier attempt can have posted before this (ms since epoch). */
  since: number;
  /** An earlier attempt may have posted it: look for it first. */
  recover: boolean;
}

/** What triggers/ needs of a chat surface: starting a thread itself, and posting in one. */
export interface TriggerChat {
  /** Where the trigger's threads go now; undefined when no running surface can take them. */
  place(trigger: TriggerConfig): TriggerPlace | undefined;
  /** Posts the root of a new thread; returns the thread's session key. */
  startThread(place: TriggerPlace, message: TriggerMessage, ref: PostRef): Promise<SessionKey>;
  /** Posts a message in a thread the trigger started. */
  postInThread(key: SessionKey, message: TriggerMessage, ref: PostRef): Promise<void>;
}

/** The chat refused a trigger's post for good (no such channel, not a member): retrying will not help. */
export class TriggerPostRefusedError extends KourierError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('trigger_post_refused', message, options);
  }
}

// ---- what is counted ----------------------------------------------------------------------------

/**
 * What triggers/ reports for metrics (observability's BrokerMetrics implements it). Labels are
 * bounded: `binding` is a configured Binding or '' when the path named none.
 */
export interface TriggerObserver {
  /** A delivery (or a schedule's run) and how it ended: opened, continued, duplicate, invalid, … */
  triggerDelivery(binding: string, kind: string, result: string): void;
  triggerThreadOpened(binding: string, kind: string): void;
  /** An alert group beyond the Binding's storm limit: it joined the storm thread. */
  triggerThrottled(binding: string): void;
  /** A piece of work (a root, a turn, a resolution) that could not be done, by reason. */
  triggerWorkFailed(binding: string, reason: string): void;
}
