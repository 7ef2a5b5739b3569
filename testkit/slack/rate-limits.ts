import { DEFAULT_RATE_LIMITS, DEFAULT_WORKSPACE_UPDATES_PER_MINUTE, type FakeSlackOptions } from './api.js';
import { type Args, str } from './values.js';

/**
 * Slack's rate limits: a sliding minute per method (per channel for chat.postMessage), plus the
 * workspace-wide chat.update budget. A call over a limit is answered 429 with Retry-After.
 */

class Windows {
  private readonly hits = new Map<string, number[]>();

  /** Seconds to wait if `key` already had `perMinute` hits in the last 60 s, else undefined. */
  wait(key: string, perMinute: number, now: number): number | undefined {
    if (!Number.isFinite(perMinute)) return undefined;
    const list = (this.hits.get(key) ?? []).filter((t) => t > now - 60_000);
    this.hits.set(key, list);
    if (list.length < perMinute) return undefined;
    const oldest = list[list.length - perMinute] ?? now;
    return Math.max(1, Math.ceil((oldest + 60_000 - now) / 1000));
  }

  hit(key: string, now: number): void {
    const list = this.hits.get(key) ?? [];
    list.push(now);
    this.hits.set(key, list);
  }
}

export class RateLimits {
  private readonly limits: Record<string, number>;
  private readonly updatesPerMinute: number;
  private readonly enabled: boolean;
  private readonly windows = new Windows();

  constructor(options: FakeSlackOptions) {
    this.enabled = options.rateLimitsEnabled ?? true;
    const { workspaceUpdatesPerMinute, ...perMethod } = options.rateLimits ?? {};
    this.updatesPerMinute = workspaceUpdatesPerMinute ?? DEFAULT_WORKSPACE_UPDATES_PER_MINUTE;
    this.limits = { ...DEFAULT_RATE_LIMITS };
    for (const [method, v] of Object.entries(perMethod)) {
      if (typeof v === 'number') this.limits[method] = v;
      else if (v !== undefined) this.limits[method] = v.perMinute;
    }
  }

  /** Seconds to wait before `method` may run again, or undefined: the call is counted and runs. */
  check(method: string, args: Args, now: number): number | undefined {
    if (!this.enabled) return undefined;
    const keys: Array<[string, number]> = [];
    const perMinute = this.limits[method];
    if (perMinute !== undefined) {
      // chat.postMessage's special limit is per channel; every other tier is per method per workspace.
      const key = method === 'chat.postMessage' ? `${method} ${str(args, 'channel') ?? ''}` : method;
      keys.push([key, perMinute]);
    }
    if (method === 'chat.update') keys.push(['workspace updates', this.updatesPerMinute]);
    let wait: number | undefined;
    for (const [key, limit] of keys) {
      const w = this.windows.wait(key, limit, now);
      if (w !== undefined) wait = Math.max(wait ?? 0, w);
    }
    if (wait !== undefined) return wait;
    for (const [key] of keys) this.windows.hit(key, now);
    return undefined;
  }
}
