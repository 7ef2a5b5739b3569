import type { AgentClient, AgentRegistry, AgentRoute, BindingSettings, Dialect } from './ports.js';

/**
 * The registry of live Bindings: which agent client answers a Binding's sessions, and which
 * chat channels belong to which Binding. The control plane (the Kubernetes controller, or
 * local mode reading a file) writes it; the engine and the chat surfaces read it.
 *
 * Conflicts stay visible: a channel claimed by two Bindings belongs to neither until one lets
 * go, and `conflicts()` names them for the controller's status.
 */

export interface SlackRouting {
  /** Channel ids this Binding serves. */
  channels: readonly string[];
  /** Whether direct messages to the app reach this Binding. */
  allowDirectMessages: boolean;
  /** The workspace (team id) the channels are in; undefined: any workspace of the install. */
  teamId?: string;
}

export interface ToolApprovalSettings {
  enabled: boolean;
  /** Slack user group ids whose members may approve. */
  approverGroups: readonly string[];
}

export interface LiveBinding {
  /** 'namespace/name' */
  ref: string;
  client: AgentClient;
  dialect: Dialect;
  settings: BindingSettings;
  slack: SlackRouting;
  toolApprovals: ToolApprovalSettings;
}

export interface ChannelConflict {
  channelId: string;
  bindings: string[];
}

export class LiveRegistry implements AgentRegistry {
  readonly #bindings = new Map<string, LiveBinding>();
  #channels = new Map<string, string[]>();
  #dmBindings: string[] = [];
  readonly #listeners = new Set<() => void>();

  /** Adds or replaces a Binding (its client, settings and channels). */
  upsert(binding: LiveBinding): void {
    this.#bindings.set(binding.ref, binding);
    this.#reindex();
  }

  remove(ref: string): void {
    if (this.#bindings.delete(ref)) this.#reindex();
  }

  get(ref: string): LiveBinding | undefined {
    return this.#bindings.get(ref);
  }

  list(): LiveBinding[] {
    return [...this.#bindings.values()];
  }

  resolve(binding: string): AgentRoute | undefined {
    const live = this.#bindings.get(binding);
    if (live === undefined) return undefined;
    return {
      client: live.client,
      dialect: live.dialect,
      settings: { ...live.settings, toolApprovalsEnabled: live.toolApprovals.enabled },
    };
  }

  /** The Binding that owns a Slack channel; undefined when none does, or when two claim it. */
  forChannel(channelId: string, teamId?: string): LiveBinding | undefined {
    const claims = (this.#channels.get(channelId) ?? []).filter((ref) => {
      const team = this.#bindings.get(ref)?.slack.teamId;
      return team === undefined || teamId === undefined || team === teamId;
    });
    if (claims.length !== 1) return undefined;
    return this.#bindings.get(claims[0] ?? '');
  }

  /** The Binding that takes direct messages; undefined when none or several allow them. */
  forDirectMessages(teamId?: string): LiveBinding | undefined {
    const claims = this.#dmBindings.filter((ref) => {
      const team = this.#bindings.get(ref)?.slack.teamId;
      return team === undefined || teamId === undefined || team === teamId;
    });
    return claims.length === 1 ? this.#bindings.get(claims[0] ?? '') : undefined;
  }

  /** Channels claimed by more than one Binding, for status conditions. */
  conflicts(): ChannelConflict[] {
    return [...this.#channels.entries()]
      .filter(([, refs]) => refs.length > 1)
      .map(([channelId, refs]) => ({ channelId, bindings: [...refs].sort() }));
  }

  /** Called after every change (surfaces may refresh caches). Returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #reindex(): void {
    const channels = new Map<string, string[]>();
    const dms: string[] = [];
    for (const binding of this.#bindings.values()) {
      for (const channel of new Set(binding.slack.channels)) {
        const refs = channels.get(channel) ?? [];
        refs.push(binding.ref);
        channels.set(channel, refs);
      }
      if (binding.slack.allowDirectMessages) dms.push(binding.ref);
    }
    this.#channels = channels;
    this.#dmBindings = dms;
    for (const listener of this.#listeners) listener();
  }
}
