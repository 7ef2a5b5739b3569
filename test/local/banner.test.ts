import { describe, expect, it } from 'vitest';
import { demoCheckCommand, localBanner } from '../../src/app/banner.js';
import { runCheck } from '../../src/check/index.js';
import { startDemoAgent } from '../../src/demo/demo-agent.js';

describe('npm start banner', () => {
  it('names the web chat, the demo agent and a check command that the demo agent passes with no warning', async () => {
    const demo = await startDemoAgent({ chunkDelayMs: 0 });
    try {
      const lines = localBanner({ chatUrl: 'http://127.0.0.1:8080/', demoAgentUrl: demo.url });
      expect(lines).toContain('  web chat    open http://127.0.0.1:8080/');
      expect(lines).toContain(`  demo agent  ${demo.url} (kagent-v1, agent demo/assistant)`);
      const command = demoCheckCommand(demo.url);
      expect(lines).toContain(`  try         ${command}`);
      // The command as printed, run: `npx tsx src/main.ts check …` is the project's own binary.
      const [prefix, args] = command.split(' src/main.ts ');
      expect(prefix).toBe('npx tsx');
      const argv = (args ?? '').split(' ');
      expect(argv[0]).toBe('check');
      const out: string[] = [];
      const code = await runCheck(argv.slice(1), { out: (l) => out.push(l), err: (l) => out.push(l) });
      // Every rule passes; only what a short check cannot try is skipped.
      const verdicts = out.filter((l) => /^(PASS|FAIL|WARN|SKIP) /.test(l));
      expect(verdicts.length).toBeGreaterThan(15);
      expect(verdicts.filter((l) => !l.startsWith('PASS'))).toEqual([
        expect.stringMatching(/^SKIP {2}reply\.events-5min +cannot be proven in a short check/),
        expect.stringMatching(/^SKIP {2}identity\.verified +give --identity-keys/),
        expect.stringMatching(/^SKIP {2}poll\.progress +not asked for/),
      ]);
      expect(code).toBe(0);
    } finally {
      await demo.close();
    }
  });

  it('leaves the demo lines out with --no-demo', () => {
    const lines = localBanner({ chatUrl: 'http://127.0.0.1:9000/' }).join('\n');
    expect(lines).toContain('open http://127.0.0.1:9000/');
    expect(lines).toContain('http://127.0.0.1:9000/metrics');
    expect(lines).not.toContain('demo agent');
    expect(lines).not.toContain('check');
  });
});
