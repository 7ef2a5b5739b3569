import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { eventually } from './cluster-helpers.js';

/**
 * `agentkourier controller` as a process of its own, the way a pod runs it: its own environment
 * only (nothing inherited but PATH), credentials from a kubeconfig, stopped with SIGTERM (the
 * drain) and SIGKILL only if that hangs. Its output is kept for assertions.
 */

export interface ControllerProcess {
  child: ChildProcess;
  /** Everything it wrote, stdout and stderr. */
  output(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it exited. */
  stop(graceMs?: number): Promise<number | string>;
}

export function startControllerProcess(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd: string },
): ControllerProcess {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    if (output.length > 4_000_000) output = output.slice(-2_000_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  return {
    child,
    output: () => output,
    exited,
    async stop(graceMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      return exited;
    },
  };
}

/** Polls /readyz until 200; fails early, with the process's output, if it exits. */
export async function waitReady(proc: ControllerProcess, metricsPort: number, ms = 60_000): Promise<void> {
  await eventually(async () => {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(
        `the controller exited (${proc.child.exitCode ?? proc.child.signalCode}):\n${proc.output().slice(-4000)}`,
      );
    }
    const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
    if (res?.status !== 200)
      throw new Error(`readyz ${res?.status ?? 'unreachable'}:\n${proc.output().slice(-2000)}`);
  }, ms);
}

/**
 * A kubeconfig that authenticates as a ServiceAccount with a token from the TokenRequest API,
 * as a pod's projected token does: every call is then authorized by that account's RBAC.
 */
export async function serviceAccountKubeconfig(
  admin: KubeConfig,
  namespace: string,
  serviceAccount: string,
  path: string,
): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name: serviceAccount,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (token === undefined || token === '') throw new Error('the TokenRequest API returned no token');
  const cluster = admin.getCurrentCluster();
  if (cluster === null) throw new Error('the admin kubeconfig has no current cluster');
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'test', cluster: { server: cluster.server, 'certificate-authority-data': cluster.caData } },
      ],
      users: [{ name: serviceAccount, user: { token } }],
      contexts: [{ name: 'sa', context: { cluster: 'test', user: serviceAccount, namespace } }],
      'current-context': 'sa',
    }),
    { mode: 0o644 },
  );
  return token;
}

/** Log lines that say the API server refused the controller (RBAC). */
export function forbidden(output: string): string[] {
  return output.split('\n').filter((line) => /HTTP 403|"status":403|\bForbidden\b/.test(line));
}
