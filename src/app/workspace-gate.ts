import type { AgentRegistry, AgentRoute } from '../core/ports.js';
import type { SessionKey } from '../core/store.js';

/**
 * The engine's view of the registry, with the Slack workspaces that removed the app taken out:
 * a session of such a workspace resolves to no Binding, so the engine settles its open turns
 * and stops driving it (it would only meet revoked tokens), while every other workspace's
 * sessions go on. In OAuth mode the workspaces admitted are the installed ones, refreshed from
 * the store so a removal seen by another replica reaches this one too. A cancel still resolves:
 * a task such a session started is stopped at its agent (the agent is not the workspace's).
 */
export class WorkspaceGate implements AgentRegistry {
  readonly #registry: AgentRegistry;
  readonly #surface: string;
  /** undefined: every workspace is admitted (single-workspace mode). */
  #admitted: Set<string> | undefined;

  constructor(registry: AgentRegistry, surface: string) {
    this.#registry = registry;
    this.#surface = surface;
  }

  resolve(binding: string, key?: SessionKey, use?: 'cancel'): AgentRoute | undefined {
    if (
      use !== 'cancel' &&
      key !== undefined &&
      key.surface === this.#surface &&
      this.#admitted !== undefined &&
      !this.#admitted.has(key.workspaceId)
    )
      return undefined;
    return this.#registry.resolve(binding, key);
  }

  /** From now on only these workspaces are admitted. */
  admitOnly(workspaces: Iterable<string>): void {
    this.#admitted = new Set(workspaces);
  }

  admit(workspaceId: string): void {
    this.#admitted?.add(workspaceId);
  }

  refuse(workspaceId: string): void {
    this.#admitted?.delete(workspaceId);
  }
}
