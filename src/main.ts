#!/usr/bin/env node
import { readFileSync } from 'node:fs';

/**
 * The one binary, `agentkourier`. Subcommands arrive with their issues: `controller` (in
 * cluster), `local` (manifests from a file, SQLite, web chat), `check <url>` (the agent
 * contract checker). This file is the composition root: the only place that reads the
 * environment and wires the pieces together.
 */

const USAGE = `Usage: agentkourier <command>

Commands:
  version     print the version
  help        print this help

Coming next: controller, local, check <endpoint>.`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  return pkg.version ?? 'unknown';
}

export function run(argv: readonly string[], out: (line: string) => void): number {
  const [command] = argv;
  switch (command) {
    case 'version':
    case '--version':
      out(version());
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      out(USAGE);
      return 0;
    default:
      out(`agentkourier: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

if (import.meta.main) {
  process.exitCode = run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`));
}
