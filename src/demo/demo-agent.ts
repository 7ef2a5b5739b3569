import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AgentCard,
  type Artifact,
  type Message,
  type Part,
  Role,
  type Task,
  TaskState,
} from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import { APPROVAL_TOOLS, answerChunks, type DemoTool, HITL_URI, QUESTION, scenarioFor } from './scenarios.js';

/**
 * The built-in demo agent: a real A2A 1.0 server (the official JS SDK) with streaming, that
 * answers in artifact text chunks, asks a question, asks to run two tools through kagent's
 * human-in-the-loop extension, reports tool steps, and fails on request. It listens on
 * loopback and serves the kagent-v1 layout (`/agents/<namespace>/<name>`), so the local
 * manifest binds it with the kagent-v1 dialect and approvals show.
 */

export const DEMO_AGENT_PATH = '/agents/demo/assistant';

export interface DemoAgentOptions {
  host?: string;
  port?: number;
  /** Delay between answer chunks, so streaming is visible. */
  chunkDelayMs?: number;
}

export interface DemoAgent {
  /** The base URL for an AgentBackend (kagent-v1 dialect): http://host:port */
  url: string;
  /** The agent's endpoint: url + /agents/demo/assistant */
  endpoint: string;
  close(): Promise<void>;
}

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' };
}

function data(value: unknown, metadata: Record<string, unknown>): Part {
  return { content: { $case: 'data', value }, metadata, filename: '', mediaType: '' };
}

function agentMessage(
  parts: Part[],
  task: { id: string; contextId: string },
  extra: Partial<Message> = {},
): Message {
  return {
    messageId: randomUUID(),
    contextId: task.contextId,
    taskId: task.id,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

function firstText(message: Message): string {
  for (const part of message.parts) if (part.content?.$case === 'text') return part.content.value;
  return '';
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

interface Decision {
  id: string;
  approved: boolean;
  reason?: string;
}

/** Reads kagent's tool_approval_response from the answer's metadata (Q-3, Q-5). */
function decisionsOf(message: Message): Decision[] | undefined {
  if (!message.extensions.includes(HITL_URI)) return undefined;
  const payload = message.metadata?.[HITL_URI] as { type?: unknown; approvals?: unknown } | undefined;
  if (payload?.type !== 'tool_approval_response' || !Array.isArray(payload.approvals)) return undefined;
  const out: Decision[] = [];
  for (const entry of payload.approvals as Array<Record<string, unknown>>) {
    if (typeof entry.id !== 'string' || typeof entry.approved !== 'boolean') return undefined;
    out.push({
      id: entry.id,
      approved: entry.approved,
      ...(typeof entry.rejection_reason === 'string' ? { reason: entry.rejection_reason } : {}),
    });
  }
  // kagent refuses a response that does not decide every call exactly once.
  const ids = out.map((d) => d.id).sort();
  const expected = APPROVAL_TOOLS.map((t) => t.id).sort();
  return JSON.stringify(ids) === JSON.stringify(expected) ? out : undefined;
}

/** What the demo remembers of a task, to answer a repeated messageId with it (R-8). */
interface Remembered {
  contextId: string;
  state: TaskState;
  artifacts: Map<string, string>;
}

const STATE_NAMES: Partial<Record<TaskState, string>> = {
  [TaskState.TASK_STATE_SUBMITTED]: 'TASK_STATE_SUBMITTED',
  [TaskState.TASK_STATE_WORKING]: 'TASK_STATE_WORKING',
  [TaskState.TASK_STATE_COMPLETED]: 'TASK_STATE_COMPLETED',
  [TaskState.TASK_STATE_FAILED]: 'TASK_STATE_FAILED',
  [TaskState.TASK_STATE_CANCELED]: 'TASK_STATE_CANCELED',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'TASK_STATE_INPUT_REQUIRED',
};

const SETTLED = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
]);

class DemoExecutor implements AgentExecutor {
  readonly #running = new Map<string, AbortController>();
  readonly #asked = new Map<string, 'question' | 'approval'>();
  readonly #tasks = new Map<string, Remembered>();
  readonly #byMessage = new Map<string, string>();

  /** The task a user messageId started, if it started one. */
  taskFor(messageId: string): { id: string; remembered: Remembered } | undefined {
    const id = this.#byMessage.get(messageId);
    const remembered = id === undefined ? undefined : this.#tasks.get(id);
    return id === undefined || remembered === undefined ? undefined : { id, remembered };
  }

  /** The task as A2A 1.0 JSON (ProtoJSON), for a repeated messageId. */
  static taskJson(id: string, r: Remembered): Record<string, unknown> {
    return {
      id,
      contextId: r.contextId,
      status: { state: STATE_NAMES[r.state] ?? 'TASK_STATE_WORKING', timestamp: new Date().toISOString() },
      artifacts: [...r.artifacts].map(([artifactId, value]) => ({
        artifactId,
        name: 'answer',
        parts: [{ text: value }],
      })),
    };
  }

  static settled(r: Remembered): boolean {
    return SETTLED.has(r.state);
  }

  constructor(private readonly chunkDelayMs: number) {}

  abortAll(): void {
    for (const c of this.#running.values()) c.abort();
  }

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const controller = new AbortController();
    this.#running.set(ctx.taskId, controller);
    const signal = controller.signal;
    const task: Task = ctx.task ?? {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: {
        state: TaskState.TASK_STATE_SUBMITTED,
        message: undefined,
        timestamp: new Date().toISOString(),
      },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: undefined,
    };
    bus.publish(AgentEvent.task(task));
    if (ctx.task === undefined) {
      this.#byMessage.set(ctx.userMessage.messageId, task.id);
      this.#tasks.set(task.id, {
        contextId: task.contextId,
        state: TaskState.TASK_STATE_SUBMITTED,
        artifacts: new Map(),
      });
    }
    try {
      const asked = this.#asked.get(task.id);
      this.#asked.delete(task.id);
      const words = firstText(ctx.userMessage);
      if (asked === 'question') {
        await this.#stream(task, bus, signal, [
          `Looking at **${words.split('\n').at(-1)?.trim() || 'that'}**. `,
          'All services are healthy there.',
        ]);
        this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
      } else if (asked === 'approval') {
        await this.#runApproved(task, bus, signal, decisionsOf(ctx.userMessage));
      } else {
        await this.#start(
          task,
          bus,
          signal,
          words,
          ctx.context.requestedExtensions?.includes(HITL_URI) === true,
        );
      }
    } finally {
      this.#running.delete(task.id);
      bus.finished();
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.#running.get(taskId)?.abort();
    this.#asked.delete(taskId);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: {
          state: TaskState.TASK_STATE_CANCELED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
    bus.finished();
  };

  async #start(
    task: Task,
    bus: ExecutionEventBus,
    signal: AbortSignal,
    words: string,
    hitl: boolean,
  ): Promise<void> {
    this.#status(task, bus, TaskState.TASK_STATE_WORKING);
    switch (scenarioFor(words)) {
      case 'failure':
        this.#status(
          task,
          bus,
          TaskState.TASK_STATE_FAILED,
          agentMessage([text('Simulated failure: rate limit exceeded.')], task),
        );
        return;
      case 'question':
        await this.#stream(task, bus, signal, ['I can check that. ']);
        this.#asked.set(task.id, 'question');
        this.#status(task, bus, TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage([text(QUESTION)], task));
        return;
      case 'approval': {
        await this.#stream(task, bus, signal, ['To do that I need to run two tools. ']);
        this.#asked.set(task.id, 'approval');
        const hint = 'The demo agent asks to run restart_deployment and delete_pod.';
        // Like kagent: the payload only when the client asked for the extension; otherwise a
        // text hint that cannot be answered as an approval.
        const message = hitl
          ? agentMessage([text(hint)], task, {
              extensions: [HITL_URI],
              metadata: {
                [HITL_URI]: {
                  type: 'tool_approval_request',
                  hint,
                  tools: APPROVAL_TOOLS.map((t) => ({
                    id: t.id,
                    call_id: t.callId,
                    name: t.name,
                    args: t.args,
                  })),
                },
              },
            })
          : agentMessage([text(`${hint} Reply "yes" to run both.`)], task);
        this.#status(task, bus, TaskState.TASK_STATE_INPUT_REQUIRED, message);
        return;
      }
      default:
        this.#toolStep(task, bus, {
          id: 'call-search',
          callId: 'call-search',
          name: 'search_docs',
          args: { query: words.slice(0, 60) },
        });
        await this.#stream(task, bus, signal, answerChunks(words.split('\n').at(-1) ?? words));
        this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
    }
  }

  async #runApproved(
    task: Task,
    bus: ExecutionEventBus,
    signal: AbortSignal,
    decisions: Decision[] | undefined,
  ): Promise<void> {
    this.#status(task, bus, TaskState.TASK_STATE_WORKING);
    if (decisions === undefined) {
      await this.#stream(task, bus, signal, ['No approval decision came back, so I ran nothing.']);
      this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
      return;
    }
    const lines: string[] = [];
    for (const tool of APPROVAL_TOOLS) {
      const decision = decisions.find((d) => d.id === tool.id);
      if (decision?.approved === true) {
        this.#toolStep(task, bus, tool);
        lines.push(`- Ran \`${tool.name}\`.\n`);
      } else {
        lines.push(
          `- Did not run \`${tool.name}\`${decision?.reason ? ` (denied: ${decision.reason})` : ' (denied)'}.\n`,
        );
      }
    }
    await this.#stream(task, bus, signal, ['Done.\n\n', ...lines]);
    this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
  }

  #toolStep(task: Task, bus: ExecutionEventBus, tool: DemoTool): void {
    const call = data(
      { id: tool.callId, name: tool.name, args: tool.args },
      { kagent_type: 'function_call' },
    );
    const result = data(
      { id: tool.callId, name: tool.name, response: { result: `${tool.name} ok (simulated)` } },
      { kagent_type: 'function_response' },
    );
    this.#status(task, bus, TaskState.TASK_STATE_WORKING, agentMessage([call], task));
    this.#status(task, bus, TaskState.TASK_STATE_WORKING, agentMessage([result], task));
  }

  async #stream(task: Task, bus: ExecutionEventBus, signal: AbortSignal, chunks: string[]): Promise<void> {
    const artifactId = `answer-${randomUUID().slice(0, 8)}`;
    for (const [i, chunk] of chunks.entries()) {
      if (signal.aborted) return;
      const artifact: Artifact = {
        artifactId,
        name: 'answer',
        description: '',
        parts: [text(chunk)],
        metadata: undefined,
        extensions: [],
      };
      const remembered = this.#tasks.get(task.id)?.artifacts;
      remembered?.set(artifactId, (remembered.get(artifactId) ?? '') + chunk);
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: task.id,
          contextId: task.contextId,
          artifact,
          append: i > 0,
          lastChunk: i === chunks.length - 1,
          metadata: undefined,
        }),
      );
      if (this.chunkDelayMs > 0) await sleep(this.chunkDelayMs, signal);
    }
  }

  #status(task: Task, bus: ExecutionEventBus, state: TaskState, message?: Message): void {
    const remembered = this.#tasks.get(task.id);
    if (remembered !== undefined) remembered.state = state;
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: task.id,
        contextId: task.contextId,
        status: { state, message, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
  }
}

/**
 * R-8: a repeated messageId is the same turn. A broker that lost track of a send (a crash, a
 * dropped connection on a first turn) sends it again with the same messageId; the demo answers
 * with the task that messageId started, once settled, instead of running it twice. (The SDK's
 * handler would run it again, so this sits in front of it.)
 */
async function answerRepeat(executor: DemoExecutor, body: unknown, res: express.Response): Promise<boolean> {
  const request = body as {
    id?: unknown;
    method?: unknown;
    params?: { message?: { messageId?: unknown; taskId?: unknown } };
  };
  const message = request?.params?.message;
  if (request?.method !== 'SendStreamingMessage' || typeof message?.messageId !== 'string') return false;
  if (typeof message.taskId === 'string' && message.taskId !== '') return false;
  const found = executor.taskFor(message.messageId);
  if (found === undefined) return false;
  const until = Date.now() + 60_000;
  while (!DemoExecutor.settled(found.remembered) && Date.now() < until && !res.destroyed) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const result = { task: DemoExecutor.taskJson(found.id, found.remembered) };
  res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: request.id ?? null, result })}\n\n`);
  return true;
}

function card(endpoint: string): AgentCard {
  return {
    name: 'Agent Kourier demo agent',
    description:
      'A scripted agent that shows every path of the broker: streaming, questions, approvals, tool steps, failures.',
    version: '1.0.0',
    supportedInterfaces: [{ url: endpoint, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    documentationUrl: '',
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        {
          uri: HITL_URI,
          description: 'Human in the loop: tool approvals',
          required: false,
          params: undefined,
        },
      ],
      extendedAgentCard: false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'demo',
        name: 'Demo',
        description: 'Say anything; or "ask", "approve", "fail".',
        tags: ['demo'],
        examples: ['hello', 'ask me something', 'approve a deploy', 'fail please'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
    iconUrl: '',
  };
}

export async function startDemoAgent(options: DemoAgentOptions = {}): Promise<DemoAgent> {
  const host = options.host ?? '127.0.0.1';
  const app = express();
  const server: Server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host}:${port}`;
  const endpoint = `${url}${DEMO_AGENT_PATH}`;
  const executor = new DemoExecutor(options.chunkDelayMs ?? 40);
  const handler = new DefaultRequestHandler(card(endpoint), new InMemoryTaskStore(), executor);
  app.use(`${DEMO_AGENT_PATH}/.well-known/agent-card.json`, agentCardHandler({ agentCardProvider: handler }));
  app.use(DEMO_AGENT_PATH, express.json({ limit: '1mb' }), (req, res, next) => {
    answerRepeat(executor, req.body, res).then((answered) => {
      if (!answered) next();
    }, next);
  });
  app.use(
    DEMO_AGENT_PATH,
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );
  return {
    url,
    endpoint,
    close: () =>
      new Promise<void>((resolve) => {
        executor.abortAll();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
