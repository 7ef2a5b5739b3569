import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';

/**
 * Calls `onChange` after the file was written, debounced. The directory is watched, not the
 * file: editors that save by writing a new file and renaming it over the old one (vim, most
 * IDEs) would leave a watch on the old file's inode deaf after the first save.
 */

export interface FileWatch {
  close(): void;
}

export function watchFile(
  file: string,
  onChange: () => void,
  options: { debounceMs: number; logger: Logger },
): FileWatch {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const fire = (): void => {
    timer = undefined;
    if (!closed) onChange();
  };
  // Not persistent: the watch alone must not keep the process running.
  const watcher: FSWatcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
    // Some platforms do not say which file changed: read it again then, to be safe.
    if (changed !== null && changed !== name) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(fire, options.debounceMs);
  });
  watcher.on('error', (error) =>
    options.logger.warn({ file, err: error }, 'watching the manifest file failed'),
  );
  return {
    close: () => {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      watcher.close();
    },
  };
}
