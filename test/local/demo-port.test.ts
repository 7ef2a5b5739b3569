import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { DEMO_AGENT_PORT, type RunningLocal, startLocal } from '../../src/app/local.js';
import { capturingLogger } from '../k8s/cluster-helpers.js';
import { freePort } from '../k8s/processes.js';

/**
 * Defect: local mode's demo agent took a new port at every start, so the `check` command the
 * banner prints changed each time. It listens on one port now, and only when that is taken on
 * another, saying so.
 */
describe('local mode: the demo agent’s port', () => {
  let running: RunningLocal | undefined;
  let dir: string | undefined;
  let blocker: Server | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await new Promise((resolve) => (blocker === undefined ? resolve(undefined) : blocker.close(resolve)));
    blocker = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function start(demoPort: number, logger = capturingLogger().logger): Promise<RunningLocal> {
    dir ??= await mkdtemp(join(tmpdir(), 'ak-demo-port-'));
    running = await startLocal({
      config: 'examples/local.yaml',
      host: '127.0.0.1',
      port: 0,
      demo: true,
      demoPort,
      env: { AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}` },
      out: () => undefined,
      pageScript: buildPageScript,
      logger,
    });
    return running;
  }

  it('is 8090 by default, the port `agentkourier demo-agent` uses', () => {
    expect(DEMO_AGENT_PORT).toBe(8090);
  });

  it('is the same port at every start', async () => {
    const port = await freePort();
    expect((await start(port)).demoUrl).toBe(`http://127.0.0.1:${port}`);
    await running?.stop();
    running = undefined;
    expect((await start(port)).demoUrl).toBe(`http://127.0.0.1:${port}`);
  });

  it('falls back to another port when that one is taken, and says so', async () => {
    const port = await freePort();
    blocker = createServer();
    await new Promise<void>((resolve) => blocker?.listen(port, '127.0.0.1', resolve));
    const log = capturingLogger();
    const { demoUrl } = await start(port, log.logger);
    expect(demoUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(demoUrl).not.toBe(`http://127.0.0.1:${port}`);
    const said = log.lines.map((l) => JSON.parse(l) as { msg: string; taken?: number });
    expect(said.some((l) => l.msg.includes('port is taken') && l.taken === port)).toBe(true);
  });
});
