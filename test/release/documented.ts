import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The release's commands as the docs write them, read as a person copies them. */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Every ```sh block of a Markdown section (to the next heading of its level), as commands. */
export function shellCommands(file: string, heading: string): string[] {
  const doc = readFileSync(join(ROOT, file), 'utf8');
  const at = doc.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`${file}: no heading "${heading}"`);
  const level = heading.split(' ')[0] ?? '##';
  const rest = doc.slice(at + heading.length + 2);
  const end = rest.search(new RegExp(`^${level} `, 'm'));
  const section = end < 0 ? rest : rest.slice(0, end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  if (blocks.length === 0) throw new Error(`${file}: no sh block under "${heading}"`);
  return blocks
    .join('\n')
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** docs/releasing.md's `cosign verify…` commands under "Verifying what you install", as written. */
export function documentedVerifyCommands(): string[] {
  return shellCommands('docs/releasing.md', '## Verifying what you install').filter((line) =>
    line.startsWith('cosign verify'),
  );
}
