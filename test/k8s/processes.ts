import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';

/**
 * The processes of a test control plane or cluster (etcd, kube-apiserver, a kubelet, …): each
 * started in a process group of its own with its log in the run's directory, stopped with
 * SIGTERM then SIGKILL, and never left behind when the test process dies, however it dies.
 */

export interface Proc {
  child: ChildProcess;
  pid: number;
  name: string;
  logPath: string;
}

export interface SpawnOptions {
  /** Environment; default the test process's. */
  env?: NodeJS.ProcessEnv;
}

const STOP_GRACE_MS = 5_000;
const LOG_TAIL = 4_000;

// Reads `+pgid` / `-pgid` lines; at end of input (our end of the pipe closed: we exited, however)
// kills what is left and, unless told to keep it ($2 = keep), removes the directory ($1).
const WATCHDOG_SCRIPT = `declare -A groups=()
while IFS= read -r line; do
  case "$line" in
    +*) groups[\${line#+}]=1 ;;
    -*) unset "groups[\${line#-}]" ;;
  esac
done
for g in "\${!groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done
[ "$2" = keep ] || rm -rf -- "$1"
`;

/**
 * Owns the processes of one run and its directory, and makes sure neither outlives the test
 * process: a process 'exit' handler kills them, and a detached watchdog (bash reading a pipe
 * from us) kills their process groups and removes the dir when that pipe closes, which also
 * covers a test process killed by a signal, where 'exit' handlers do not run.
 */
export class Janitor {
  private readonly procs = new Set<Proc>();
  private readonly watchdog: ChildProcess;
  private readonly onExit = () => {
    this.killAllNow();
    this.dispose();
  };

  /** `keepDir`: the directory outlives the run (a cluster's state, cleaned by its next start). */
  constructor(
    readonly dir: string,
    private readonly keepDir = false,
  ) {
    this.watchdog = spawn(
      'bash',
      ['-c', WATCHDOG_SCRIPT, 'kourier-kube-watchdog', dir, keepDir ? 'keep' : ''],
      {
        stdio: ['pipe', 'ignore', 'ignore'],
        detached: true,
      },
    );
    this.watchdog.on('error', () => undefined);
    this.watchdog.stdin?.on('error', () => undefined);
    this.watchdog.unref();
    (this.watchdog.stdin as Socket | null)?.unref();
    process.on('exit', this.onExit);
  }

  spawn(name: string, command: string, args: string[], options: SpawnOptions = {}): Proc {
    const logPath = join(this.dir, `${name}.log`);
    const fd = openSync(logPath, 'a');
    let child: ChildProcess;
    try {
      // Its own process group (detached), so a kill reaches everything it may start.
      child = spawn(command, args, {
        cwd: this.dir,
        stdio: ['ignore', fd, fd],
        detached: true,
        ...(options.env === undefined ? {} : { env: options.env }),
      });
    } finally {
      closeSync(fd);
    }
    if (child.pid === undefined) throw new Error(`could not start ${command}`);
    child.on('error', () => undefined);
    child.unref();
    const proc: Proc = { child, pid: child.pid, name, logPath };
    this.procs.add(proc);
    this.watchdog.stdin?.write(`+${proc.pid}\n`);
    return proc;
  }

  /** SIGTERM to the process group, SIGKILL after a grace period; resolves when it has exited. */
  async stop(proc: Proc, graceMs = STOP_GRACE_MS): Promise<void> {
    if (this.procs.has(proc)) {
      if (running(proc)) {
        killGroup(proc.pid, 'SIGTERM');
        if (!(await exited(proc, graceMs))) {
          killGroup(proc.pid, 'SIGKILL');
          await exited(proc, STOP_GRACE_MS);
        }
      }
      killGroup(proc.pid, 'SIGKILL'); // anything left in its group
      this.procs.delete(proc);
      this.watchdog.stdin?.write(`-${proc.pid}\n`);
    }
  }

  killAllNow(): void {
    for (const proc of this.procs) killGroup(proc.pid, 'SIGKILL');
    this.procs.clear();
  }

  /** Ends the watchdog (nothing left for it to kill) and removes the dir unless it is kept. */
  dispose(): void {
    process.removeListener('exit', this.onExit);
    try {
      this.watchdog.kill('SIGKILL');
    } catch {}
    if (!this.keepDir) rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

export function running(proc: Proc): boolean {
  return proc.child.exitCode === null && proc.child.signalCode === null;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {}
}

/** Whether the process exits within `ms` (a ref'd timer keeps the event loop alive meanwhile). */
function exited(proc: Proc, ms: number): Promise<boolean> {
  if (!running(proc)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      proc.child.removeListener('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    proc.child.once('exit', onExit);
  });
}

export function logTail(proc: Proc): string {
  try {
    return tail(readFileSync(proc.logPath, 'utf8'));
  } catch {
    return '(no log)';
  }
}

export function tail(text: string): string {
  return text.length > LOG_TAIL ? `…${text.slice(-LOG_TAIL)}` : text;
}

function describeExit(proc: Proc): string {
  const { exitCode, signalCode } = proc.child;
  return signalCode !== null ? `killed by ${signalCode}` : `exited with code ${exitCode}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until it returns true, the process dies, or `ms` passes; the error carries the
 * tail of the process's log. A port taken between our pick and the bind is reported as such.
 */
export async function waitReady(
  proc: Proc,
  what: string,
  ms: number,
  probe: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + ms;
  let lastError = '';
  while (Date.now() < deadline) {
    if (!running(proc)) {
      const log = logTail(proc);
      const error = new Error(`${what} ${describeExit(proc)} before it was ready; ${proc.logPath}:\n${log}`);
      if (/address already in use/i.test(log)) (error as Error & { portTaken?: boolean }).portTaken = true;
      throw error;
    }
    try {
      if (await probe()) return;
      lastError = '';
    } catch (error) {
      lastError = String(error);
    }
    await sleep(200);
  }
  throw new Error(
    `${what} was not ready within ${ms / 1000} s${lastError ? ` (last probe: ${lastError})` : ''}; ${proc.logPath}:\n${logTail(proc)}`,
  );
}

export const portTaken = (error: unknown) =>
  error instanceof Error && (error as Error & { portTaken?: boolean }).portTaken === true;

/** A port nobody listens on now (the OS picks it); the server binds it right after. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port was assigned'));
      });
    });
  });
}

/** One GET, over TLS with the given CA and client certificate when the URL is https. */
export function get(
  url: string,
  tls: { ca?: string; cert?: string; key?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = request(url, { method: 'GET', timeout: 5_000, ...tls }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
