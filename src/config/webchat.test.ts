import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../core/errors.js';
import { loadWebChatSettings } from './webchat.js';

const TOKEN = 'a-token-of-24-characters';

describe('loadWebChatSettings', () => {
  it('is off without a port, whatever else is set', () => {
    expect(loadWebChatSettings({})).toBeUndefined();
    expect(
      loadWebChatSettings({ AGENTKOURIER_WEBCHAT_PORT: ' ', AGENTKOURIER_WEBCHAT_TOKEN: TOKEN }),
    ).toBeUndefined();
  });

  it('listens on loopback by default, with the token (trimmed: a Secret file may end in a newline)', () => {
    expect(
      loadWebChatSettings({ AGENTKOURIER_WEBCHAT_PORT: '8082', AGENTKOURIER_WEBCHAT_TOKEN: `${TOKEN}\n` }),
    ).toEqual({ port: 8082, host: '127.0.0.1', token: TOKEN });
    expect(
      loadWebChatSettings({
        AGENTKOURIER_WEBCHAT_PORT: '8082',
        AGENTKOURIER_WEBCHAT_TOKEN: TOKEN,
        AGENTKOURIER_WEBCHAT_HOST: '0.0.0.0',
      })?.host,
    ).toBe('0.0.0.0');
  });

  it.each([
    [
      { AGENTKOURIER_WEBCHAT_PORT: '8082' },
      'AGENTKOURIER_WEBCHAT_TOKEN is required when AGENTKOURIER_WEBCHAT_PORT is set',
    ],
    [
      { AGENTKOURIER_WEBCHAT_PORT: '8082', AGENTKOURIER_WEBCHAT_TOKEN: '  ' },
      'AGENTKOURIER_WEBCHAT_TOKEN is required',
    ],
    [
      { AGENTKOURIER_WEBCHAT_PORT: '8082', AGENTKOURIER_WEBCHAT_TOKEN: 'short-secret' },
      'AGENTKOURIER_WEBCHAT_TOKEN must be at least 16 characters',
    ],
    [
      { AGENTKOURIER_WEBCHAT_PORT: '8082', AGENTKOURIER_WEBCHAT_TOKEN: 'two words of a long token' },
      'AGENTKOURIER_WEBCHAT_TOKEN must not contain whitespace',
    ],
    [
      { AGENTKOURIER_WEBCHAT_PORT: 'web', AGENTKOURIER_WEBCHAT_TOKEN: TOKEN },
      'AGENTKOURIER_WEBCHAT_PORT must be a port number',
    ],
    [
      { AGENTKOURIER_WEBCHAT_PORT: '70000', AGENTKOURIER_WEBCHAT_TOKEN: TOKEN },
      'AGENTKOURIER_WEBCHAT_PORT must be a port number',
    ],
    [
      {
        AGENTKOURIER_WEBCHAT_PORT: '8082',
        AGENTKOURIER_WEBCHAT_TOKEN: TOKEN,
        AGENTKOURIER_WEBCHAT_HOST: 'localhost',
      },
      'AGENTKOURIER_WEBCHAT_HOST must be an IP address',
    ],
  ])('refuses %j, naming the setting and never the token', (env, words) => {
    let caught: unknown;
    try {
      loadWebChatSettings(env);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidConfigError);
    expect((caught as Error).message).toContain(words);
    for (const value of [TOKEN, 'short-secret', 'two words of a long token']) {
      expect((caught as Error).message).not.toContain(value);
    }
  });
});
