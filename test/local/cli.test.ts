import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PortInUseError, startLocal } from '../../src/app/local.js';
import { run } from '../../src/main.js';
import { createLogger } from '../../src/observability/logging.js';

/**
 * Newcomer trial: `agentkourier local --help` and `demo-agent --help` printed "Unknown option
 * '--help'" and exited 2; a second `npm start` opened the first one's database and ended with a
 * bare EADDRINUSE.
 */
describe('the command line', () => {
  it.each([['local'], ['demo-agent'], ['controller'], ['check'], ['version'], ['help']])(
    '%s answers --help and -h with its usage, exit 0',
    async (command) => {
      for (const flag of ['--help', '-h']) {
        const out: string[] = [];
        const err: string[] = [];
        const code = await run([command, flag], { out: (l) => out.push(l), err: (l) => err.push(l) });
        expect([command, flag, code, err]).toEqual([command, flag, 0, []]);
        expect(out.join('\n')).toMatch(/^Usage: agentkourier/);
      }
    },
  );

  it('says what each local option does', async () => {
    const out: string[] = [];
    await run(['local', '--help'], { out: (l) => out.push(l), err: () => undefined });
    for (const option of ['--config', '--port', '--host', '--token', '--no-demo'])
      expect(out.join('\n')).toContain(option);
  });
});

describe('local mode on a port already taken', () => {
  let taken: Server | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (taken === undefined ? resolve() : taken.close(() => resolve())));
    taken = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('stops before it opens the store, and says "already running? use --port"', async () => {
    taken = createServer();
    const server = taken;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    dir = await mkdtemp(join(tmpdir(), 'ak-port-'));
    const db = join(dir, 'state.db');
    const start = startLocal({
      config: 'examples/local.yaml',
      host: '127.0.0.1',
      port: address.port,
      demo: false,
      env: { AGENTKOURIER_STORE: `sqlite:${db}` },
      out: () => undefined,
      logger: createLogger({ level: 'silent' }),
    });
    await expect(start).rejects.toBeInstanceOf(PortInUseError);
    await expect(start).rejects.toThrow(/already running\? .*--port/);
    expect(existsSync(db)).toBe(false);
  });
});
