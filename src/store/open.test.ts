import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from './open.js';

describe('openStore', () => {
  it('creates the SQLite directory, migrates, and the store works', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ak-open-'));
    try {
      const path = join(dir, 'nested', 'state.db');
      const {
        sessions: store,
        triggers,
        transcripts,
        installations,
        feedback,
      } = await openStore({
        kind: 'sqlite',
        path,
      });
      // One database, migrated once, for every store of the bundle.
      expect(await installations.list()).toEqual([]);
      expect(await feedback.untold('s', 10)).toEqual([]);
      expect(triggers).toBeDefined();
      expect(transcripts).toBeDefined();
      const session = await store.openSession({
        key: { surface: 'webchat', workspaceId: 'local', channelId: 'c', threadId: 't' },
        binding: 'a/b',
        now: 1,
      });
      expect(session.binding).toBe('a/b');
      await store.close();
      expect((await stat(path)).isFile()).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
