import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logging.js';

function sink(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
  };
}

describe('logging', () => {
  it('writes JSON lines and blanks tokens and identity headers', () => {
    const { stream, lines } = sink();
    const log = createLogger({ destination: stream });
    log.info(
      {
        headers: { authorization: 'Bearer s3cret', 'x-user-id': 'u-1', accept: 'x' },
        identity: { token: 't0k' },
      },
      'call',
    );
    const [line] = lines();
    expect(line?.msg).toBe('call');
    expect(JSON.stringify(line)).not.toContain('s3cret');
    expect(JSON.stringify(line)).not.toContain('t0k');
    expect(JSON.stringify(line)).not.toContain('u-1');
    expect(line?.headers).toMatchObject({ accept: 'x' });
  });
});

describe('logging: pretty lines for a terminal', () => {
  it('writes readable lines, not JSON, with the secrets blanked all the same', () => {
    const chunks: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        chunks.push(String(chunk));
        done();
      },
    });
    const log = createLogger({ format: 'pretty', destination: stream, colorize: false });
    log
      .child({ component: 'engine' })
      .info({ binding: 'default/demo', headers: { authorization: 'Bearer s3cret' } }, 'turn settled');
    const text = chunks.join('');
    expect(text).toMatch(
      /^\[\d\d:\d\d:\d\d\] INFO: \(engine\) turn settled \{.*"binding":"default\/demo".*\}\n$/,
    );
    expect(text).not.toContain('s3cret');
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
  });
});
