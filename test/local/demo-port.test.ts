import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { DEMO_AGENT_PORT } from '../../src/app/local.js';
import { capturingLogger } from '../k8s/cluster-helpers.js';
import { freePort } from '../k8s/processes.js';
import { LocalRun } from './local-run.js';

/**
 * Defect: local mode's demo agent took a new port at every start, so the `check` command the
 * banner prints changed each time. It listens on one port now, and only when that is taken on
 * another, saying so.
 */
describe('local mode: the demo agent’s port', () => {
  const local = new LocalRun('ak-demo-port');
  let blocker: Server | undefined;
  afterEach(async () => {
    await local.close();
    await new Promise((resolve) => (blocker === undefined ? resolve(undefined) : blocker.close(resolve)));
    blocker = undefined;
  });

  const start = (demoPort: number, logger = capturingLogger().logger) => local.start({ demoPort, logger });

  it('is 8090 by default, the port `agentkourier demo-agent` uses', () => {
    expect(DEMO_AGENT_PORT).toBe(8090);
  });

  it('is the same port at every start', async () => {
    const port = await freePort();
    expect((await start(port)).demoUrl).toBe(`http://127.0.0.1:${port}`);
    await local.stop();
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
