import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Which folder may import which (docs/architecture.md, "Direction of dependencies"), read from the
 * relative imports of every tracked TypeScript file. The rules that keep the layers apart:
 *
 * - each folder of src/ imports only the folders its line of the page's matrix names (the matrix
 *   is read from the page, so the page and the code cannot drift apart), and every folder of
 *   src/ has a line: core imports nothing outside core, the surfaces never the store, the
 *   observability never a store's internals;
 * - the surfaces never import each other (Slack, the web chat);
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

const SURFACES = ['src/surfaces/slack/', 'src/surfaces/teams/', 'src/surfaces/webchat/'];
for (const surface of SURFACES)
  RULES.push({
    what: 'the surfaces never import each other',
    from: (f) => f.startsWith(surface) && !isTest(f),
    never: SURFACES.filter((other) => other !== surface),
  });

// The Slack surface's folders, top down (docs/architecture.md): each imports only those below it.
const SLACK_FOLDERS = ['prompts', 'answer', 'agent-app', 'inbound', 'installations', 'web-api'];
SLACK_FOLDERS.forEach((folder, i) => {
  RULES.push({
    what: `the Slack folders import downwards only (${SLACK_FOLDERS.join(' → ')})`,
    from: (f) => f.startsWith(`src/surfaces/slack/${folder}/`) && !isTest(f),
    never: SLACK_FOLDERS.slice(0, i).map((above) => `src/surfaces/slack/${above}/`),
  });
});

const IMPORT = /(?:from|import)\s*\(?\s*['"](\.\.?\/[^'"]+)['"]/g;

/**
 * The matrix of docs/architecture.md: each line `a, b ─► c, d (why)` says what a and b may
 * import; `nothing …` means no other folder. A parenthesis is a comment.
 */
function matrixOf(page: string): Map<string, Set<string>> {
  const start = page.indexOf('Production code (tests aside) imports, folder by folder:');
  const open = page.indexOf('```', start);
  const close = page.indexOf('```', open + 3);
  if (start < 0 || open < 0 || close < 0) throw new Error('docs/architecture.md has no matrix');
  const matrix = new Map<string, Set<string>>();
  for (const line of page.slice(open + 3, close).split('\n')) {
    const [from, to] = line.replace(/\([^)]*\)/g, '').split('─►');
    if (from === undefined || to === undefined) continue;
    const allowed = to.trim().startsWith('nothing')
      ? new Set<string>()
      : new Set(to.split(',').map((name) => name.trim()));
    for (const name of from.split(',')) matrix.set(name.trim().replace(/\.ts$/, ''), allowed);
  }
  return matrix;
}

/** The folder of src/ a file is in (`main` for src/main.ts); undefined outside src/. */
function areaOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] !== 'src' || parts.length < 2) return undefined;
  return parts.length === 2 ? (parts[1] ?? '').replace(/\.[jt]s$/, '') : parts[1];
}

/** Imports across src/ folders that the page's matrix does not allow, and folders it does not name. */
function matrixBreaches(files: ReadonlyMap<string, string>, matrix: Map<string, Set<string>>): string[] {
  const found: string[] = [];
  for (const [file, text] of files) {
    if (isTest(file)) continue;
    const from = areaOf(file);
    if (from === undefined) continue;
    const allowed = matrix.get(from);
    if (allowed === undefined) {
      found.push(`${file}: src/${from} has no line in docs/architecture.md's matrix`);
      continue;
    }
    for (const target of importsOf(file, text)) {
      const to = areaOf(target);
      if (to === undefined || to === from || allowed.has(to)) continue;
      found.push(
        `${file} imports ${target} (${from} may import ${[...allowed].join(', ') || 'nothing outside itself'})`,
      );
    }
  }
  return found;
}

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
    const matrix = matrixOf(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
    expect(matrix.get('core')).toEqual(new Set());
    expect(matrix.get('surfaces')?.has('store')).toBe(false);
    // One seam: a surface draws and reads the neutral question (core/question.ts), never an
    // agent's own payload, so a new surface needs no dialect.
    expect(matrix.get('surfaces')?.has('dialects')).toBe(false);
    expect(matrix.get('observability')?.has('store')).toBe(false);
    expect(matrixBreaches(files, matrix)).toEqual([]);
  });

  it('read the matrix from the page and find an import it does not allow', () => {
    const matrix = matrixOf(
      [
        'Production code (tests aside) imports, folder by folder:',
        '```',
        'main.ts ─► app',
        'surfaces ─► core, dialects (a note, core excluded)',
        'a2a, dialects ─► core',
        'core ─► nothing outside core (node only)',
        '```',
      ].join('\n'),
    );
    const files = new Map([
      ['src/surfaces/slack/connection.ts', "import { S } from '../../store/open.js';"],
      ['src/surfaces/slack/fine.ts', "import { C } from '../../core/ports.js';"],
      ['src/core/x.ts', "import { A } from '../a2a/client.js';"],
      ['src/main.ts', "import { run } from './app/broker.js';"],
      ['src/observability/x.ts', "import { M } from '../core/ports.js';"],
      ['src/surfaces/slack/x.test.ts', "import { S } from '../../store/open.js';"],
    ]);
    expect(matrixBreaches(files, matrix)).toEqual([
      'src/surfaces/slack/connection.ts imports src/store/open.js (surfaces may import core, dialects)',
      'src/core/x.ts imports src/a2a/client.js (core may import nothing outside itself)',
      "src/observability/x.ts: src/observability has no line in docs/architecture.md's matrix",
    ]);
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
      ['src/surfaces/webchat/x.ts', "import { s } from '../slack/connection.js';"],
    ]);
    expect(breaches(files)).toEqual([
      'src/core/x.ts imports test/helpers/y.js (the product imports no test, test kit or bench)',
      'src/control/x.ts imports src/k8s/kube-api.js (the shared control plane knows neither mode)',
      'src/local/x.ts imports src/k8s/controller.js (local mode builds on the shared control plane only)',
      'bench/x.ts imports test/slack/fake-slack.js (the bench imports no test)',
      'testkit/slack/x.ts imports bench/run.js (the test kit imports no test and no bench)',
      'src/surfaces/webchat/x.ts imports src/surfaces/slack/connection.js (the surfaces never import each other)',
    ]);
  });
});
