import { readFile } from 'node:fs/promises';
import { WebChatBuildError } from './errors.js';

/**
 * The page's script, bundled at `npm run build` (scripts/build-webchat.ts writes app.js beside
 * this module in dist/) and read once per process. Building it there, not at start, keeps build
 * tools out of the production tree: only dependencies are installed in the image.
 */

let cached: Promise<string> | undefined;

export function prebuiltPageScript(): Promise<string> {
  cached ??= readFile(new URL('./app.js', import.meta.url), 'utf8').catch((cause: unknown) => {
    cached = undefined; // a later start may find it (after `npm run build`)
    throw new WebChatBuildError(
      'the web chat page is not built: `npm run build` writes dist/surfaces/webchat/app.js',
      { cause },
    );
  });
  return cached;
}
