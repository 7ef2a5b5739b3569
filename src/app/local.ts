import { createServer } from 'node:net';
import { loadBrokerConfig } from '../config/broker.js';
import { KourierError } from '../core/errors.js';
import { openBroker } from './broker.js';
import { type LocalOptions, LocalParts } from './local-parts.js';
import { Startup } from './startup.js';

/**
 * `agentkourier local` (what `npm start` runs): the broker on one laptop. The start-up both modes
 * share is ./broker.ts; this file adds local mode's part: Bindings from a YAML file (the CRD
 * shapes, reloaded on edit), the demo agent unless told not to, and the web chat on loopback,
 * which serves /metrics, /healthz and /readyz too (behind its token off loopback). State lives in SQLite under ./.agentkourier/
 * (the web chat's threads too: they come back after a restart),
 * and Slack joins in when its settings are in the environment. Trigger webhooks are served on the
 * web chat's port (POST /triggers/<namespace>/<binding>/<name>, with their own bearer tokens, not
 * the web chat's); their threads appear in the web chat under their Binding, or in Slack when the
 * trigger names a Slack channel and Slack runs.
 */

export { DEMO_AGENT_PORT, type LocalOptions } from './local-parts.js';

export interface RunningLocal {
  url: string;
  /** The demo agent's base URL, when it runs. */
  demoUrl?: string;
  /** Teams' messaging endpoint, when Teams' settings are in the environment. */
  teamsUrl?: string;
  stop(): Promise<void>;
}

/** The web chat's port is taken: most often a broker already running on this machine. */
export class PortInUseError extends KourierError {
  constructor(host: string, port: number) {
    super(
      'port_in_use',
      `port ${port} on ${host} is in use: is Agent Kourier already running? Stop it, or start this one with --port <another port>`,
    );
  }
}

/**
 * Fails with PortInUseError when the port cannot be listened on, before anything else starts:
 * a second broker must not open the first one's database only to fail at its last step.
 */
async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(host, port) : error),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

export async function startLocal(options: LocalOptions): Promise<RunningLocal> {
  await checkPortFree(options.host, options.port);
  const config = loadBrokerConfig(options.env, {
    store: { kind: 'sqlite', path: '.agentkourier/state.db' },
    httpPort: 8081,
    // A person at a terminal reads these lines; LOG_FORMAT=json gives the cluster's lines.
    logFormat: 'pretty',
  });
  const startup = new Startup();
  const broker = openBroker({
    env: options.env,
    config,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    onStop: () => startup.drain(),
  });
  try {
    const parts = new LocalParts(broker, startup, config, options);
    await startup.run(parts.steps());
    for (const line of parts.summary()) options.out(line);
    const { chatUrl, demoUrl, teamsUrl } = parts;
    return {
      url: chatUrl,
      ...(demoUrl === undefined ? {} : { demoUrl }),
      ...(teamsUrl === undefined ? {} : { teamsUrl }),
      stop: broker.stop,
    };
  } catch (error) {
    await broker.stop();
    throw error;
  }
}
