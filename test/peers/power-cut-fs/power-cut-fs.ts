import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import { promisify } from 'node:util';

/**
 * The power-cut file system (./power_cut_fs.py, its header says what it does) mounted for a
 * test: file data reaches the backing directory only when fsynced; `cut()` drops what was not
 * and fails every write after it; `restore()` mounts it again (power back, the kernel's caches of
 * the old mount gone). Needs /dev/fuse, fusermount3 and mfusepy in .venv-peers
 * (scripts/python-peers.sh): without them it throws, saying which is missing, so a machine that
 * cannot run the test fails it instead of skipping it.
 */

const run = promisify(execFile);
const PYTHON = '.venv-peers/bin/python';
const SCRIPT = 'test/peers/power-cut-fs/power_cut_fs.py';

/** The machine cannot mount the power-cut file system; the message says why. */
export class PowerCutFsUnavailableError extends Error {
  constructor(reason: string) {
    super(`power-cut file system unavailable: ${reason}`);
    this.name = 'PowerCutFsUnavailableError';
  }
}

/** The file system process did not do what it was asked in time, or died. */
export class PowerCutFsError extends Error {
  constructor(message: string) {
    super(`power-cut file system: ${message}`);
    this.name = 'PowerCutFsError';
  }
}

export interface PowerCutFsOptions {
  /** Where the data that survives lives. */
  backing: string;
  /** An empty directory to mount on. */
  mountpoint: string;
  /** A disk that lies: fsync syncs nothing (negative control). */
  ignoreFsync?: boolean;
  /** How long each fsync takes before it syncs (a cut may come meanwhile); default none. */
  fsyncMs?: number;
}

export interface PowerCutFs {
  /**
   * Drops every unsynced write and fails every write from now on. `torn`: each unsynced page
   * reaches the disk first with probability `keep`, picked by `seed` (a disk writing back part
   * of its cache, in any order).
   */
  cut(torn?: { keep: number; seed: number }): Promise<{ dropped: number; kept: number }>;
  /** Unmounts and mounts again on the same backing directory. Nothing may hold a file open. */
  restore(): Promise<void>;
  /** Unmounts (pending data is lost, as at a cut). */
  unmount(): Promise<void>;
}

async function checkMachine(): Promise<void> {
  const missing = (what: string, path: string, mode: number) => {
    try {
      accessSync(path, mode);
    } catch {
      throw new PowerCutFsUnavailableError(`${what} (${path}) is missing`);
    }
  };
  missing(
    'the FUSE device (run as root with /dev/fuse, or a privileged container)',
    '/dev/fuse',
    constants.W_OK,
  );
  missing('fusermount3 (Debian package fuse3)', '/usr/bin/fusermount3', constants.X_OK);
  missing('the Python peers venv (bash scripts/python-peers.sh)', PYTHON, constants.X_OK);
  await run(PYTHON, ['-c', 'import mfusepy']).catch((error: { stderr?: string }) => {
    throw new PowerCutFsUnavailableError(
      `mfusepy does not load in ${PYTHON} (scripts/python-peers.sh; Debian's libfuse3-3): ${error.stderr ?? error}`,
    );
  });
}

interface Mounted {
  child: ChildProcess;
  lines: Interface;
  exited: Promise<unknown>;
}

function nextLine(m: Mounted, prefix: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new PowerCutFsError(`no ${prefix} in ${timeoutMs} ms`)), timeoutMs);
    const onLine = (line: string) => {
      if (line.startsWith(prefix)) done(undefined, line);
    };
    const onExit = () => done(new PowerCutFsError(`exited waiting for ${prefix}`));
    const done = (error?: Error, line?: string) => {
      clearTimeout(timer);
      m.lines.off('line', onLine);
      m.child.off('exit', onExit);
      if (error === undefined) resolve(line as string);
      else reject(error);
    };
    m.lines.on('line', onLine);
    m.child.once('exit', onExit);
  });
}

async function mount(o: PowerCutFsOptions): Promise<Mounted> {
  const args = [
    SCRIPT,
    o.backing,
    o.mountpoint,
    ...(o.ignoreFsync === true ? ['--ignore-fsync'] : []),
    ...(o.fsyncMs === undefined ? [] : [`--fsync-ms=${o.fsyncMs}`]),
  ];
  const child = spawn(PYTHON, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const m = { child, lines, exited: once(child, 'exit') };
  await nextLine(m, 'READY', 15_000);
  return m;
}

async function unmountNow(m: Mounted, mountpoint: string): Promise<void> {
  if (m.child.exitCode === null && m.child.signalCode === null) {
    // Closing its stdin unmounts it (lazily: the kernel lets go once nothing is open there).
    m.child.stdin?.end();
    const timer = setTimeout(() => m.child.kill('SIGKILL'), 5_000);
    await m.exited;
    clearTimeout(timer);
  }
  // A killed process leaves its mount behind ("transport endpoint is not connected").
  await run('fusermount3', ['-u', '-z', mountpoint]).catch(() => undefined);
}

export async function mountPowerCutFs(o: PowerCutFsOptions): Promise<PowerCutFs> {
  await checkMachine();
  let m = await mount(o);
  return {
    async cut(torn) {
      m.child.stdin?.write(torn === undefined ? 'cut\n' : `cut ${torn.keep} ${Math.floor(torn.seed)}\n`);
      const [, dropped, kept] = (await nextLine(m, 'CUT', 5_000)).split(' ');
      return { dropped: Number(dropped), kept: Number(kept) };
    },
    async restore() {
      await unmountNow(m, o.mountpoint);
      m = await mount(o);
    },
    unmount: () => unmountNow(m, o.mountpoint),
  };
}
