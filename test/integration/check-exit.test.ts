import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { type ContractAgent, startContractAgent, trickle } from '../peers/contract-agent/contract-agent.js';

/**
 * Defect: against an agent whose card trickled in (headers, then a byte now and then),
 * `agentkourier check` printed its report but the process never exited: the card read went on
 * in the background and kept the connection, and so the process, alive. This runs the real
 * command in a child process and waits for it to end.
 */

const TSX = 'node_modules/.bin/tsx';

function runCheck(
  endpoint: string,
  limitMs: number,
): Promise<{ code: number | null; ms: number; out: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(TSX, ['src/main.ts', 'check', endpoint, '--timeout', '1s'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.stderr.resume();
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`agentkourier check did not exit within ${limitMs} ms; it printed:\n${out}`));
    }, limitMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, ms: performance.now() - started, out });
    });
  });
}

describe('agentkourier check ends, whatever the agent does', () => {
  const agents: ContractAgent[] = [];
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
  });

  it('[DT-2] exits with its verdict when the card trickles in for ever', async () => {
    const agent = await startContractAgent({ version: '1.0', card: { trickleMs: 300 } });
    agents.push(agent);
    const run = await runCheck(agent.endpoint, 45_000);
    expect(run.out).toMatch(/FAIL\s+card\.fetch/);
    expect(run.code).toBe(1);
  });

  it('[M-2] exits when every call after the card trickles', async () => {
    const agent = await startContractAgent({ version: '1.0' });
    agents.push(agent);
    for (let i = 0; i < 40; i++) agent.enqueue(trickle(200, 'json'));
    const run = await runCheck(agent.endpoint, 60_000);
    expect(run.code).toBe(1);
    expect(run.out).toMatch(/FAIL\s+reply\.task-events/);
  });
});
