import { type ChildProcess, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';

/** A Prometheus-family server started by a test: its URL, and a stop that also removes its dir. */
export interface ReadyDaemon {
  url: string;
  /** The tail of what it wrote to stderr so far (kept to `stderrTail` characters). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts `bin` (Prometheus, Alertmanager: servers that answer `GET /-/ready`) on a loopback port
 * the caller put in `args`, and waits up to 30 s for it to be ready. If it exits or never gets
 * ready, it is stopped and the error carries the tail of its stderr. `dir` is the caller's
 * throwaway directory, removed on stop.
 */
export async function startReadyDaemon(options: {
  name: string;
  bin: string;
  args: string[];
  port: number;
  dir: string;
  stderrTail?: number;
  pollMs?: number;
}): Promise<ReadyDaemon> {
  const { name, bin, args, port, dir } = options;
  const child: ChildProcess = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const tail = options.stderrTail ?? 4000;
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-tail);
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`${name} exited with ${child.exitCode}: ${stderr}`);
    }
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { url, log: () => stderr, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not become ready: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 100));
  }
}
