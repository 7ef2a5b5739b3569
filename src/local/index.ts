import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { CardTimings } from '../control/card-check.js';
import type { AssertionsFor, ClientFactory } from '../control/live-clients.js';
import type { ControlPlaneTelemetry } from '../control/telemetry.js';
import type { LiveRegistry } from '../core/registry.js';
import type { TriggerDirectory } from '../core/triggers.js';
import { LocalBindings } from './bindings.js';
import { LocalFileError, LocalManifestError } from './errors.js';
import { parseManifests } from './manifests.js';
import type { LocalBindingStatus } from './status.js';
import { watchFile } from './watch.js';

/**
 * Local mode's control plane: AgentBackends, Bindings and Secrets from a YAML file instead of a
 * cluster, into the same LiveRegistry the controller feeds, through the same building blocks.
 *
 *   const local = await startLocalManifests({ file: 'examples/local.yaml', registry, logger, demoAgentUrl });
 *   local.bindings();   // [{ ref: 'default/demo', ready: true, reason: 'Ready', … }]
 *   …
 *   await local.close();
 *
 * The file holds `---`-separated documents: agentkourier.dev/v1alpha1 AgentBackend and Binding
 * (validated with the CRD schemas; unknown fields refused as `kubectl apply` does) and v1
 * Secret (`stringData`, or base64 `data`). metadata.namespace defaults to "default"; a Binding
 * reaches the AgentBackend and Secrets of its own namespace only. `${DEMO_AGENT_URL}` in an
 * AgentBackend's url is the demo agent's base URL (`demoAgentUrl`).
 *
 * A bad file at start rejects (LocalManifestError or LocalFileError: the command fails). While
 * running, the file is watched: a good edit is applied whole, a bad one is logged and the last
 * good configuration stays.
 */

export type { ManifestProblem } from './errors.js';
export { DEMO_AGENT_URL_PLACEHOLDER } from './local-rules.js';
export { DEFAULT_NAMESPACE } from './validate.js';
export type { LocalBindingStatus };
export { LocalFileError, LocalManifestError };

export type ReloadOutcome =
  | { ok: true; changed: boolean; bindings: number }
  | { ok: false; error: LocalManifestError | LocalFileError };

export interface LocalManifestsOptions {
  /** The YAML file; relative paths are resolved against the working directory. */
  file: string;
  registry: LiveRegistry;
  logger: Logger;
  /** The running demo agent's base URL, for `${DEMO_AGENT_URL}`. */
  demoAgentUrl?: string;
  /** Reload when the file changes (default true). */
  watch?: boolean;
  /** Quiet time after the last change before reading the file (default 150 ms). */
  debounceMs?: number;
  cardTimings?: Partial<CardTimings>;
  clientFactory?: ClientFactory;
  /** Metrics of reconciles and card reads, and the clients' telemetry (as the controller's). */
  telemetry?: ControlPlaneTelemetry;
  /** After every reload the watcher ran, good or bad (tests, and surfaces that list Bindings). */
  onReload?: (outcome: ReloadOutcome) => void;
  /** Each Binding's triggers go here (the trigger routes and the scheduler read it). */
  triggers?: TriggerDirectory;
  /** Signs per-person Bindings' assertions (src/identity/). */
  assertions?: AssertionsFor;
}

export interface LocalManifestsHandle {
  /** The absolute path being read. */
  readonly file: string;
  /** Every Binding of the file (last good version), sorted by ref, ready or why not. */
  bindings(): LocalBindingStatus[];
  /**
   * Reads the file again now. Rejects with LocalManifestError or LocalFileError when it is bad,
   * keeping the last good configuration. Reloads run one at a time.
   */
  reload(): Promise<void>;
  /** Resolves once no card read is waiting or running: Bindings show ready or why not. */
  idle(): Promise<void>;
  /** Stops watching and reading cards; the registry keeps its Bindings (as the controller's stop). */
  close(): Promise<void>;
}

/** Files bigger than this are not configuration someone wrote by hand. */
const MAX_FILE_BYTES = 4 * 1024 * 1024;

async function readManifestFile(file: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new LocalFileError(file, `cannot be read (${code ?? 'error'})`, { cause: error });
  }
  if (bytes.length > MAX_FILE_BYTES) {
    throw new LocalFileError(file, `is larger than ${MAX_FILE_BYTES} bytes`);
  }
  return bytes.toString('utf8');
}

export async function startLocalManifests(options: LocalManifestsOptions): Promise<LocalManifestsHandle> {
  const file = resolve(options.file);
  const log = options.logger.child({ component: 'local-manifests' });
  const bindings = new LocalBindings({
    registry: options.registry,
    logger: log,
    ...(options.cardTimings === undefined ? {} : { cardTimings: options.cardTimings }),
    ...(options.clientFactory === undefined ? {} : { clientFactory: options.clientFactory }),
    ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
    ...(options.triggers === undefined ? {} : { triggers: options.triggers }),
    ...(options.assertions === undefined ? {} : { assertions: options.assertions }),
  });
  const validate = { demoAgentUrl: options.demoAgentUrl };
  let lastText: string | undefined;
  let chain: Promise<unknown> = Promise.resolve();

  /** One reload: read, validate all, then apply all; nothing is applied from a bad file. */
  const load = async (fromWatch: boolean): Promise<ReloadOutcome> => {
    const text = await readManifestFile(file);
    const unchanged = { ok: true, changed: false, bindings: bindings.statuses().length } as const;
    // Editors fire several events per save: an unchanged file changes nothing.
    if (text === lastText) return unchanged;
    // A save that truncates before it writes shows an empty file for a moment; removing every
    // Binding then would tell their threads they are gone. The write that follows is seen too.
    if (fromWatch && text.trim() === '') {
      log.warn({ file }, 'the manifest file is empty; keeping the last configuration');
      return unchanged;
    }
    const manifests = parseManifests(text, options.file, validate);
    bindings.apply(manifests);
    lastText = text;
    if (manifests.bindings.length === 0) log.warn({ file }, 'the manifest file holds no Binding');
    else log.info({ file, bindings: manifests.bindings.length }, 'manifests loaded');
    return { ok: true, changed: true, bindings: manifests.bindings.length };
  };
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = chain.then(work, work);
    chain = run.catch(() => undefined);
    return run;
  };

  await serial(() => load(false));

  let closed = false;
  const onFileChange = (): void => {
    void serial(() => load(true)).then(
      (outcome) => {
        if (!closed) options.onReload?.(outcome);
      },
      (error: unknown) => {
        if (!(error instanceof LocalManifestError || error instanceof LocalFileError)) {
          log.error(
            { file, err: error },
            'reloading the manifests failed; keeping the last good configuration',
          );
          return;
        }
        // The message lists every problem with its document and field path.
        log.error(
          { file, problems: error.message.split('\n') },
          'invalid manifests; keeping the last good configuration',
        );
        if (!closed) options.onReload?.({ ok: false, error });
      },
    );
  };
  const watcher =
    options.watch === false
      ? undefined
      : watchFile(file, onFileChange, { debounceMs: options.debounceMs ?? 150, logger: log });

  return {
    file,
    bindings: () => bindings.statuses(),
    reload: async () => {
      await serial(() => load(false));
    },
    idle: () => bindings.idle(),
    close: async () => {
      closed = true;
      watcher?.close();
      await chain;
      await bindings.close();
    },
  };
}
