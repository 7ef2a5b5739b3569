import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { queuedTurn } from '../../testkit/turns.js';
import { ACTOR_METADATA_KEY } from '../core/compose.js';
import { InvalidConfigError } from '../core/errors.js';
import { run } from '../main.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { describeErased, personOf, runForget } from './forget.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const ADA = { id: 'U0ADA', name: 'Ada', email: 'ada@example.com' };
const BOB = { id: 'U0BOB', name: 'Bob', email: 'bob@example.com' };

describe('agentkourier forget', () => {
  it('erases a person from the store a running broker holds open, and says how many rows went', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kourier-forget-'));
    dirs.push(dir);
    const path = join(dir, 'state.db');
    // The broker's store, open for the whole test as a running broker holds it.
    const broker = new SqliteStore(path);
    await broker.migrate();
    try {
      const turn = async (thread: string, n: number, by: typeof ADA, text: string) => {
        const session = await broker.openSession({
          key: { surface: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: thread },
          binding: 'team-a/support',
          now: 1,
        });
        await broker.addTurn(
          queuedTurn({
            id: `${thread}-${n}`,
            sessionId: session.id,
            chatMessageId: `${thread}.${n}`,
            text,
            label: `[Slack: ${by.name} (${by.id}) <${by.email}>]`,
            metadata: { [ACTOR_METADATA_KEY]: by },
            state: 'settled',
            now: 1,
          }),
        );
        return session.id;
      };
      const hers = await turn('1.0', 1, ADA, 'her thread');
      const his = await turn('2.0', 1, BOB, 'his thread');
      await turn('2.0', 2, ADA, 'her reply in his thread');
      const lines: string[] = [];
      const code = await runForget(['--user', ADA.id], { AGENTKOURIER_STORE: `sqlite:${path}` }, (l) =>
        lines.push(l),
      );
      expect(code).toBe(0);
      expect(lines.join('\n')).toBe(
        [
          'forgot user U0ADA:',
          '  1 thread(s) they started, with 1 turn(s)',
          '  their words in 1 turn(s) of other threads',
          '  0 feedback press(es)',
          '  0 sign-in link(s) at identity providers',
        ].join('\n'),
      );
      // The running broker reads the erasure.
      expect(await broker.getSession(hers)).toBeUndefined();
      expect((await broker.getTurn('2.0-2'))?.text).toBe('');
      expect((await broker.getTurn('2.0-1'))?.text).toBe('his thread');
      expect(await broker.getSession(his)).toBeDefined();
    } finally {
      await broker.close();
    }
  });

  it('takes exactly one of --user and --email, each checked', () => {
    expect(personOf(['--user', 'U0123ABCD'])).toEqual({ userId: 'U0123ABCD' });
    expect(personOf(['--email', 'Ada@Example.com'])).toEqual({ email: 'Ada@Example.com' });
    for (const bad of [
      [],
      ['--user', 'U1', '--email', 'a@b.c'],
      ['--user', 'U1 OR 1=1'],
      ['--email', 'nobody'],
      ['U1'],
    ])
      expect(() => personOf(bad), bad.join(' ')).toThrow(InvalidConfigError);
  });

  it('has its help, and is listed in the usage', async () => {
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    expect(await run(['forget', '--help'], io)).toBe(0);
    expect(out.join('\n')).toMatch(/^Usage: agentkourier forget \(--user ID \| --email ADDRESS\)/);
    out.length = 0;
    expect(await run(['help'], io)).toBe(0);
    expect(out.join('\n')).toContain('forget (--user ID | --email A)');
    out.length = 0;
    expect(await run(['forget', '--nobody'], io)).toBe(2);
  });

  it('says what still waits for its answer to end, and only then', () => {
    const erased = { threads: 1, turns: 2, feedback: 0, wordsCleared: 3, links: 0, waiting: 0 };
    expect(describeErased({ userId: 'U0ADA' }, erased)).not.toContain('still answering');
    const waiting = describeErased({ email: 'ada@example.com' }, { ...erased, waiting: 2 });
    expect(waiting).toContain('forgot email ada@example.com:');
    expect(waiting).toContain('2 thread(s) or turn(s) still answering: they go once their answer ends');
  });
});
