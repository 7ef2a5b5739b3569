import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCheck } from '../../src/check/index.js';
import { type DemoAgent, startDemoAgent } from '../../src/demo/demo-agent.js';

describe('agentkourier check against the built-in demo agent', () => {
  let demo: DemoAgent;
  beforeAll(async () => {
    demo = await startDemoAgent({ chunkDelayMs: 0 });
  });
  afterAll(async () => demo.close());

  it('passes every rule (a warning or a skip says why)', async () => {
    const out: string[] = [];
    const err: string[] = [];
    // The demo agent answers what check tries (a finished task's subscribe) quietly: no stack
    // trace on the terminal of whoever runs it.
    const printed = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const code = await runCheck([demo.url, '--dialect', 'kagent-v1', '--agent', 'demo/assistant', '--json'], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    const report = JSON.parse(out.join('\n')) as {
      rules: Array<{ id: string; status: string; detail: string }>;
    };
    expect(report.rules.filter((r) => r.status === 'FAIL')).toEqual([]);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(printed.mock.calls).toEqual([]);
    printed.mockRestore();
    expect(report.rules.find((r) => r.id === 'turn.messageid-dedupe')?.status).toBe('PASS');
    expect(report.rules.find((r) => r.id === 'method.list-tasks')?.status).toBe('PASS');
  });
});
