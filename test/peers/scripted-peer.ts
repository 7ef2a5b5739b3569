import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';

/**
 * What the two official JS SDK peers share (js-sdk-agent.ts, the 1.x server; js-sdk-v03-agent.ts,
 * the native 0.3 one): the scenario table that picks a reply from the user's text, the runs that
 * a cancel or a close aborts, the request recorder in front of the SDK, and the loopback server.
 * Each peer only maps the table's steps to its own SDK's events.
 *
 *   any other text: task, working, `chunkCount` chunks "chunk i " of artifact "answer", completed
 *   "ask":     task, artifact "asking", input-required ("What is your name?"); the follow-up on
 *              that task gets artifact "hello <answer>" and completes
 *   "slow":    task, working, "chunk 0 ", then waits (cancel, or 3 s), "chunk 1 ", completed
 *   "fail":    task, failed ("rate limit exceeded")
 *   "message": a bare Message "just a message", no task
 */

export const SLOW_WAIT_MS = 3000;

/** The card's one skill, the same on both peers. */
export const SCRIPTED_SKILL = {
  id: 'scripted',
  name: 'Scripted replies',
  description: 'Replies chosen by the message text: ask, slow, fail, message, or anything else',
  tags: ['test'],
  examples: ['hello', 'ask', 'slow', 'fail', 'message'],
};

export type PeerState = 'working' | 'input-required' | 'completed' | 'failed' | 'canceled';

/** The steps of a reply, in the table's words: each peer publishes them as its SDK's events. */
export interface ScriptedBus {
  /** The turn's task: the one it continues, or a new one in state submitted. */
  task(): void;
  status(state: PeerState, message?: string): void;
  artifact(artifactId: string, text: string, append: boolean, lastChunk: boolean): void;
}

export interface ScriptedTurn {
  /** The scripted word (or, after "ask", the answer). */
  text: string;
  /** The turn continues a task that waits for input: it is the answer to "ask". */
  followsQuestion: boolean;
}

export interface ScriptOptions {
  chunkCount: number;
  chunkDelayMs: number;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects: the caller checks it). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The scenario table: plays one turn (after its task was published) until it ends or is aborted. */
export async function playTurn(
  turn: ScriptedTurn,
  bus: ScriptedBus,
  options: ScriptOptions,
  signal: AbortSignal,
): Promise<void> {
  if (turn.followsQuestion) {
    bus.status('working');
    bus.artifact('answer', `hello ${turn.text}`, false, true);
    bus.status('completed');
    return;
  }
  switch (turn.text) {
    case 'ask':
      bus.artifact('asking', 'I need to know who you are.', false, true);
      bus.status('input-required', 'What is your name?');
      return;
    case 'slow':
      bus.status('working');
      bus.artifact('answer', 'chunk 0 ', false, false);
      await sleep(SLOW_WAIT_MS, signal);
      if (signal.aborted) return;
      bus.artifact('answer', 'chunk 1 ', true, true);
      bus.status('completed');
      return;
    case 'fail':
      bus.status('failed', 'rate limit exceeded');
      return;
    default:
      bus.status('working');
      for (let i = 0; i < options.chunkCount; i++) {
        if (i > 0 && options.chunkDelayMs > 0) {
          await sleep(options.chunkDelayMs, signal);
          if (signal.aborted) return;
        }
        bus.artifact('answer', `chunk ${i} `, i > 0, i === options.chunkCount - 1);
      }
      bus.status('completed');
  }
}

/** The turns running now, by task id: a cancel aborts one, closing the peer aborts them all. */
export class ScriptedRuns {
  readonly #running = new Map<string, AbortController>();
  /** contextId of every task seen, so a cancel can name the context in its status update. */
  readonly #contexts = new Map<string, string>();

  /** Plays `turn` for a task; the task is published first. */
  async run(
    taskId: string,
    contextId: string,
    turn: ScriptedTurn,
    bus: ScriptedBus,
    options: ScriptOptions,
  ): Promise<void> {
    this.#contexts.set(taskId, contextId);
    const controller = new AbortController();
    this.#running.set(taskId, controller);
    try {
      bus.task();
      await playTurn(turn, bus, options, controller.signal);
    } finally {
      if (this.#running.get(taskId) === controller) this.#running.delete(taskId);
    }
  }

  /** Publishes the cancel (`announce`, given the task's context), then stops the task's turn. */
  cancel(taskId: string, announce: (contextId: string) => void): void {
    announce(this.#contexts.get(taskId) ?? '');
    // The running turn returns without publishing more.
    this.#running.get(taskId)?.abort();
  }

  /** Stops every running turn (on close, so no timer outlives the server). */
  abortAll(): void {
    for (const controller of this.#running.values()) controller.abort();
    this.#running.clear();
  }
}

export interface RecordedRequest {
  /** The JSON-RPC method ('' when the body could not be parsed or had no string method). */
  method: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body; the raw text when it is not JSON; undefined when there was no body. */
  body: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function methodOf(body: unknown): string {
  return isRecord(body) && typeof body.method === 'string' ? body.method : '';
}

/**
 * Records every POST before the SDK sees it. JSON bodies are parsed here with the same parser
 * and defaults the SDK's router uses (express.json()), so the SDK's own parser then skips the
 * already-read body; a JSON syntax error gets the reply the SDK's own jsonErrorHandler gives,
 * -32700 with the HTTP status of that SDK version (`syntaxErrorStatus`). Other content types are
 * read as text for the record only, and req.body is reset so the SDK sees what it would have
 * seen (it rejects them or ignores the body).
 */
export function recorder(requests: RecordedRequest[], syntaxErrorStatus: number): express.RequestHandler {
  const json = express.json();
  const text = express.text({ type: () => true, limit: '10mb' });
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'POST') {
      next();
      return;
    }
    const headers: Record<string, string | string[] | undefined> = { ...req.headers };
    if (req.is('application/json')) {
      json(req, res, (err?: unknown) => {
        if (err !== undefined) {
          const raw = isRecord(err) && typeof err.body === 'string' ? err.body : undefined;
          requests.push({ method: '', headers, body: raw });
          // An error passed to next() would skip the SDK router, so answer as its jsonErrorHandler does.
          if (err instanceof SyntaxError && 'body' in err) {
            res
              .status(syntaxErrorStatus)
              .json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } });
            return;
          }
          next(err);
          return;
        }
        const body: unknown = req.body;
        requests.push({ method: methodOf(body), headers, body });
        next();
      });
      return;
    }
    // The SDK never parses these bodies, so a read error here only costs the record its body.
    text(req, res, () => {
      const raw: unknown = req.body;
      let body: unknown = typeof raw === 'string' && raw !== '' ? raw : undefined;
      if (typeof body === 'string') {
        try {
          body = JSON.parse(body);
        } catch {
          // keep the raw text
        }
      }
      requests.push({ method: methodOf(body), headers, body });
      req.body = undefined;
      next();
    });
  };
}

export interface PeerServer {
  app: express.Express;
  /** The JSON-RPC URL, http://127.0.0.1:PORT/a2a. */
  endpoint: string;
  /** Aborts the running turns and closes the server; idempotent. */
  close(runs: ScriptedRuns): Promise<void>;
}

/** An express app listening on 127.0.0.1, port 0, for a peer to mount its SDK's routes on. */
export async function startPeerServer(name: string): Promise<PeerServer> {
  const app = express();
  const server: Server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo | string | null;
  if (address === null || typeof address === 'string') throw new Error(`${name}: no TCP address`);
  let closed: Promise<void> | undefined;
  return {
    app,
    endpoint: `http://127.0.0.1:${address.port}/a2a`,
    close(runs) {
      closed ??= new Promise<void>((resolve, reject) => {
        runs.abortAll();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
