import type {
  MessageEvent,
  OutgoingMessage,
  StreamEvent,
  Task,
  TaskEvent,
  TaskStatus,
} from '../agent/model.js';
import type { BuiltReply, Question, StructuredForm, StructuredReply } from '../question.js';
import type { SessionKey } from '../store.js';
import type { TraceContext } from '../trace.js';

/** The agent's side of the engine's ports: the agent client, the dialect that reads it, the routes to it. */

/**
 * Whom a call to an agent is made for: the person whose turn it is (the approver, for a
 * decision), or a trigger when no person asked. The agent client turns it into credentials when
 * its Binding asks for a per-person identity (docs/identity.md), and ignores it otherwise.
 */
export type Caller =
  | ({ kind: 'person'; id: string; name?: string; email?: string } & CallerPlace)
  | ({ kind: 'trigger' } & CallerPlace);

export interface CallerPlace {
  surface: string;
  workspaceId: string;
  channelId: string;
  sessionId: string;
  /** 'namespace/name' of the Binding. */
  binding: string;
}

export interface AgentCallOptions {
  signal?: AbortSignal;
  /** The turn's trace context: the call's span is its child (the agent gets it as traceparent). */
  trace?: TraceContext;
  /** Whom the call is for (per-person identity). */
  caller?: Caller;
}

/** One thing an agent's card says it can do, with example requests. */
export interface AgentSkill {
  name: string;
  description: string;
  examples: string[];
}

/** What a chat may show of an agent before anyone talks to it (its card's name and skills). */
export interface AgentDescription {
  name: string;
  skills: AgentSkill[];
}

/**
 * A stream that can hand over, without a promise, an event it already holds (the rest of the
 * last read of its body): `A2AClient`'s streams can. A reader takes those first and awaits
 * `next()` only when none is held, so most events of a long answer cost no microtask.
 */
export interface ReadyEvents {
  /** The next event already read and decoded, or undefined when the next must be awaited. */
  takeReady(): StreamEvent | undefined;
}

/** What the engine needs of an agent. `A2AClient` implements it. */
export interface AgentClient {
  /** The agent as its card describes it, for a chat's suggested prompts; optional. */
  describe?(options?: AgentCallOptions): Promise<AgentDescription>;
  sendStreamingMessage(message: OutgoingMessage, options?: AgentCallOptions): AsyncGenerator<StreamEvent>;
  /** P-2: the non-streaming send, asking for an immediate return; only on a polling Binding. */
  sendMessage(message: OutgoingMessage, options?: AgentCallOptions): Promise<TaskEvent | MessageEvent>;
  /** Whether the agent's card advertises streaming (it can be false only with polling on). */
  streams(): Promise<boolean>;
  subscribeToTask(taskId: string, options?: AgentCallOptions): AsyncGenerator<StreamEvent>;
  getTask(taskId: string, options?: AgentCallOptions & { historyLength?: number }): Promise<Task>;
  cancelTask(taskId: string, options?: AgentCallOptions): Promise<Task>;
  canListTasks(): Promise<boolean>;
  findTaskByMessageId(
    contextId: string,
    messageId: string,
    options?: AgentCallOptions,
  ): Promise<Task | undefined>;
}

export type PauseReading = { kind: 'question'; question: Question } | { kind: 'unsupported'; reason: string };

/** A tool call or result an agent reported, shown as a card. */
export interface ToolStep {
  kind: 'call' | 'result';
  toolName: string;
  /** Short, already truncated. */
  summary: string;
}

/**
 * What an agent's events mean for a chat, per dialect (a2a, kagent-v1): how to read a pause,
 * which data parts are tool steps, how to word an answer.
 */
export interface Dialect {
  readonly name: string;
  /** Reads an input-required status. `lastQuestionKey` is the key of the last question shown. */
  readPause(status: TaskStatus, lastQuestionKey: string | null): PauseReading;
  /**
   * The tool steps among an event's data parts (none for agents that mark none). Called for
   * every streamed event: an event with none may share one empty list, hence read-only.
   */
  toolSteps(event: StreamEvent): readonly ToolStep[];
  /**
   * The extensions an outgoing message speaks, from the metadata the engine stored with the
   * turn (a kagent-v1 structured answer names the HITL extension; everything else none).
   */
  messageExtensions(metadata: Record<string, unknown> | null): string[];
  /**
   * The message that answers a structured question this dialect read (`reply` is the question's
   * own data, as readPause gave it): throws ReplyShapeError when the person's reply does not fit
   * it. Absent: the dialect asks no structured questions.
   */
  buildReply?(reply: unknown, answer: StructuredReply): BuiltReply;
  /**
   * The form of a structured question an earlier release stored with only the dialect's data
   * (`payload`, now `reply`): an upgrade keeps an open question answerable.
   */
  formOf?(reply: unknown): StructuredForm | undefined;
}

/** A Binding's behaviour settings, as the engine needs them. */
export interface BindingSettings {
  /** How long a question waits for its answer; null: no limit. */
  questionTimeoutMs: number | null;
  /**
   * Whether tool approvals may be shown (`interactions.toolApprovals.enabled`). false: an
   * approval request cancels the task and the thread is told. Unset: not restricted.
   */
  toolApprovalsEnabled?: boolean;
  /**
   * P-1: the AgentBackend's `spec.polling`, when enabled. An agent whose card does not stream
   * is then sent turns with the non-streaming send and followed with GetTask every `intervalMs`;
   * a task still running `timeoutMs` after its turn was first sent is cancelled. Unset: off.
   */
  polling?: PollingSettings;
}

export interface PollingSettings {
  intervalMs: number;
  timeoutMs: number;
}

/** The live client, dialect and settings of a Binding. */
export interface AgentRoute {
  client: AgentClient;
  dialect: Dialect;
  settings: BindingSettings;
}

/**
 * The registry of live dialect clients, fed by the controller (or local mode) and read by the
 * engine. undefined: the Binding is gone (its sessions are told on their next turn).
 */
export interface AgentRegistry {
  /**
   * `key`: the session asking. A registry may refuse a session whose place is gone even though
   * its Binding is not (a Slack workspace that uninstalled the app) — but not for `'cancel'`:
   * what such a session started is still stopped at the agent.
   */
  resolve(binding: string, key?: SessionKey, use?: 'cancel'): AgentRoute | undefined;
}
