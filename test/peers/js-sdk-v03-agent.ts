// A real, independent A2A 0.3 test peer: the official @a2a-js/sdk@0.3.14 server (the last native
// 0.3 release, installed under the npm alias `a2a-sdk-v0-3`), started in-process. It speaks 0.3
// natively: kind-based objects, method names like `message/stream`, and the executor sets `final`
// on the status update that ends the interaction (the SDK closes the stream there).
// Its behaviour is chosen by the first text part of the user's message, as in js-sdk-agent.ts:
//   any other text: task, working, `chunkCount` chunks "chunk i " of artifact "answer", completed
//   "ask":     task, artifact "asking", input-required ("What is your name?", final); the
//              follow-up on that task gets artifact "hello <answer>" and completes
//   "slow":    task, working, "chunk 0 ", then waits (cancel, or 3 s), "chunk 1 ", completed
//   "fail":    task, failed ("rate limit exceeded")
//   "message": a bare Message "just a message", no task

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type {
  AgentCard,
  Message,
  Part,
  Task,
  TaskArtifactUpdateEvent,
  TaskState,
  TaskStatusUpdateEvent,
} from 'a2a-sdk-v0-3';
import {
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from 'a2a-sdk-v0-3/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from 'a2a-sdk-v0-3/server/express';
import express, { type NextFunction, type Request, type Response } from 'express';

export interface SdkV03AgentOptions {
  /** How many artifact chunks a normal answer streams (default 3). */
  chunkCount?: number;
  /** Delay between chunks in milliseconds (default 0). */
  chunkDelayMs?: number;
}

export interface SdkV03Agent {
  /** The JSON-RPC URL, e.g. http://127.0.0.1:PORT/a2a. The card is also at endpoint + '/.well-known/agent-card.json'. */
  endpoint: string;
  /**
   * Every JSON-RPC POST received, in order, recorded before the SDK handles it. method is '' when
   * the body could not be parsed or had no string method; body is the parsed JSON, the raw text
   * when it is not JSON, undefined when there was none.
   */
  requests: Array<{ method: string; headers: Record<string, string | string[] | undefined>; body: unknown }>;
  close(): Promise<void>;
}

type RecordedRequest = SdkV03Agent['requests'][number];

const SLOW_WAIT_MS = 3000;

function textPart(text: string): Part {
  return { kind: 'text', text };
}

function agentMessage(text: string, contextId: string, taskId: string | undefined): Message {
  return {
    kind: 'message',
    messageId: randomUUID(),
    role: 'agent',
    parts: [textPart(text)],
    contextId,
    ...(taskId === undefined ? {} : { taskId }),
  };
}

function firstText(message: Message): string {
  for (const part of message.parts) {
    if (part.kind === 'text') return part.text;
  }
  return '';
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

class PeerExecutor implements AgentExecutor {
  /** Running executions that can be cancelled, by task id. */
  private readonly running = new Map<string, AbortController>();
  /** contextId of every task this executor has seen, so cancelTask can build a status update. */
  private readonly contexts = new Map<string, string>();

  constructor(
    private readonly chunkCount: number,
    private readonly chunkDelayMs: number,
  ) {}

  /** Stop every running execution (used on close so no timer outlives the server). */
  abortAll(): void {
    for (const controller of this.running.values()) controller.abort();
    this.running.clear();
  }

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = ctx;
    const userMessage = ctx.userMessage;
    const text = firstText(userMessage);

    if (text === 'message' && ctx.task === undefined) {
      // A bare Message: no task. The SDK's event queue stops after a Message.
      bus.publish(agentMessage('just a message', contextId, undefined));
      bus.finished();
      return;
    }

    this.contexts.set(taskId, contextId);
    const controller = new AbortController();
    this.running.set(taskId, controller);
    try {
      const task: Task = ctx.task ?? {
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'submitted', timestamp: new Date().toISOString() },
        artifacts: [],
        history: [userMessage],
      };
      bus.publish(task);

      // A follow-up to a task waiting for input is the answer to "ask".
      if (ctx.task?.status.state === 'input-required') {
        this.status(bus, taskId, contextId, 'working', false);
        this.chunk(bus, taskId, contextId, 'answer', `hello ${text}`, false, true);
        this.status(bus, taskId, contextId, 'completed', true);
        return;
      }

      switch (text) {
        case 'ask':
          this.chunk(bus, taskId, contextId, 'asking', 'I need to know who you are.', false, true);
          // A native 0.3 agent marks the end of the interaction with final: true.
          this.status(
            bus,
            taskId,
            contextId,
            'input-required',
            true,
            agentMessage('What is your name?', contextId, taskId),
          );
          return;
        case 'slow':
          this.status(bus, taskId, contextId, 'working', false);
          this.chunk(bus, taskId, contextId, 'answer', 'chunk 0 ', false, false);
          await sleep(SLOW_WAIT_MS, controller.signal);
          if (controller.signal.aborted) return;
          this.chunk(bus, taskId, contextId, 'answer', 'chunk 1 ', true, true);
          this.status(bus, taskId, contextId, 'completed', true);
          return;
        case 'fail':
          this.status(
            bus,
            taskId,
            contextId,
            'failed',
            true,
            agentMessage('rate limit exceeded', contextId, taskId),
          );
          return;
        default: {
          this.status(bus, taskId, contextId, 'working', false);
          for (let i = 0; i < this.chunkCount; i++) {
            if (i > 0 && this.chunkDelayMs > 0) {
              await sleep(this.chunkDelayMs, controller.signal);
              if (controller.signal.aborted) return;
            }
            this.chunk(bus, taskId, contextId, 'answer', `chunk ${i} `, i > 0, i === this.chunkCount - 1);
          }
          this.status(bus, taskId, contextId, 'completed', true);
          return;
        }
      }
    } finally {
      if (this.running.get(taskId) === controller) this.running.delete(taskId);
      // Ends any event queue still listening (e.g. after an abort on close), as 0.3 executors do.
      bus.finished();
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const contextId = this.contexts.get(taskId) ?? '';
    // final: true ends the original stream, any resubscription, and the SDK's wait in tasks/cancel.
    this.status(bus, taskId, contextId, 'canceled', true, agentMessage('canceled', contextId, taskId));
    // The running execute() returns without publishing more.
    this.running.get(taskId)?.abort();
  };

  private status(
    bus: ExecutionEventBus,
    taskId: string,
    contextId: string,
    state: TaskState,
    final: boolean,
    message?: Message,
  ): void {
    const event: TaskStatusUpdateEvent = {
      kind: 'status-update',
      taskId,
      contextId,
      status: { state, timestamp: new Date().toISOString(), ...(message === undefined ? {} : { message }) },
      final,
    };
    bus.publish(event);
  }

  private chunk(
    bus: ExecutionEventBus,
    taskId: string,
    contextId: string,
    artifactId: string,
    text: string,
    append: boolean,
    lastChunk: boolean,
  ): void {
    const event: TaskArtifactUpdateEvent = {
      kind: 'artifact-update',
      taskId,
      contextId,
      artifact: { artifactId, name: artifactId, parts: [textPart(text)] },
      append,
      lastChunk,
    };
    bus.publish(event);
  }
}

function buildCard(endpoint: string): AgentCard {
  return {
    name: 'sdk-v03-peer',
    description: 'Test peer built on the official @a2a-js/sdk 0.3 server',
    protocolVersion: '0.3.0',
    version: '1.0.0',
    url: endpoint,
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'scripted',
        name: 'Scripted replies',
        description: 'Replies chosen by the message text: ask, slow, fail, message, or anything else',
        tags: ['test'],
        examples: ['hello', 'ask', 'slow', 'fail', 'message'],
      },
    ],
  };
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
 * already-read body; a JSON syntax error gets the reply the SDK's 0.3 jsonErrorHandler gives
 * (HTTP 400, -32700). Other content types are read as text for the record only, and req.body is
 * reset so the SDK sees what it would have seen (express 5 leaves it undefined: -32700).
 */
function recorder(requests: RecordedRequest[]): express.RequestHandler {
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
              .status(400)
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

/** Starts the peer on 127.0.0.1, port 0. */
export async function startSdkV03Agent(opts: SdkV03AgentOptions = {}): Promise<SdkV03Agent> {
  const app = express();
  const server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('sdk-v03-peer: no TCP address');
  const endpoint = `http://127.0.0.1:${address.port}/a2a`;

  const executor = new PeerExecutor(opts.chunkCount ?? 3, opts.chunkDelayMs ?? 0);
  const handler = new DefaultRequestHandler(buildCard(endpoint), new InMemoryTaskStore(), executor);
  const requests: RecordedRequest[] = [];

  // Card routes first, so the JSON-RPC router mounted at /a2a never sees them.
  const cards = agentCardHandler({ agentCardProvider: handler });
  app.use('/a2a/.well-known/agent-card.json', cards);
  app.use('/.well-known/agent-card.json', cards);
  app.use(
    '/a2a',
    recorder(requests),
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );

  let closed: Promise<void> | undefined;
  return {
    endpoint,
    requests,
    close() {
      closed ??= new Promise<void>((resolve, reject) => {
        executor.abortAll();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
