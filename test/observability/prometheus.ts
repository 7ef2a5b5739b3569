import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startReadyDaemon } from '../helpers/ready-daemon.js';

/**
 * Debian's `prometheus` package in tests: `promtool` to check exposition text and rule files,
 * and a real Prometheus server started on a loopback port with a scrape config of the test's
 * own, its storage in a temporary folder, stopped by the test.
 */

const BIN_DIRS = ['/usr/bin', '/usr/local/bin', '/usr/sbin'];

function find(name: string): string | undefined {
  for (const dir of BIN_DIRS) {
    const path = join(dir, name);
    if (existsSync(path)) return path;
  }
  return undefined;
}

export const PROMTOOL = find('promtool');
export const PROMETHEUS = find('prometheus');

/** Why the Prometheus tests cannot run here, for a skip's title; undefined when they can. */
export const prometheusMissing =
  PROMTOOL === undefined || PROMETHEUS === undefined
    ? "Debian's prometheus package (prometheus, promtool) is not installed"
    : undefined;

export interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs promtool with `args`, `input` on its standard input. */
export function promtool(args: string[], input?: string): Promise<ToolResult> {
  const bin = PROMTOOL;
  if (bin === undefined) throw new Error('promtool is not installed');
  return new Promise((resolve) => {
    const child = execFile(bin, args, { timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface RunningPrometheus {
  url: string;
  /** An instant query's vector result: labels and value of each series. */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: number }>>;
  /** The scrape targets' health, as Prometheus reports it. */
  targets(): Promise<Array<{ health: string; lastError: string; scrapeUrl: string }>>;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `target` (host:port) at `metricsPath` every second. */
export async function startPrometheus(options: {
  target: string;
  metricsPath?: string;
}): Promise<RunningPrometheus> {
  const bin = PROMETHEUS;
  if (bin === undefined) throw new Error('prometheus is not installed');
  const dir = await mkdtemp(join(tmpdir(), 'ak-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      '  - job_name: agentkourier',
      `    metrics_path: ${options.metricsPath ?? '/metrics'}`,
      '    static_configs:',
      `      - targets: ['${options.target}']`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const { url, stop } = await startReadyDaemon({
    name: 'prometheus',
    bin,
    args: [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    port,
    dir,
    stderrTail: 4000,
    pollMs: 200,
  });
  return {
    url,
    query: async (promql) => {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await res.json()) as {
        status: string;
        error?: string;
        data?: {
          resultType: string;
          result: Array<{ metric: Record<string, string>; value: [number, string] }>;
        };
      };
      if (body.status !== 'success') throw new Error(`query ${promql} failed: ${body.error ?? res.status}`);
      return (body.data?.result ?? []).map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    targets: async () => {
      const res = await fetch(`${url}/api/v1/targets`);
      const body = (await res.json()) as {
        data: { activeTargets: Array<{ health: string; lastError: string; scrapeUrl: string }> };
      };
      return body.data.activeTargets;
    },
    stop,
  };
}

/** One sample of a scrape: the metric name, its labels, its value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Reads Prometheus text exposition into samples (enough for our own output; promtool checks it). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
    if (match === null) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (match[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\"/g, '"').replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
    }
    samples.push({ name: match[1] ?? '', labels, value: Number(match[4]) });
  }
  return samples;
}

/** The value of the one sample of `name` whose labels include `labels` (0 when there is none). */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${found.length} series of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}
