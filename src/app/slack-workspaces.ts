import type { Logger } from 'pino';
import type { AgentRegistry } from '../core/ports.js';
import type { SlackConnection } from '../surfaces/slack/index.js';
import { WorkspaceGate } from './workspace-gate.js';

/** How often the installed workspaces are read again (another replica's uninstall shows within it). */
const REFRESH_MS = 30_000;

/** What the gate asks of the engine when a workspace is removed here. */
export interface RemovedWorkspaceEngine {
  /** Looks at every session at once, so the workspace's open turns settle and its drivers stop. */
  scan(): Promise<void>;
  /** Cancels at their agents the tasks the workspace's sessions still have running. */
  cancelWorkspace(surface: string, workspaceId: string, reason: string): Promise<unknown>;
}

export interface WorkspaceGating {
  /** The registry for the engine: only installed workspaces' sessions are admitted. */
  registry: AgentRegistry;
  /**
   * From now on, a removal seen here has `engine` scan and cancel the workspace's tasks (the
   * engine is built on `registry`, so it is told after it exists, not through a closure).
   */
  follow(engine: RemovedWorkspaceEngine, reason: string): void;
  stop(): void;
}

/**
 * In OAuth mode, the engine's registry admits only the sessions of installed workspaces: at
 * start the installations in the store, then every install and removal as it happens here, and
 * a periodic read for those that happen on another replica. A removal seen here, once the
 * engine is followed, has it look at its sessions at once, so the workspace's open turns settle
 * and its drivers stop, and cancel at their agents the tasks its sessions still have running,
 * so a turn already with an agent is stopped there rather than left to answer nowhere.
 */
export async function gateInstalledWorkspaces(
  slack: SlackConnection | undefined,
  registry: AgentRegistry,
  logger: Logger,
): Promise<WorkspaceGating> {
  const workspaces = slack?.workspaces;
  if (workspaces === undefined) return { registry, follow: () => undefined, stop: () => undefined };
  const gate = new WorkspaceGate(registry, 'slack');
  gate.admitOnly(await workspaces.store.teams());
  let followed: { engine: RemovedWorkspaceEngine; reason: string } | undefined;
  const unsubscribe = workspaces.store.onChange((change) => {
    if (change.kind === 'installed') {
      gate.admit(change.teamId);
      return;
    }
    // Refused first: nothing more is sent for the workspace; only the cancels get through.
    gate.refuse(change.teamId);
    if (followed === undefined) return;
    void followed.engine.scan();
    followed.engine
      .cancelWorkspace('slack', change.teamId, followed.reason)
      .catch(() =>
        logger.warn({ team: change.teamId }, 'could not cancel the tasks of a removed Slack workspace'),
      );
  });
  const timer = setInterval(() => {
    workspaces.store.teams().then(
      (teams) => gate.admitOnly(teams),
      () => logger.warn('could not read the Slack installations; keeping the last list'),
    );
  }, REFRESH_MS);
  timer.unref();
  return {
    registry: gate,
    follow: (engine, reason) => {
      followed = { engine, reason };
    },
    stop: () => {
      clearInterval(timer);
      unsubscribe();
    },
  };
}
