import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands on its own: nothing in it may point at a file outside the clone. What
 * the code relies on is written down under docs/ (docs/agent-contract.md, docs/architecture.md,
 * docs/reference/). Two kinds of reference are refused, each with a pattern kept narrow so that
 * paths the product itself uses (its state directory under /var/lib, PostgreSQL's binaries
 * under /usr/lib, `~/.cache/…`, URLs) stay allowed:
 *
 * - the steering folder next to the clone: `shared` reached through one or more `../`;
 * - a path that starts at the root of a build machine's own directories: the work directory
 *   (`work`), the super-user's home (`root`), or a person's home (`home/<name>`, macOS
 *   `Users/<name>`). Only where a path starts: the slash must not follow a letter, digit, dot,
 *   dash, tilde or another slash, so `https://host/work/` and `~/work/` are not matched.
 *
 * The patterns are written with escapes so this file does not match itself.
 */
const OUTSIDE_PATHS: ReadonlyArray<{ what: string; pattern: RegExp }> = [
  { what: 'the steering folder next to the clone', pattern: /(?:\.\.\/)+shared(?![\w-])/ },
  {
    what: 'an absolute path of a build machine',
    pattern: /(?<![\w.~/-])\/(?:(?:work|root)\/|(?:home|Users)\/[\w.-]+)/,
  },
];

/** Tracked files whose content is not ours to word: the lock file names registry URLs only. */
const SKIPPED = new Set(['package-lock.json']);

function outsideReferences(text: string): Array<{ line: number; what: string; match: string }> {
  const found: Array<{ line: number; what: string; match: string }> = [];
  text.split('\n').forEach((line, index) => {
    for (const { what, pattern } of OUTSIDE_PATHS) {
      const match = pattern.exec(line);
      if (match !== null) found.push({ line: index + 1, what, match: match[0] });
    }
  });
  return found;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f !== '' && !SKIPPED.has(f));
}

describe('no file refers to a path outside the repository', () => {
  it('holds for every tracked file', () => {
    const files = trackedFiles();
    expect(files.length).toBeGreaterThan(100);
    const problems: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), 'utf8');
      } catch {
        continue; // listed but absent (deleted in the work tree, not yet committed)
      }
      if (text.includes('\0')) continue; // binary
      for (const r of outsideReferences(text)) problems.push(`${file}:${r.line}: ${r.what} (${r.match})`);
    }
    expect(problems, `point these at docs/ instead:\n${problems.join('\n')}`).toEqual([]);
  });
});

describe('the patterns', () => {
  // Built at run time, so the samples themselves are not references in this file.
  const up = (n: number) => '../'.repeat(n);
  const abs = (...parts: string[]) => `/${parts.join('/')}`;

  it('find the steering folder and build-machine paths in prose, code and shell', () => {
    for (const text of [
      `see ${up(1)}shared/spec/agent-contract.txt`,
      ` * - ${up(3)}shared/reference/slack.md for details`,
      `Written from ${abs('work', 'shared', 'reference', 'a2a-protocol.md')}, not from src/`,
      `cd ${abs('work', 'wt', 'x')} && npm test`,
      `"cwd": "${abs('root', 'project')}"`,
      `HOME=${abs('home', 'builder')}`,
      `(${abs('Users', 'ada', 'code')})`,
    ])
      expect(outsideReferences(text), text).toHaveLength(1);
  });

  it('leave the paths the product and its tests use alone', () => {
    for (const text of [
      'AGENTKOURIER_STORE default /var/lib/agentkourier/state.db',
      '[ -x /usr/lib/postgresql/15/bin/initdb ]',
      '~/.cache/agentkourier/kube-bins',
      'https://github.com/example/work/tree/main',
      `http://127.0.0.1:8080${abs('work', 'items')}`,
      "args: { path: '/tmp/old' }",
      'docs/reference/a2a-wire.md',
      `a folder named ${up(1)}shared-state`,
      `${up(1)}sharedwork`,
    ])
      expect(outsideReferences(text), text).toEqual([]);
  });
});
