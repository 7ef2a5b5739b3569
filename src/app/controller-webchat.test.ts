import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../core/errors.js';
import { startController } from './controller.js';

const TOKEN = 'a-web-chat-token-of-the-test';

/** The start refuses a web chat it could not guard, before it opens anything. */
describe('startController with the web chat', () => {
  const base = { AGENTKOURIER_NAMESPACE: 'agentkourier', AGENTKOURIER_HTTP_PORT: '8080' };

  it.each([
    [
      { AGENTKOURIER_WEBCHAT_PORT: '8082' },
      'AGENTKOURIER_WEBCHAT_TOKEN is required when AGENTKOURIER_WEBCHAT_PORT is set',
    ],
    [
      { AGENTKOURIER_WEBCHAT_PORT: '8080', AGENTKOURIER_WEBCHAT_TOKEN: TOKEN },
      'AGENTKOURIER_WEBCHAT_PORT must differ from AGENTKOURIER_HTTP_PORT and AGENTKOURIER_METRICS_PORT',
    ],
    [
      { AGENTKOURIER_WEBCHAT_PORT: '9090', AGENTKOURIER_WEBCHAT_TOKEN: TOKEN },
      'AGENTKOURIER_WEBCHAT_PORT must differ',
    ],
  ])('refuses %j with a message naming the setting', async (webchat, words) => {
    const start = startController({ env: { ...base, ...webchat }, out: () => undefined });
    await expect(start).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(start).rejects.toThrow(words);
    await start.catch((error: unknown) => expect(String(error)).not.toContain(TOKEN));
  });
});
