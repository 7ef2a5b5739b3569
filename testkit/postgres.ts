import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

/**
 * A throwaway PostgreSQL cluster for tests and the bench: real PostgreSQL, not a fake. initdb into a fresh
 * temp dir, start on a free loopback port with durability off (the data is thrown away), hand
 * back a connection string to a new database, and on stop kill it and delete the dir.
 *
 * PostgreSQL refuses to run as root, so when we are root every server command runs as the
 * `postgres` OS user (the Debian package creates it) and the temp dir is handed to that user.
 */

const BIN = '/usr/lib/postgresql/15/bin';
const DATABASE = 'kourier';
const run = promisify(execFile);

export interface TestPostgres {
  connectionString: string;
  /** host and port, for a proxy in front of it. */
  host: string;
  port: number;
  /** Stops the server as a crash would (immediate), then starts it again on the same port. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface TestPostgresOptions {
  /**
   * Durability on (fsync, synchronous_commit), for tests that crash the server: with it off, an
   * immediate stop loses the last commits, which real PostgreSQL would have kept.
   */
  durable?: boolean;
}

export async function startPostgres(settings: TestPostgresOptions = {}): Promise<TestPostgres> {
  for (const tool of ['initdb', 'pg_ctl']) {
    if (!existsSync(join(BIN, tool))) {
      throw new Error(
        `PostgreSQL 15 server binaries not found (${join(BIN, tool)}): apt-get install postgresql`,
      );
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'kourier-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const asRoot = process.getuid?.() === 0;
  // Commands run from the temp dir: the postgres user may not be allowed into our cwd.
  const server = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(BIN, tool), ...args], { cwd: dir })
      : run(join(BIN, tool), args, { cwd: dir });
  const stopNow = () => server('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']);

  // If the test process dies without stop(), do not leave a server running.
  const onExit = () => {
    try {
      const args = ['stop', '-D', data, '-m', 'immediate', '-w'];
      if (asRoot)
        execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, 'pg_ctl'), ...args], { cwd: dir });
      else execFileSync(join(BIN, 'pg_ctl'), args, { cwd: dir });
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  };

  let started = false;
  try {
    if (asRoot) await run('chown', ['postgres:postgres', dir]);
    await server('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    const port = await freePort();
    const options = [
      '-c listen_addresses=127.0.0.1',
      `-p ${port}`,
      `-c unix_socket_directories=${dir}`,
      ...(settings.durable === true
        ? []
        : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
    ].join(' ');
    process.once('exit', onExit);
    await server('pg_ctl', ['start', '-D', data, '-l', log, '-w', '-t', '30', '-o', options]);
    started = true;

    const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${DATABASE}`);
    } finally {
      await admin.end();
    }

    return {
      connectionString: `postgresql://postgres@127.0.0.1:${port}/${DATABASE}`,
      host: '127.0.0.1',
      port,
      async restart(downMs = 0) {
        await stopNow();
        if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
        await server('pg_ctl', ['start', '-D', data, '-l', log, '-w', '-t', '30', '-o', options]);
      },
      async stop() {
        process.removeListener('exit', onExit);
        try {
          await stopNow();
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    const serverLog = existsSync(log) ? readFileSync(log, 'utf8').slice(-2000) : '';
    process.removeListener('exit', onExit);
    if (started) await stopNow().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not start a test PostgreSQL: ${String(error)}\n${serverLog}`, { cause: error });
  }
}

/** A port nobody listens on now (the OS picks it); the server binds it right after. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port was assigned'));
      });
    });
  });
}
