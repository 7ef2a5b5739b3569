import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * Runs one of the cached Go tool builds (scripts/kube-bins.sh, scripts/helm-bin.sh) for a test
 * setup, showing what it says on stderr but Go's "go: downloading <module>" lines: a cold build
 * prints hundreds of them, one per module, which say nothing a reader needs (the script's own
 * lines say what it builds and how long it took; Go's errors still show).
 */
export async function runGoToolBuild(script: string, ...args: string[]): Promise<void> {
  const child = spawn('bash', [script, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const lines = createInterface({ input: child.stderr });
  lines.on('line', (line) => {
    if (!line.startsWith('go: downloading ')) process.stderr.write(`${line}\n`);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`${script} failed (exit ${code})`);
}
