/**
 * What `npm start` runs before the broker: `npm run build`'s two steps (tsc, then the web chat
 * page's bundle), skipped when nothing they read changed since the last build. tsc runs incremental here
 * (its notes in dist/.tsbuildinfo), so a build after a small change recompiles only what it
 * touches; `npm run build` (the image's) stays a full build that leaves no such notes.
 *
 * "Changed" is by modification time: the newest of src/, the tsconfig files, package-lock.json
 * and the build scripts against dist/.build-stamp, written after a build that succeeded. A
 * build that fails writes no stamp, so the next start builds again.
 *
 *   node scripts/build-if-changed.ts   (Node 24 runs the TypeScript as is)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(ROOT, 'dist', '.build-stamp');
const INPUTS = [
  'src',
  'tsconfig.json',
  'tsconfig.build.json',
  'package-lock.json',
  'scripts/build-webchat.ts',
  'scripts/build-if-changed.ts',
];
const OUTPUTS = ['dist/main.js', 'dist/surfaces/webchat/app.js'];

/** The newest modification time under `path` (a file, or a folder walked whole). */
function newest(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs; // a file deleted or renamed changes its folder
  for (const entry of readdirSync(path, { withFileTypes: true }))
    latest = Math.max(latest, newest(join(path, entry.name)));
  return latest;
}

export function upToDate(): boolean {
  const stamp = statSync(STAMP, { throwIfNoEntry: false });
  if (stamp === undefined || !OUTPUTS.every((o) => existsSync(join(ROOT, o)))) return false;
  return INPUTS.every((input) => newest(join(ROOT, input)) <= stamp.mtimeMs);
}

if (import.meta.main) {
  if (upToDate()) {
    console.log('dist/ is up to date with the sources: not building (delete dist/ to force a build)');
  } else {
    const startedAt = Date.now();
    // Stamped with the time the build began: a source saved during the build counts as newer.
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const run = (args: string[]): void => {
      execFileSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
    };
    run([tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo']);
    run([join(ROOT, 'scripts', 'build-webchat.ts')]);
    writeFileSync(STAMP, `${new Date(startedAt).toISOString()}\n`);
    utimesSync(STAMP, startedAt / 1000, startedAt / 1000);
    console.log(`built dist/ in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  }
}
