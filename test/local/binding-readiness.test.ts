import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { createLogger } from '../../src/observability/logging.js';
import type { BindingView } from '../../src/surfaces/webchat/index.js';

/**
 * Newcomer trial: with a wrong `url` in examples/local.yaml the terminal logged CardFetchFailed,
 * but the page offered the Binding as if all were well, /readyz said ready and /api/bindings had
 * no readiness. Now the API and the page say the Binding is not ready and why, and /readyz too.
 */
describe('local mode with an agent that cannot be reached', () => {
  let running: RunningLocal | undefined;
  let dir: string | undefined;
  let closed: Server | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await new Promise<void>((resolve) => (closed === undefined ? resolve() : closed.close(() => resolve())));
    closed = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** A port nothing answers on: taken by a server here, then released. */
  async function deadPort(): Promise<number> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    return address.port;
  }

  /** Local mode on `config` (with the demo agent or not), and the Bindings its API lists. */
  async function started(config: string, demo: boolean): Promise<{ base: string; bindings: BindingView[] }> {
    const started = await startLocal({
      config,
      host: '127.0.0.1',
      port: 0,
      demo,
      demoPort: 0,
      env: { AGENTKOURIER_STORE: `sqlite:${join(dir ?? '', 'state.db')}` },
      out: () => undefined,
      pageScript: buildPageScript,
      logger: createLogger({ level: 'silent' }),
    });
    running = started;
    const base = started.url.replace(/\/$/, '');
    const { bindings } = (await (await fetch(`${base}/api/bindings`)).json()) as { bindings: BindingView[] };
    return { base, bindings };
  }

  it('says so in /api/bindings, in the page’s words, and in /readyz', async () => {
    dir = await mkdtemp(join(tmpdir(), 'ak-readiness-'));
    const manifest = join(dir, 'local.yaml');
    const example = await readFile('examples/local.yaml', 'utf8');
    const wrong = `http://127.0.0.1:${await deadPort()}`;
    await writeFile(manifest, example.replace(/url: \$\{DEMO_AGENT_URL\}/, `url: ${wrong}`));
    const { base, bindings } = await started(manifest, false);
    expect(bindings).toHaveLength(1);
    expect(bindings[0]).toMatchObject({
      ref: 'default/demo',
      ready: false,
      problem: { reason: 'CardFetchFailed' },
    });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toContain('Binding default/demo is not ready (CardFetchFailed');
    // The page says it where a first message is written and under the Binding's name.
    const { firstMessageHint } = await import('../../src/surfaces/webchat/page/sidebar.js');
    expect(firstMessageHint(bindings, 'default/demo')).toMatch(
      /^This agent is not ready \(CardFetchFailed: .+\)\. A message waits until it is\.$/,
    );
  });

  it('says ready when every Binding is', async () => {
    dir = await mkdtemp(join(tmpdir(), 'ak-readiness-'));
    const { base, bindings } = await started('examples/local.yaml', true);
    expect(bindings[0]).toMatchObject({ ref: 'default/demo', ready: true });
    expect(bindings[0]?.problem).toBeUndefined();
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });
});
