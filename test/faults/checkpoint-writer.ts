// A process that writes sessions through the SQLite store as fast as it can, with the WAL
// checkpointer set to copy and restart the log every few hundred frames, and prints the id of
// every session whose write was acknowledged (`ACK <i>`) and every checkpoint (`CKPT <mode>`).
// test/faults/sqlite-checkpoint-kill.test.ts kills it with SIGKILL and checks what it printed.
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const path = process.env.CHECKPOINT_WRITER_DB;
if (path === undefined) throw new Error('CHECKPOINT_WRITER_DB is not set');
const store = new SqliteStore(path, {
  checkpoints: { thresholdFrames: 60, ceilingFrames: 300, pollMs: 2, idleMs: 20, startDelayMs: 0 },
});
store.observeCheckpoints({
  checkpointed: (r) => process.stdout.write(`CKPT ${r.mode} ${r.backfilledFrames}\n`),
  failed: (e) => process.stdout.write(`FAILED ${e.code}\n`),
});
await store.migrate();
const key = (i: number) => ({ surface: 'ckpt', workspaceId: 'T1', channelId: 'C1', threadId: `${i}` });
for (let next = 0; ; next += 16) {
  // Sixteen at once: group commits of several writes, acknowledged after their fsync.
  await Promise.all(
    Array.from({ length: 16 }, async (_, k) => {
      const i = next + k;
      await store.openSession({ key: key(i), binding: `ns/b-${i}-${'x'.repeat(100)}`, now: i });
      process.stdout.write(`ACK ${i}\n`);
    }),
  );
}
