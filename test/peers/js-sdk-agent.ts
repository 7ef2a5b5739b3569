// A real, independent A2A test peer: the official @a2a-js/sdk@1.3.0 server, started in-process.
// Its behaviour is chosen by the first text part of the user's message:
//   any other text: task, working, `chunkCount` chunks "chunk i " of artifact "answer", completed
//   "ask":     task, artifact "asking", input-required ("What is your name?"); the follow-up on that
//              task gets artifact "hello <answer>" and completes
//   "slow":    task, working, "chunk 0 ", then waits (cancel, or 3 s), "chunk 1 ", completed
//   "fail":    task, failed ("rate limit exceeded")
//   "message": a bare Message "just a message", no task

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AgentCard, AgentInterface, Message, Part, Task } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express, { type NextFunction, type Request, type Response } from 'express';

export interface SdkAgentOptions {
  /** true: also serve A2A 0.3 through the SDK's compat layer (card lists a 0.3 JSONRPC interface too). */
  legacyCompat: boolean;
  /** How many artifact chunks a normal answer streams (default 3). */
  chunkCount?: number;
  /** Delay between chunks in milliseconds (default 0). */
  chunkDelayMs?: number;
}

export interface RecordedRequest {
  /** The JSON-RPC method ('' when the body could not be parsed or had no string method). */
  method: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body; the raw text when it is not JSON; undefined when there was no body. */
  body: unknown;
}

export interface SdkAgent {
  /** The JSON-RPC URL, e.g. http://127.0.0.1:PORT/a2a. The card is also at endpoint + '/.well-known/agent-card.json'. */
  endpoint: string;
  /** Every JSON-RPC POST received, in order, recorded before the SDK handles it. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const SLOW_WAIT_MS = 3000;

function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

function agentMessage(text: string, contextId: string, taskId: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function firstText(message: Message): string {
  for (const part of message.parts) {
    if (part.content?.$case === 'text') return part.content.value;
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
    // The broker puts a label line first; the scripted word is the last line.
    const text = firstText(userMessage).split('\n').at(-1)?.trim() ?? '';

    if (text === 'message' && ctx.task === undefined) {
      // A bare Message: no task. The SDK closes the stream after it and settles the bus.
      bus.publish(AgentEvent.message(agentMessage('just a message', contextId, '')));
      return;
    }

    this.contexts.set(taskId, contextId);
    const controller = new AbortController();
    this.running.set(taskId, controller);
    try {
      const task: Task = ctx.task ?? {
        id: taskId,
        contextId,
        status: {
          state: TaskState.TASK_STATE_SUBMITTED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        artifacts: [],
        history: [userMessage],
        metadata: undefined,
      };
      bus.publish(AgentEvent.task(task));

      // A follow-up to a task waiting for input is the answer to "ask".
      if (ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
        this.working(bus, taskId, contextId);
        this.chunk(bus, taskId, contextId, 'answer', `hello ${text}`, false, true);
        this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
        return;
      }

      switch (text) {
        case 'ask':
          this.chunk(bus, taskId, contextId, 'asking', 'I need to know who you are.', false, true);
          this.status(
            bus,
            taskId,
            contextId,
            TaskState.TASK_STATE_INPUT_REQUIRED,
            agentMessage('What is your name?', contextId, taskId),
          );
          return;
        case 'slow':
          this.working(bus, taskId, contextId);
          this.chunk(bus, taskId, contextId, 'answer', 'chunk 0 ', false, false);
          await sleep(SLOW_WAIT_MS, controller.signal);
          if (controller.signal.aborted) return;
          this.chunk(bus, taskId, contextId, 'answer', 'chunk 1 ', true, true);
          this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
          return;
        case 'fail':
          this.status(
            bus,
            taskId,
            contextId,
            TaskState.TASK_STATE_FAILED,
            agentMessage('rate limit exceeded', contextId, taskId),
          );
          return;
        default: {
          this.working(bus, taskId, contextId);
          for (let i = 0; i < this.chunkCount; i++) {
            if (i > 0 && this.chunkDelayMs > 0) {
              await sleep(this.chunkDelayMs, controller.signal);
              if (controller.signal.aborted) return;
            }
            this.chunk(bus, taskId, contextId, 'answer', `chunk ${i} `, i > 0, i === this.chunkCount - 1);
          }
          this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
          return;
        }
      }
    } finally {
      if (this.running.get(taskId) === controller) this.running.delete(taskId);
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const contextId = this.contexts.get(taskId) ?? '';
    this.status(
      bus,
      taskId,
      contextId,
      TaskState.TASK_STATE_CANCELED,
      agentMessage('canceled', contextId, taskId),
    );
    // The running execute() returns without publishing more; the SDK then settles the bus.
    this.running.get(taskId)?.abort();
  };

  private working(bus: ExecutionEventBus, taskId: string, contextId: string): void {
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING);
  }

  private status(
    bus: ExecutionEventBus,
    taskId: string,
    contextId: string,
    state: TaskState,
    message?: Message,
  ): void {
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state, message, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
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
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId,
          name: artifactId,
          description: '',
          parts: [textPart(text)],
          metadata: undefined,
          extensions: [],
        },
        append,
        lastChunk,
        metadata: undefined,
      }),
    );
  }
}

function buildCard(endpoint: string, legacyCompat: boolean): AgentCard {
  const v1: AgentInterface = {
    url: endpoint,
    protocolBinding: 'JSONRPC',
    tenant: '',
    protocolVersion: '1.0',
  };
  return {
    name: 'sdk-peer',
    description: 'Test peer built on the official @a2a-js/sdk server',
    supportedInterfaces: legacyCompat ? duplicateInterfacesForLegacy([v1], ['JSONRPC']) : [v1],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'scripted',
        name: 'Scripted replies',
        description: 'Replies chosen by the message text: ask, slow, fail, message, or anything else',
        tags: ['test'],
        examples: ['hello', 'ask', 'slow', 'fail', 'message'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
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
 * already-read body; a JSON syntax error gets the SDK's own -32700 reply. Other
 * content types are read as text for the record only, and req.body is reset so the SDK sees
 * what it would have seen (it rejects them or ignores the body).
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
              .status(200)
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
export async function startSdkAgent(opts: SdkAgentOptions): Promise<SdkAgent> {
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
  if (address === null || typeof address === 'string') throw new Error('sdk-peer: no TCP address');
  const endpoint = `http://127.0.0.1:${address.port}/a2a`;

  const executor = new PeerExecutor(opts.chunkCount ?? 3, opts.chunkDelayMs ?? 0);
  const handler = new DefaultRequestHandler(
    buildCard(endpoint, opts.legacyCompat),
    new InMemoryTaskStore(),
    executor,
  );
  const legacyCompat = { enabled: opts.legacyCompat };
  const requests: RecordedRequest[] = [];

  // Card routes first, so the JSON-RPC router mounted at /a2a never sees them.
  const cards = agentCardHandler({ agentCardProvider: handler, legacyCompat });
  app.use('/a2a/.well-known/agent-card.json', cards);
  app.use('/.well-known/agent-card.json', cards);
  app.use(
    '/a2a',
    recorder(requests),
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }),
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
