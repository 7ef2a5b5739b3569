import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../observability/prometheus.js';
import { startReadyDaemon } from './ready-daemon.js';

/**
 * A real Alertmanager in tests: Debian's `prometheus-alertmanager` binary, started on a loopback
 * port with a config of the test's own (one webhook receiver whose bearer token is read from a
 * file, short group_wait, group_interval and repeat_interval), its storage in a temporary folder
 * and clustering off, stopped by the test. Alerts go in through its API, POST /api/v2/alerts.
 */

const BIN = ['/usr/bin/prometheus-alertmanager', '/usr/local/bin/alertmanager', '/usr/bin/alertmanager'].find(
  (path) => existsSync(path),
);

/** Why the Alertmanager tests cannot run here, for a skip's title; undefined when they can. */
export const alertmanagerMissing =
  BIN === undefined ? "Debian's prometheus-alertmanager package is not installed" : undefined;

export interface AlertInput {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt?: string;
  /** In the past: the alert is resolved. */
  endsAt?: string;
  generatorURL?: string;
}

export interface RunningAlertmanager {
  url: string;
  /** POST /api/v2/alerts. */
  send(alerts: AlertInput[]): Promise<void>;
  /** Its log so far (stderr), for a failing test's message. */
  log(): string;
  stop(): Promise<void>;
}

export interface AlertmanagerOptions {
  /** The trigger's URL. */
  webhookUrl: string;
  /** The bearer token, written to the file the receiver's credentials_file names. */
  token: string;
  groupBy?: string[];
  groupWait?: string;
  groupInterval?: string;
  repeatInterval?: string;
}

export async function startAlertmanager(options: AlertmanagerOptions): Promise<RunningAlertmanager> {
  const bin = BIN;
  if (bin === undefined) throw new Error('prometheus-alertmanager is not installed');
  const dir = await mkdtemp(join(tmpdir(), 'ak-alertmanager-'));
  const tokenFile = join(dir, 'token');
  await writeFile(tokenFile, `${options.token}\n`, { mode: 0o600 });
  const config = join(dir, 'alertmanager.yml');
  await writeFile(
    config,
    [
      'route:',
      '  receiver: kourier',
      `  group_by: [${(options.groupBy ?? ['alertname']).map((l) => `'${l}'`).join(', ')}]`,
      `  group_wait: ${options.groupWait ?? '1s'}`,
      `  group_interval: ${options.groupInterval ?? '2s'}`,
      `  repeat_interval: ${options.repeatInterval ?? '4s'}`,
      'receivers:',
      '  - name: kourier',
      '    webhook_configs:',
      `      - url: '${options.webhookUrl}'`,
      '        send_resolved: true',
      '        max_alerts: 50',
      '        http_config:',
      '          authorization:',
      '            type: Bearer',
      `            credentials_file: '${tokenFile}'`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const { url, log, stop } = await startReadyDaemon({
    name: 'alertmanager',
    bin,
    args: [
      `--config.file=${config}`,
      `--storage.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // One instance: no gossip port, no peers.
      '--cluster.listen-address=',
      '--log.level=debug',
    ],
    port,
    dir,
    stderrTail: 20000,
    pollMs: 100,
  });
  return {
    url,
    async send(alerts) {
      const res = await fetch(`${url}/api/v2/alerts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(alerts),
      });
      if (!res.ok) throw new Error(`alertmanager refused the alerts: ${res.status} ${await res.text()}`);
    },
    log,
    stop,
  };
}
