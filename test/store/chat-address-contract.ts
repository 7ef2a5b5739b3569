import { afterEach, describe, expect, it } from 'vitest';
import type { ChatAddressRows } from '../../src/core/chat-address-store.js';

/**
 * What every store's chat addresses must do (SQLite and PostgreSQL run it): an upsert per
 * conversation that keeps the conversation's thread, one removal per conversation and one per
 * group, and nothing of another surface or workspace touched by either.
 */
export function chatAddressContract(
  name: string,
  open: () => Promise<{ rows: ChatAddressRows; close: () => Promise<void> }>,
): void {
  describe(`chat addresses (${name})`, () => {
    let opened: { rows: ChatAddressRows; close: () => Promise<void> } | undefined;
    afterEach(async () => {
      await opened?.close();
      opened = undefined;
    });
    const start = async (): Promise<ChatAddressRows> => {
      opened = await open();
      return opened.rows;
    };
    const row = (conversationId: string, groupId: string | null, address: string, updatedAt = 1000) => ({
      surface: 'teams',
      workspaceId: 'tenant-a',
      conversationId,
      groupId,
      address,
      updatedAt,
    });

    it('writes an address, replaces it on a later write, and keeps the thread a "new" moved it to', async () => {
      const rows = await start();
      await rows.put(row('a:1', null, '{"v":1}'));
      expect(await rows.setThread('teams', 'tenant-a', 'a:1', 'thread-2')).toBe(true);
      await rows.put(row('a:1', null, '{"v":2}', 2000));
      expect(await rows.get('teams', 'tenant-a', 'a:1')).toEqual({
        ...row('a:1', null, '{"v":2}', 2000),
        threadId: 'thread-2',
      });
      expect(await rows.get('teams', 'tenant-b', 'a:1')).toBeUndefined();
      expect(await rows.get('slack', 'tenant-a', 'a:1')).toBeUndefined();
      expect(await rows.setThread('teams', 'tenant-a', 'missing', 'x')).toBe(false);
    });

    it('removes one conversation, then a whole group, and nothing of another workspace', async () => {
      const rows = await start();
      await rows.put(row('19:general', 'team-1', '{}'));
      await rows.put(row('19:ops', 'team-1', '{}'));
      await rows.put(row('19:other', 'team-2', '{}'));
      await rows.put(row('a:personal', null, '{}'));
      await rows.put({ ...row('19:general', 'team-1', '{}'), workspaceId: 'tenant-b' });
      expect(await rows.delete('teams', 'tenant-a', 'a:personal')).toBe(true);
      expect(await rows.delete('teams', 'tenant-a', 'a:personal')).toBe(false);
      expect(await rows.deleteGroup('teams', 'tenant-a', 'team-1')).toBe(2);
      expect(await rows.get('teams', 'tenant-a', '19:general')).toBeUndefined();
      expect((await rows.get('teams', 'tenant-a', '19:other'))?.groupId).toBe('team-2');
      expect((await rows.get('teams', 'tenant-b', '19:general'))?.groupId).toBe('team-1');
    });
  });
}
