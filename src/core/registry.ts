import type { AgentClient, AgentRegistry, AgentRoute, BindingSettings, Dialect } from './ports.js';

/**
 * The registry of live Bindings: which agent client answers a Binding's sessions, and which
 * chat channels belong to which Binding on each surface. The control plane (the Kubernetes
 * controller, or local mode reading a file) writes it; the engine and the chat surfaces read it.
 *
 * Routing is keyed by surface ('slack', …): a surface that routes by channel asks for its own
 * (`forChannel(surface, …)`); the registry knows nothing of any one surface. Conflicts stay
 * visible: a channel claimed by two Bindings on one surface belongs to neither until one lets
 * go, and `conflicts()` names them for the controller's status.
 */

/** Where a Binding is reached on one surface. */
export interface SurfaceRouting {
  /** Channel ids this Binding serves. */
  channels: readonly string[];
  /** Whether direct messages to the app reach this Binding. */
  allowDirectMessages: boolean;
  /** The workspace the channels are in (Slack's team id); undefined: any workspace of the install. */
  workspaceId?: string;
  /** Its short name on a channel several Bindings share (each one's own). */
  handle?: string;
  /** Whether the feedback on an answer is sent to the agent on the next turn (`feedback.toAgent`). */
  feedbackToAgent?: boolean;
}

/** A Binding's routing per surface; a surface it has none for does not route to it. */
export type SurfaceRoutes = Readonly<Record<string, SurfaceRouting>>;

export interface ToolApprovalSettings {
  enabled: boolean;
  /** Slack user group ids whose members may approve. */
  approverGroups: readonly string[];
  /** People who may approve, named one by one (Slack user ids). */
  approvers: readonly string[];
  /**
   * Who may approve on a surface whose people and groups have ids of another kind, by surface
   * name (Microsoft Teams: Entra group ids, and Entra object ids or emails).
   */
  perSurface?: Readonly<Record<string, { approverGroups: readonly string[]; approvers: readonly string[] }>>;
}

export interface LiveBinding {
  /** 'namespace/name' */
  ref: string;
  client: AgentClient;
  dialect: Dialect;
  settings: BindingSettings;
  routes: SurfaceRoutes;
  toolApprovals: ToolApprovalSettings;
}

/** Which Binding owns a channel of a surface, or takes its direct messages. `LiveRegistry` is one. */
export interface ChannelDirectory {
  forChannel(surface: string, channelId: string, workspaceId?: string): { ref: string } | undefined;
  forDirectMessages(surface: string, workspaceId?: string): { ref: string } | undefined;
  /**
   * The Bindings sharing a channel, each with its handle, when several claim it in the
   * workspace and every one has a handle of its own; undefined otherwise.
   */
  sharedChannel?(surface: string, channelId: string, workspaceId?: string): SharedClaim[] | undefined;
}

export interface SharedClaim {
  ref: string;
  handle: string;
}

export interface ChannelConflict {
  surface: string;
  channelId: string;
  bindings: string[];
}

export class LiveRegistry implements AgentRegistry, ChannelDirectory {
  readonly #bindings = new Map<string, LiveBinding>();
  /** By `${surface}\n${channelId}`: the Bindings that claim it. */
  #channels = new Map<string, { surface: string; channelId: string; refs: string[] }>();
  /** By surface: the Bindings that take its direct messages. */
  #directMessages = new Map<string, string[]>();
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

  /** The Binding that owns a channel of a surface; undefined when none does, or when two claim it. */
  forChannel(surface: string, channelId: string, workspaceId?: string): LiveBinding | undefined {
    const claims = this.#channels.get(channelKey(surface, channelId))?.refs ?? [];
    return this.#one(surface, claims, workspaceId);
  }

  sharedChannel(surface: string, channelId: string, workspaceId?: string): SharedClaim[] | undefined {
    const refs = this.#inWorkspace(
      surface,
      this.#channels.get(channelKey(surface, channelId))?.refs ?? [],
      workspaceId,
    );
    return this.#shared(surface, refs);
  }

  /** The claims as handles, when they are several and each has a handle of its own. */
  #shared(surface: string, refs: readonly string[]): SharedClaim[] | undefined {
    if (refs.length < 2) return undefined;
    const claims = refs.map((ref) => ({ ref, handle: this.#bindings.get(ref)?.routes[surface]?.handle }));
    const handles = new Set(claims.map((c) => c.handle));
    if (handles.has(undefined) || handles.size !== claims.length) return undefined;
    return claims
      .map((c) => ({ ref: c.ref, handle: c.handle ?? '' }))
      .sort((a, b) => (a.handle < b.handle ? -1 : 1));
  }

  /** The Binding that takes a surface's direct messages; undefined when none or several do. */
  forDirectMessages(surface: string, workspaceId?: string): LiveBinding | undefined {
    return this.#one(surface, this.#directMessages.get(surface) ?? [], workspaceId);
  }

  /**
   * Channels claimed by more than one Binding in the same workspace, for status conditions.
   * Claims in different workspaces (a Slack Connect channel seen from two) do not conflict; a
   * Binding that names no workspace claims in all of them, so it conflicts with every other.
   * Each group of Bindings that overlap is one conflict.
   */
  conflicts(): ChannelConflict[] {
    const out: ChannelConflict[] = [];
    for (const { surface, channelId, refs } of this.#channels.values()) {
      if (refs.length < 2) continue;
      const workspace = (ref: string): string | undefined =>
        this.#bindings.get(ref)?.routes[surface]?.workspaceId;
      const overlap = (a: string, b: string): boolean => {
        const x = workspace(a);
        const y = workspace(b);
        return x === undefined || y === undefined || x === y;
      };
      // Groups: Bindings joined by an overlap, directly or through another.
      const left = [...refs];
      while (left.length > 0) {
        const group = [left.shift() ?? ''];
        for (let i = 0; i < group.length; i++) {
          for (let j = left.length - 1; j >= 0; j--) {
            const other = left[j] ?? '';
            if (overlap(group[i] ?? '', other)) group.push(...left.splice(j, 1));
          }
        }
        // Bindings that each have a handle of their own share the channel: no conflict.
        if (group.length > 1 && this.#shared(surface, group) === undefined)
          out.push({ surface, channelId, bindings: group.sort() });
      }
    }
    return out;
  }

  /** Called after every change (surfaces may refresh caches). Returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The one claim of those in the workspace (a Binding without one claims in every workspace). */
  #one(surface: string, refs: readonly string[], workspaceId: string | undefined): LiveBinding | undefined {
    const claims = this.#inWorkspace(surface, refs, workspaceId);
    return claims.length === 1 ? this.#bindings.get(claims[0] ?? '') : undefined;
  }

  #inWorkspace(surface: string, refs: readonly string[], workspaceId: string | undefined): string[] {
    return refs.filter((ref) => {
      const workspace = this.#bindings.get(ref)?.routes[surface]?.workspaceId;
      return workspace === undefined || workspaceId === undefined || workspace === workspaceId;
    });
  }

  #reindex(): void {
    const channels = new Map<string, { surface: string; channelId: string; refs: string[] }>();
    const directMessages = new Map<string, string[]>();
    for (const binding of this.#bindings.values()) {
      for (const [surface, routing] of Object.entries(binding.routes)) {
        for (const channelId of new Set(routing.channels)) {
          const key = channelKey(surface, channelId);
          const entry = channels.get(key) ?? { surface, channelId, refs: [] };
          entry.refs.push(binding.ref);
          channels.set(key, entry);
        }
        if (routing.allowDirectMessages)
          directMessages.set(surface, [...(directMessages.get(surface) ?? []), binding.ref]);
      }
    }
    this.#channels = channels;
    this.#directMessages = directMessages;
    for (const listener of this.#listeners) listener();
  }
}

function channelKey(surface: string, channelId: string): string {
  return `${surface}\n${channelId}`;
}
