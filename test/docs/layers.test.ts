import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Which folder may import which (docs/architecture.md, "Direction of dependencies"), read from the
 * relative imports of every tracked TypeScript file. The rules that keep the layers apart:
 *
 * - the product (src/, tests aside) imports nothing of the tests, the test kit or the bench;
 * - the shared control plane (src/control/) knows neither control plane that uses it, and local
 *   mode (src/local/) reaches the shared part, never the Kubernetes one (src/k8s/);
 * - the bench and the test kit (testkit/: the fake Slack, the SDK values) import no test, and
 *   the test kit no bench.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Rule {
  what: string;
  from: (file: string) => boolean;
  /** Folders (repository-relative, with a trailing slash) the files may not import from. */
  never: string[];
}

const isTest = (file: string): boolean => /\.test\.ts$/.test(file);

const RULES: Rule[] = [
  {
    what: 'the product imports no test, test kit or bench',
    from: (f) => f.startsWith('src/') && !isTest(f),
    never: ['test/', 'testkit/', 'bench/'],
  },
  {
    what: 'the shared control plane knows neither mode',
    from: (f) => f.startsWith('src/control/'),
    never: ['src/k8s/', 'src/local/'],
  },
  {
    what: 'local mode builds on the shared control plane only',
    from: (f) => f.startsWith('src/local/'),
    never: ['src/k8s/'],
  },
  { what: 'the bench imports no test', from: (f) => f.startsWith('bench/'), never: ['test/'] },
  {
    what: 'the test kit imports no test and no bench',
    from: (f) => f.startsWith('testkit/'),
    never: ['test/', 'bench/'],
  },
];

const IMPORT = /(?:from|import)\s*\(?\s*['"](\.\.?\/[^'"]+)['"]/g;

function trackedTypeScript(): string[] {
  return execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => f.endsWith('.ts'));
}

/** The repository-relative files a file imports through relative paths. */
function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(IMPORT)].map((m) => normalize(join(dirname(file), m[1] ?? '')));
}

function breaches(files: ReadonlyMap<string, string>): string[] {
  const found: string[] = [];
  for (const [file, text] of files) {
    for (const rule of RULES) {
      if (!rule.from(file)) continue;
      for (const target of importsOf(file, text)) {
        const folder = rule.never.find((f) => target.startsWith(f));
        if (folder !== undefined) found.push(`${file} imports ${target} (${rule.what})`);
      }
    }
  }
  return found;
}

describe('the layers of the repository', () => {
  it('hold for every tracked TypeScript file', () => {
    const files = new Map<string, string>();
    for (const file of trackedTypeScript()) {
      try {
        files.set(file, readFileSync(join(ROOT, file), 'utf8'));
      } catch {
        // Deleted in the work tree but still tracked: nothing to read.
      }
    }
    expect(files.size).toBeGreaterThan(100);
    expect(breaches(files)).toEqual([]);
  });

  it('are read from the imports as written (a breach of each rule is found)', () => {
    const files = new Map([
      ['src/core/x.ts', "import { a } from '../../test/helpers/y.js';"],
      ['src/control/x.ts', "import type { K } from '../k8s/kube-api.js';"],
      ['src/local/x.ts', "export { C } from '../k8s/controller.js';"],
      ['bench/x.ts', "import { startFakeSlack } from '../test/slack/fake-slack.js';"],
      ['testkit/slack/x.ts', "const m = await import('../../bench/run.js');"],
      ['src/local/fine.ts', "import { q } from '../control/queue.js';"],
      ['src/core/x.test.ts', "import { h } from '../../test/helpers/y.js';"],
    ]);
    expect(breaches(files)).toEqual([
      'src/core/x.ts imports test/helpers/y.js (the product imports no test, test kit or bench)',
      'src/control/x.ts imports src/k8s/kube-api.js (the shared control plane knows neither mode)',
      'src/local/x.ts imports src/k8s/controller.js (local mode builds on the shared control plane only)',
      'bench/x.ts imports test/slack/fake-slack.js (the bench imports no test)',
      'testkit/slack/x.ts imports bench/run.js (the test kit imports no test and no bench)',
    ]);
  });
});
