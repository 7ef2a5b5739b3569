import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WebChatBuildError } from './errors.js';

/**
 * The page's script, bundled in-process with esbuild's JS API the first time a server starts,
 * then kept for the life of the process. Building at start (not at `npm run build`) is what
 * lets `npm start` work on a fresh clone with no build step. From source (tsx) the entry is
 * page/main.ts; from dist/ it is the page/main.js tsc emitted beside it.
 */

let cached: Promise<string> | undefined;

export function pageScript(): Promise<string> {
  cached ??= build().catch((error: unknown) => {
    cached = undefined; // a later start may succeed (a fixed source, an installed esbuild)
    throw error;
  });
  return cached;
}

function entryPoint(): string {
  for (const name of ['./page/main.ts', './page/main.js']) {
    const path = fileURLToPath(new URL(name, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new WebChatBuildError('the web chat page source (page/main.ts) is missing');
}

async function build(): Promise<string> {
  const entry = entryPoint();
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch (cause) {
    throw new WebChatBuildError('esbuild is needed to build the web chat page (npm ci installs it)', {
      cause,
    });
  }
  try {
    const result = await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      format: 'iife',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      write: false,
      logLevel: 'silent',
      legalComments: 'none',
    });
    const output = result.outputFiles[0];
    if (output === undefined) throw new WebChatBuildError('esbuild produced no output for the web chat page');
    return output.text;
  } catch (cause) {
    if (cause instanceof WebChatBuildError) throw cause;
    throw new WebChatBuildError('the web chat page did not build', { cause });
  }
}
