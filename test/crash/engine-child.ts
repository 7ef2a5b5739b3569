/**
 * One broker process for the crash tests: the engine on a durable store, an A2A client to the
 * parent's agent, the chat over HTTP. The parent kills it with SIGKILL at random points and
 * starts it again; every start receives the same chat messages again (a chat redelivers what
 * it is not sure was taken), which the engine must take as duplicates.
 *
 * With `stdin: true` it also takes messages later, one JSON object per line on stdin, and
 * answers each with `TAKEN <ts>` or `REFUSED <ts> <code>` on stdout (the fault matrix fills
 * its disk and wants to see a message refused, not the process gone).
 */
import { createInterface } from 'node:readline';
import { A2AClient } from '../../src/a2a/client.js';
import type { PollingSettings } from '../../src/core/ports.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import type { EngineTimings } from '../../src/core/session/timings.js';
import type { SessionStore } from '../../src/core/store.js';
import { a2aDialect } from '../../src/dialects/a2a.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { HttpSurface } from './http-surface.js';

export interface ChildConfig {
  store:
    | {
        kind: 'sqlite';
        path: string;
        /** 'normal': commits not synced (the power-loss test's negative control; the default is 'full'). */
        synchronous?: 'normal';
      }
    | { kind: 'postgres'; url: string; schema: string };
  agentEndpoint: string;
  chatUrl: string;
  owner: string;
  binding: string;
  messages: Array<{ thread: string; ts: string; text: string }>;
  timings: Partial<EngineTimings>;
  stdin?: boolean;
  /** P-1: the Binding polls (the agent's card does not stream). */
  polling?: PollingSettings;
}

const config = JSON.parse(process.env.CRASH_CONFIG ?? '{}') as ChildConfig;
const store: SessionStore =
  config.store.kind === 'sqlite'
    ? new SqliteStore(
        config.store.path,
        config.store.synchronous === 'normal' ? { synchronous: 'normal' } : {},
      )
    : new PostgresStore({ connectionString: config.store.url, schema: config.store.schema });
await store.migrate();
const client = new A2AClient({
  endpoint: config.agentEndpoint,
  identity: { kind: 'bearer', token: 'crash-token' },
  timeouts: { headersMs: 2_000, streamIdleMs: 2_000 },
  ...(config.polling === undefined ? {} : { polling: true }),
});
const settings = {
  questionTimeoutMs: null,
  ...(config.polling === undefined ? {} : { polling: config.polling }),
};
const engine = new SessionEngine({
  store,
  registry: {
    resolve: (b) => (b === config.binding ? { client, dialect: a2aDialect, settings } : undefined),
  },
  surface: new HttpSurface(config.chatUrl),
  owner: config.owner,
  timings: config.timings,
});
// A file-size limit (the disk-full row) must fail a write, not kill the process.
process.on('SIGXFSZ', () => undefined);
await engine.start();
const take = (m: { thread: string; ts: string; text: string }) =>
  engine.receive({
    kind: 'person',
    key: { surface: 'crash', workspaceId: 'T1', channelId: 'C1', threadId: m.thread },
    binding: config.binding,
    chatMessageId: m.ts,
    actor: { id: 'U1', name: 'Crash', label: '[Test: Crash (U1)]' },
    text: m.text,
    addressed: true,
  });
for (const m of config.messages) await take(m);
if (config.stdin === true) {
  for await (const line of createInterface({ input: process.stdin })) {
    const m = JSON.parse(line) as { thread: string; ts: string; text: string };
    try {
      await take(m);
      process.stdout.write(`TAKEN ${m.ts}\n`);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      process.stdout.write(`REFUSED ${m.ts} ${typeof code === 'string' ? code : 'error'}\n`);
    }
  }
}
process.stdout.write('READY\n');
setInterval(() => undefined, 60_000);
