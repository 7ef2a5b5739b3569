import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import { createLogger } from '../../src/observability/logging.js';

/**
 * Defect: local mode could not set the web chat's token, so `--host` other than loopback always
 * failed although the web chat documents token mode. Now `startLocal` takes the token that
 * main.ts reads from --token or AGENTKOURIER_WEBCHAT_TOKEN.
 */
describe('local mode with a web chat token', () => {
  let running: RunningLocal | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function start(host: string, token: string | undefined): Promise<{ lines: string[] }> {
    dir = await mkdtemp(join(tmpdir(), 'ak-token-'));
    const lines: string[] = [];
    running = await startLocal({
      config: 'examples/local.yaml',
      host,
      port: 0,
      ...(token === undefined ? {} : { token }),
      demo: true,
      env: { AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}` },
      out: (line) => lines.push(line),
      pageScript: buildPageScript,
      logger: createLogger({ level: 'silent' }),
    });
    return { lines };
  }

  it('listens beyond loopback with a token, and every API call needs it', async () => {
    const token = 'a-long-enough-token-1234';
    const { lines } = await start('0.0.0.0', token);
    const port = new URL(running?.url ?? '').port;
    const api = `http://127.0.0.1:${port}/api/bindings`;
    expect((await fetch(api)).status).toBe(401);
    const ok = await fetch(api, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    // The token is never printed.
    expect(lines.join('\n')).not.toContain(token);
    expect(lines.join('\n')).toContain('#token=<your token>');
  });

  it('refuses to listen beyond loopback without one, and a token too short', async () => {
    await expect(start('0.0.0.0', undefined)).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(start('0.0.0.0', 'short')).rejects.toThrow(/at least 16 characters/);
  });
});
