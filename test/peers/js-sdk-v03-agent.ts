// A real, independent A2A 0.3 test peer: the official @a2a-js/sdk@0.3.14 server (the last native
// 0.3 release, installed under the npm alias `a2a-sdk-v0-3`), started in-process. It speaks 0.3
// natively: kind-based objects, method names like `message/stream`, and the executor sets `final`
// on the status update that ends the interaction (the SDK closes the stream there: input-required
// and every terminal state). Its replies follow the scenario table of ./scripted-peer.ts, as
// js-sdk-agent.ts's do; this file maps them to the 0.3 SDK's events.

import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  Message,
  Part,
  Task,
  TaskArtifactUpdateEvent,
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
import {
  type PeerState,
  type RecordedRequest,
  recorder,
  SCRIPTED_SKILL,
  type ScriptedBus,
  ScriptedRuns,
  type ScriptOptions,
  startPeerServer,
} from './scripted-peer.js';

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
  requests: RecordedRequest[];
  close(): Promise<void>;
}

function textPart(text: string): Part {
  return { kind: 'text', text };
}

function agentMessage(text: string, contextId: string, taskId: string | undefined): Message {
  return {
    messageId: randomUUID(),
    kind: 'message',
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

/** The table's steps as 0.3 events on one task's bus. */
function busOf(bus: ExecutionEventBus, ctx: RequestContext): ScriptedBus {
  const { taskId, contextId } = ctx;
  return {
    task: () => {
      const task: Task = ctx.task ?? {
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'submitted', timestamp: new Date().toISOString() },
        artifacts: [],
        history: [ctx.userMessage],
      };
      bus.publish(task);
    },
    status: (state, message) => publishStatus(bus, taskId, contextId, state, message),
    artifact: (artifactId, text, append, lastChunk) => {
      const event: TaskArtifactUpdateEvent = {
        kind: 'artifact-update',
        taskId,
        contextId,
        artifact: { artifactId, name: artifactId, parts: [textPart(text)] },
        append,
        lastChunk,
      };
      bus.publish(event);
    },
  };
}

function publishStatus(
  bus: ExecutionEventBus,
  taskId: string,
  contextId: string,
  state: PeerState,
  message: string | undefined,
): void {
  const event: TaskStatusUpdateEvent = {
    kind: 'status-update',
    taskId,
    contextId,
    status: {
      state,
      timestamp: new Date().toISOString(),
      ...(message === undefined ? {} : { message: agentMessage(message, contextId, taskId) }),
    },
    // A native 0.3 agent marks the end of the interaction with final: true.
    final: state !== 'working',
  };
  bus.publish(event);
}

class PeerExecutor implements AgentExecutor {
  readonly runs = new ScriptedRuns();

  constructor(private readonly options: ScriptOptions) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const text = firstText(ctx.userMessage);
    if (text === 'message' && ctx.task === undefined) {
      // A bare Message: no task. The SDK's event queue stops after a Message.
      bus.publish(agentMessage('just a message', ctx.contextId, undefined));
      bus.finished();
      return;
    }
    const followsQuestion = ctx.task?.status.state === 'input-required';
    try {
      await this.runs.run(
        ctx.taskId,
        ctx.contextId,
        { text, followsQuestion },
        busOf(bus, ctx),
        this.options,
      );
    } finally {
      // Ends any event queue still listening (e.g. after an abort on close), as 0.3 executors do.
      bus.finished();
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    // final: true ends the original stream, any resubscription, and the SDK's wait in tasks/cancel.
    this.runs.cancel(taskId, (contextId) => publishStatus(bus, taskId, contextId, 'canceled', 'canceled'));
  };
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
    skills: [SCRIPTED_SKILL],
  };
}

/** Starts the peer on 127.0.0.1, port 0. */
export async function startSdkV03Agent(opts: SdkV03AgentOptions = {}): Promise<SdkV03Agent> {
  const server = await startPeerServer('sdk-v03-peer');
  const { app, endpoint } = server;
  const executor = new PeerExecutor({
    chunkCount: opts.chunkCount ?? 3,
    chunkDelayMs: opts.chunkDelayMs ?? 0,
  });
  const handler = new DefaultRequestHandler(buildCard(endpoint), new InMemoryTaskStore(), executor);
  const requests: RecordedRequest[] = [];

  // Card routes first, so the JSON-RPC router mounted at /a2a never sees them.
  const cards = agentCardHandler({ agentCardProvider: handler });
  app.use('/a2a/.well-known/agent-card.json', cards);
  app.use('/.well-known/agent-card.json', cards);
  // The 0.3 SDK's jsonErrorHandler answers a JSON syntax error with HTTP 400.
  app.use(
    '/a2a',
    recorder(requests, 400),
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );
  return { endpoint, requests, close: () => server.close(executor.runs) };
}
