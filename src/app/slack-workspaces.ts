import type { Logger } from 'pino';
import type { AgentRegistry } from '../core/ports.js';
import type { SlackConnection } from '../surfaces/slack/index.js';
import { WorkspaceGate } from './workspace-gate.js';

/** How often the installed workspaces are read again (another replica's uninstall shows within it). */
const REFRESH_MS = 30_000;

/**
 * In OAuth mode, the engine's registry admits only the sessions of installed workspaces: at
 * start the installations in the store, then every install and removal as it happens here, and
 * a periodic read for those that happen on another replica. A removal seen here has the engine
 * look at its sessions at once (`scan`), so the workspace's open turns settle and its drivers
 * stop, and cancel at their agents the tasks its sessions still have running (`cancel`), so a
 * turn already with an agent is stopped there rather than left to answer nowhere.
 * Returns the registry for the engine and a stop for the timer.
 */
export async function gateInstalledWorkspaces(
  slack: SlackConnection | undefined,
  registry: AgentRegistry,
  options: { logger: Logger; scan: () => void; cancel?: (workspaceId: string) => Promise<unknown> },
): Promise<{ registry: AgentRegistry; stop: () => void }> {
  const workspaces = slack?.workspaces;
  if (workspaces === undefined) return { registry, stop: () => undefined };
  const gate = new WorkspaceGate(registry, 'slack');
  gate.admitOnly(await workspaces.store.teams());
  const unsubscribe = workspaces.store.onChange((change) => {
    if (change.kind === 'installed') gate.admit(change.teamId);
    else {
      // Refused first: nothing more is sent for the workspace; only the cancels get through.
      gate.refuse(change.teamId);
      options.scan();
      options
        .cancel?.(change.teamId)
        .catch(() =>
          options.logger.warn(
            { team: change.teamId },
            'could not cancel the tasks of a removed Slack workspace',
          ),
        );
    }
  });
  const timer = setInterval(() => {
    workspaces.store.teams().then(
      (teams) => gate.admitOnly(teams),
      () => options.logger.warn('could not read the Slack installations; keeping the last list'),
    );
  }, REFRESH_MS);
  timer.unref();
  return {
    registry: gate,
    stop: () => {
      clearInterval(timer);
      unsubscribe();
    },
  };
}
