import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { createLogger } from '../../src/observability/logging.js';

/**
 * Local mode as `npm start` runs it (examples/local.yaml, the demo agent, the web chat on a port
 * of its own), with its SQLite file in a directory of the test's; start() again after stop()
 * reuses the file, close() removes it.
 */
export class LocalRun {
  running: RunningLocal | undefined;
  #dir: string | undefined;

  constructor(readonly prefix: string) {}

  /** The SQLite file (after the first start). */
  get db(): string {
    if (this.#dir === undefined) throw new Error('not started yet');
    return join(this.#dir, 'state.db');
  }

  /** demoPort 0 by default: tests run side by side and the demo's usual port may be taken. */
  async start(o: { demoPort?: number; logger?: Logger } = {}): Promise<RunningLocal> {
    this.#dir ??= await mkdtemp(join(tmpdir(), `${this.prefix}-`));
    this.running = await startLocal({
      config: 'examples/local.yaml',
      host: '127.0.0.1',
      port: 0,
      demo: true,
      demoPort: o.demoPort ?? 0,
      env: { AGENTKOURIER_STORE: `sqlite:${this.db}` },
      out: () => undefined,
      pageScript: buildPageScript,
      logger: o.logger ?? createLogger({ level: 'silent' }),
    });
    return this.running;
  }

  async stop(): Promise<void> {
    await this.running?.stop();
    this.running = undefined;
  }

  async close(): Promise<void> {
    await this.stop();
    if (this.#dir !== undefined) await rm(this.#dir, { recursive: true, force: true });
    this.#dir = undefined;
  }
}
