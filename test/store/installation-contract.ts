import type { Installation } from '@slack/oauth';
import { afterEach, describe, expect, it } from 'vitest';
import type { InstallationRows } from '../../src/core/installation-store.js';
import { InstallationSealError, Keyring } from '../../src/surfaces/slack/installations/keyring.js';
import {
  EnterpriseInstallRefusedError,
  SealedInstallationStore,
  WorkspaceNotInstalledError,
} from '../../src/surfaces/slack/installations/store.js';

/**
 * What every store's Slack installations must do (SQLite and PostgreSQL run it), through the
 * sealed InstallationStore Bolt uses: an upsert per workspace, the token never in a row in
 * clear, a row that opens only under its own key, and rotation that re-seals.
 */

const KEY_A = `a:${Buffer.alloc(32, 1).toString('base64')}`;
const KEY_B = `b:${Buffer.alloc(32, 2).toString('base64')}`;

export function installation(teamId: string, token: string, botUserId = 'U0BOT'): Installation<'v2', false> {
  return {
    team: { id: teamId, name: `Team ${teamId}` },
    enterprise: undefined,
    user: { id: 'U0INSTALLER', token: undefined, scopes: undefined },
    bot: { token, scopes: ['chat:write'], id: 'B0BOT', userId: botUserId, refreshToken: `${token}-refresh` },
    appId: 'A0APP',
    tokenType: 'bot',
    isEnterpriseInstall: false,
    authVersion: 'v2',
  } as Installation<'v2', false>;
}

export function installationContract(
  name: string,
  open: () => Promise<{ rows: InstallationRows; close: () => Promise<void> }>,
): void {
  describe(`Slack installations (${name})`, () => {
    let opened: { rows: InstallationRows; close: () => Promise<void> } | undefined;
    afterEach(async () => {
      await opened?.close();
      opened = undefined;
    });
    const start = async (): Promise<InstallationRows> => {
      opened = await open();
      return opened.rows;
    };
    const query = (teamId: string) => ({
      teamId,
      enterpriseId: undefined,
      isEnterpriseInstall: false as const,
    });

    it('stores an installation sealed, fetches it whole, and replaces it on a second store (a refresh)', async () => {
      const rows = await start();
      const store = new SealedInstallationStore(rows, Keyring.parse(KEY_A), () => 1000);
      await store.storeInstallation(installation('T0A', 'xoxb-first-token'));
      await store.storeInstallation(installation('T0A', 'xoxb-second-token'));
      await store.storeInstallation(installation('T0B', 'xoxb-other-token', 'U0BOTB'));
      expect((await store.fetchInstallation(query('T0A'))).bot?.token).toBe('xoxb-second-token');
      expect(await store.fetchInstallation(query('T0B'))).toEqual(
        installation('T0B', 'xoxb-other-token', 'U0BOTB'),
      );
      const all = await rows.list();
      expect(all.map((r) => [r.key, r.teamId, r.botUserId, r.keyId])).toEqual([
        ['team:T0A', 'T0A', 'U0BOT', 'a'],
        ['team:T0B', 'T0B', 'U0BOTB', 'a'],
      ]);
      for (const row of all) {
        expect(row.sealed).not.toContain('xoxb-');
        expect(row.sealed).not.toContain('refresh');
      }
      expect(await store.teams()).toEqual(['T0A', 'T0B']);
      expect(await store.botUserOf('T0B')).toBe('U0BOTB');
    });

    it('a workspace without an installation, or after its removal, is WorkspaceNotInstalledError', async () => {
      const rows = await start();
      const store = new SealedInstallationStore(rows, Keyring.parse(KEY_A));
      await expect(store.fetchInstallation(query('T0NONE'))).rejects.toBeInstanceOf(
        WorkspaceNotInstalledError,
      );
      await store.storeInstallation(installation('T0A', 'xoxb-token'));
      expect(await store.remove('T0A')).toBe(true);
      // The second of app_uninstalled and tokens_revoked finds nothing, and that is fine.
      expect(await store.remove('T0A')).toBe(false);
      await expect(store.fetchInstallation(query('T0A'))).rejects.toMatchObject({
        code: 'slack_workspace_not_installed',
      });
    });

    it('refuses an org-wide install with its own error', async () => {
      const store = new SealedInstallationStore(await start(), Keyring.parse(KEY_A));
      const org = {
        ...installation('T0A', 'xoxb-t'),
        team: undefined,
        isEnterpriseInstall: true,
        enterprise: { id: 'E0ORG' },
      };
      await expect(store.storeInstallation(org as unknown as Installation)).rejects.toBeInstanceOf(
        EnterpriseInstallRefusedError,
      );
    });

    it('a sealed value moved onto another workspace’s row does not open', async () => {
      const rows = await start();
      const store = new SealedInstallationStore(rows, Keyring.parse(KEY_A));
      await store.storeInstallation(installation('T0A', 'xoxb-a'));
      await store.storeInstallation(installation('T0B', 'xoxb-b'));
      const a = await rows.get('team:T0A');
      const b = await rows.get('team:T0B');
      if (a === undefined || b === undefined) throw new Error('rows missing');
      await rows.put({ ...b, sealed: a.sealed });
      await expect(store.fetchInstallation(query('T0B'))).rejects.toBeInstanceOf(InstallationSealError);
    });

    it('rotates: the new key in front opens the old rows and re-seals them; without the old key they do not open', async () => {
      const rows = await start();
      await new SealedInstallationStore(rows, Keyring.parse(KEY_A)).storeInstallation(
        installation('T0A', 'xoxb-a'),
      );
      await new SealedInstallationStore(rows, Keyring.parse(KEY_A)).storeInstallation(
        installation('T0B', 'xoxb-b'),
      );
      const both = new SealedInstallationStore(rows, Keyring.parse(`${KEY_B},${KEY_A}`));
      // A read re-seals its row; the sweep does the others.
      expect((await both.fetchInstallation(query('T0A'))).bot?.token).toBe('xoxb-a');
      expect((await rows.get('team:T0A'))?.keyId).toBe('b');
      expect(await both.reseal()).toEqual({ resealed: 1, unreadable: [] });
      expect((await rows.list()).map((r) => r.keyId)).toEqual(['b', 'b']);
      const onlyB = new SealedInstallationStore(rows, Keyring.parse(KEY_B));
      expect((await onlyB.fetchInstallation(query('T0B'))).bot?.token).toBe('xoxb-b');
      const onlyA = new SealedInstallationStore(rows, Keyring.parse(KEY_A));
      await expect(onlyA.fetchInstallation(query('T0B'))).rejects.toMatchObject({
        code: 'slack_installation_unsealable',
      });
      // A start with a key list that opens none of them still starts: they are named, not fatal.
      expect(await onlyA.reseal()).toEqual({ resealed: 0, unreadable: ['T0A', 'T0B'] });
    });
  });
}
