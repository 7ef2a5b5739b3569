import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { prometheusMissing, promtool } from './prometheus.js';

// The chart's alert rules, as Prometheus itself reads them: `promtool check rules` on the file,
// and `promtool test rules` firing each alert on the series it is about (and only on those).
// Whether every metric they read exists in a real scrape is test/integration/observability.test.ts.

const RULES = fileURLToPath(
  new URL('../../charts/agentkourier/files/prometheus-rules.yaml', import.meta.url),
);
const RULE_TESTS = fileURLToPath(new URL('./prometheus-rules.test.yaml', import.meta.url));

describe.skipIf(prometheusMissing !== undefined)(
  `alert rules${prometheusMissing === undefined ? '' : ` (skipped: ${prometheusMissing})`}`,
  () => {
    it('pass promtool check rules', async () => {
      const result = await promtool(['check', 'rules', RULES]);
      expect(result.stdout).toContain('SUCCESS: 8 rules found');
      expect(result.code).toBe(0);
    });

    it('fire as their unit tests say (promtool test rules)', async () => {
      const result = await promtool(['test', 'rules', RULE_TESTS]);
      expect(result.stdout + result.stderr).toContain('SUCCESS');
      expect(result.code).toBe(0);
    });

    it('would be refused with a broken expression (the check can fail)', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'ak-rules-'));
      try {
        const broken = join(dir, 'rules.yaml');
        const text = await readFile(RULES, 'utf8');
        await writeFile(
          broken,
          text.replace(
            'max by (namespace) (agentkourier_leader) < 1',
            'max by (namespace (agentkourier_leader) < 1',
          ),
        );
        const result = await promtool(['check', 'rules', broken]);
        expect(result.code).not.toBe(0);
        expect(result.stdout + result.stderr).toContain('FAILED');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  },
);
