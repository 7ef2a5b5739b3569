import { describe, expect, it } from 'vitest';
import { KourierError } from './core/errors.js';
import { type Io, run, UsageError } from './main.js';

function io(): Io & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l) };
}

describe('agentkourier binary', () => {
  it('prints the version and the help', async () => {
    const a = io();
    expect(await run(['version'], a)).toBe(0);
    expect(a.lines[0]).toMatch(/^\d+\.\d+\.\d+/);
    expect(await run(['help'], a)).toBe(0);
    expect(a.lines[1]).toContain('Usage: agentkourier');
  });

  it('prints the controller settings for controller --help, without starting it', async () => {
    const a = io();
    expect(await run(['controller', '--help'], a)).toBe(0);
    expect(a.lines[0]).toContain('Usage: agentkourier controller');
    for (const setting of [
      'AGENTKOURIER_WATCH_NAMESPACES',
      'AGENTKOURIER_METRICS_PORT',
      'AGENTKOURIER_HTTP_PORT',
    ])
      expect(a.lines[0]).toContain(setting);
    expect(await run(['controller', '--bogus'], a)).toBe(2);
    expect(a.errors[0]).toContain('controller takes no arguments');
  });

  it('refuses an unknown command or a bad option with exit 2 and the usage on stderr', async () => {
    const a = io();
    expect(await run(['nope'], a)).toBe(2);
    expect(a.errors[0]).toContain('unknown command "nope"');
    expect(await run(['demo-agent', '--port', 'eighty'], a)).toBe(2);
    expect(a.errors[1]).toContain('--port must be a port number');
    expect(await run(['demo-agent', '--bogus'], a)).toBe(2);
    expect(a.lines).toEqual([]);
    // What main.ts throws for a bad command line is a typed error like every other.
    expect(new UsageError('x')).toBeInstanceOf(KourierError);
    expect(new UsageError('x').code).toBe('usage');
  });

  it('refuses local mode off loopback without a web chat token, saying how to give one', async () => {
    const a = io();
    const saved = process.env.AGENTKOURIER_WEBCHAT_TOKEN;
    delete process.env.AGENTKOURIER_WEBCHAT_TOKEN;
    try {
      expect(await run(['local', '--host', '0.0.0.0', '--port', '0', '--no-demo'], a)).toBe(2);
    } finally {
      if (saved !== undefined) process.env.AGENTKOURIER_WEBCHAT_TOKEN = saved;
    }
    expect(a.errors[0]).toContain('--host 0.0.0.0 is not a loopback address');
    expect(a.errors[0]).toContain('--token');
    expect(a.errors[0]).toContain('AGENTKOURIER_WEBCHAT_TOKEN');
    expect(a.lines).toEqual([]);
  });
});
