import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { scrub, slackLogger } from './logger.js';

describe('scrub', () => {
  it('hides the OAuth body’s secrets and any Slack token in an SDK debug line', () => {
    const line =
      'http request body: {"code":"T1.abc","client_id":"1.2","client_secret":"s3cret","refresh_token":"xoxe-1-r"} Bearer xoxb-12-34-abc xoxe.xoxb-1-zz';
    const out = scrub(line);
    for (const secret of ['T1.abc', 's3cret', 'xoxe-1-r', 'xoxb-12-34-abc', 'xoxe.xoxb-1-zz'])
      expect(out).not.toContain(secret);
    expect(out).toContain('"client_id":"1.2"');
  });
});

describe('slackLogger', () => {
  function capture(level: string): { lines: Array<Record<string, unknown>>; logger: pino.Logger } {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const line of chunk.toString('utf8').split('\n'))
            if (line !== '') lines.push(JSON.parse(line));
          done();
        },
      }),
    );
    return { lines, logger };
  }

  it('neither joins nor scrubs a line below the level (the Web API client logs bodies at debug on every call)', () => {
    const { lines, logger } = capture('info');
    let read = 0;
    const part = {
      toString() {
        read++;
        return 'http request body: {"token":"xoxb-1-secret"}';
      },
    };
    slackLogger(logger).debug(part);
    expect(read).toBe(0);
    expect(lines).toHaveLength(0);
  });

  it('writes a line at the level scrubbed, with its component', () => {
    const { lines, logger } = capture('debug');
    slackLogger(logger, 'slack-web-api').debug('http request body:', '{"token":"xoxb-1-secret"}');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ component: 'slack-web-api' });
    expect(String(lines[0]?.msg)).toBe('http request body: {"token":"[redacted]"}');
  });
});
