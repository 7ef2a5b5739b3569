// A real, independent A2A test peer: the official @a2a-js/sdk@1.3.0 server, started in-process.
// Its replies follow the scenario table of ./scripted-peer.ts (chosen by the first text part of
// the user's message); this file maps them to the 1.x SDK's events.

import { randomUUID } from 'node:crypto';
import type { AgentCard, AgentInterface, Message, Task } from '@a2a-js/sdk';
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
import { sdkTextPart } from '../../testkit/a2a-sdk.js';
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

export type { RecordedRequest };

export interface SdkAgentOptions {
  /** true: also serve A2A 0.3 through the SDK's compat layer (card lists a 0.3 JSONRPC interface too). */
  legacyCompat: boolean;
  /** How many artifact chunks a normal answer streams (default 3). */
  chunkCount?: number;
  /** Delay between chunks in milliseconds (default 0). */
  chunkDelayMs?: number;
}

export interface SdkAgent {
  /** The JSON-RPC URL, e.g. http://127.0.0.1:PORT/a2a. The card is also at endpoint + '/.well-known/agent-card.json'. */
  endpoint: string;
  /** Every JSON-RPC POST received, in order, recorded before the SDK handles it. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const STATES: Record<PeerState, TaskState> = {
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
};

function agentMessage(text: string, contextId: string, taskId: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [sdkTextPart(text, 'text/plain')],
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

/** The table's steps as 1.x events on one task's bus. */
function busOf(bus: ExecutionEventBus, ctx: RequestContext): ScriptedBus {
  const { taskId, contextId } = ctx;
  return {
    task: () => {
      const task: Task = ctx.task ?? {
        id: taskId,
        contextId,
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
    },
    status: (state, message) => publishStatus(bus, taskId, contextId, state, message),
    artifact: (artifactId, text, append, lastChunk) =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId,
            name: artifactId,
            description: '',
            parts: [sdkTextPart(text, 'text/plain')],
            metadata: undefined,
            extensions: [],
          },
          append,
          lastChunk,
          metadata: undefined,
        }),
      ),
  };
}

function publishStatus(
  bus: ExecutionEventBus,
  taskId: string,
  contextId: string,
  state: PeerState,
  message: string | undefined,
): void {
  bus.publish(
    AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: {
        state: STATES[state],
        message: message === undefined ? undefined : agentMessage(message, contextId, taskId),
        timestamp: new Date().toISOString(),
      },
      metadata: undefined,
    }),
  );
}

class PeerExecutor implements AgentExecutor {
  readonly runs = new ScriptedRuns();

  constructor(private readonly options: ScriptOptions) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    // The broker puts a label line first; the scripted word is the last line.
    const text = firstText(ctx.userMessage).split('\n').at(-1)?.trim() ?? '';
    if (text === 'message' && ctx.task === undefined) {
      // A bare Message: no task. The SDK closes the stream after it and settles the bus.
      bus.publish(AgentEvent.message(agentMessage('just a message', ctx.contextId, '')));
      return;
    }
    const followsQuestion = ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    await this.runs.run(ctx.taskId, ctx.contextId, { text, followsQuestion }, busOf(bus, ctx), this.options);
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    // The running execute() then returns without publishing more; the SDK settles the bus.
    this.runs.cancel(taskId, (contextId) => publishStatus(bus, taskId, contextId, 'canceled', 'canceled'));
  };
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
    skills: [{ ...SCRIPTED_SKILL, inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
}

/** Starts the peer on 127.0.0.1, port 0. */
export async function startSdkAgent(opts: SdkAgentOptions): Promise<SdkAgent> {
  const server = await startPeerServer('sdk-peer');
  const { app, endpoint } = server;
  const executor = new PeerExecutor({
    chunkCount: opts.chunkCount ?? 3,
    chunkDelayMs: opts.chunkDelayMs ?? 0,
  });
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
    recorder(requests, 200),
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }),
  );
  return { endpoint, requests, close: () => server.close(executor.runs) };
}
