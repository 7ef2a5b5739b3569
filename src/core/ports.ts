import type {
  MessageEvent,
  OutgoingMessage,
  StreamEvent,
  Task,
  TaskEvent,
  TaskStatus,
} from './agent/model.js';
import type { AnswerView } from './answer.js';
import type { Actor } from './compose.js';
import type { EngineEvent } from './events.js';
import type { FeedbackTold, SessionKey } from './store.js';
import type { TraceContext } from './trace.js';

/**
 * The engine's ports: what it needs from the world, as small interfaces. Adapters live outside
 * core (a2a/ implements AgentClient, surfaces/ implement ChatSurface, store/ SessionStore).
 */

export interface AgentCallOptions {
  signal?: AbortSignal;
  /** The turn's trace context: the call's span is its child (the agent gets it as traceparent). */
  trace?: TraceContext;
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

/** A question the dialect found in a paused task. */
export interface Question {
  kind: 'text' | 'structured';
  /** The question as the agent wrote it, shown as plain text. */
  text: string;
  /** Stable per question, so the same question is never asked twice. */
  key: string;
  /** Offered answers, when the agent listed some. */
  choices?: string[];
  /** Dialect data needed to build the answer (kagent's payload). */
  payload?: unknown;
  /** A request to approve tool calls, which a Binding may not allow. */
  approval?: boolean;
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

// ---- what surfaces hand the engine -----------------------------------------------------------

/** A chat message for a session, as a surface hands it over. */
export type Inbound =
  | {
      kind: 'person';
      key: SessionKey;
      binding: string;
      /** The surface's id of the message (Slack ts): with the session, it fixes the messageId. */
      chatMessageId: string;
      actor: Actor;
      text: string;
      /** false: a thread reply that did not mention the broker, carried into the next turn (S-7). */
      addressed: boolean;
      /** The surface's id of the event that carried it, claimed with the turn (AddTurnOptions). */
      inboundEvent?: string;
      /**
       * More `message.metadata` stored with the turn beside the actor's (which wins on a clash):
       * a note the surface attaches, such as the feedback on the previous answer. Bounded by the
       * surface; stored with the turn, so a resend after a restart carries it again.
       */
      metadata?: Record<string, unknown>;
      /** The presses that note tells, marked told in the turn's own write (AddTurnOptions). */
      feedbackTold?: ReadonlyArray<FeedbackTold>;
    }
  | {
      kind: 'trigger';
      key: SessionKey;
      binding: string;
      chatMessageId: string;
      /** What the Binding's trigger asks of the agent. */
      instruction: string;
      /** The alert's fields, sent as untrusted data. */
      fields: Record<string, string>;
    };

/** A decision taken in the chat's own controls (buttons), answering a structured question. */
export interface StructuredAnswer {
  key: SessionKey;
  binding: string;
  /** The question it answers, as it was shown: an answer to another question is stale. */
  questionKey: string;
  actor: Actor;
  /** Shown and logged; no label line (S-6: a kagent-v1 structured answer carries none). */
  text: string;
  /** The dialect's reply, sent as the message's metadata. */
  metadata: Record<string, unknown>;
}

export type AnswerResult =
  | { status: 'accepted'; sessionId: string; turnId: string }
  /** Someone answered this question already (a double click, two approvers racing). */
  | { status: 'duplicate'; sessionId: string; turnId: string }
  /** The question is no longer pending (answered, timed out, or another one is). */
  | { status: 'stale'; sessionId: string }
  /**
   * A person's stop is cancelling the task that asked: the decision is refused, and nothing of
   * it is sent (a decision belongs to its task, never to the context after it).
   */
  | { status: 'closed'; sessionId: string };

export interface ReceiveResult {
  sessionId: string;
  turnId: string;
  /** The same chat message was received before (a retry, a second delivery): nothing new. */
  duplicate: boolean;
}

/** One decision on one tool call shown for approval. */
export interface ToolDecision {
  /** The approval id of the tool call, as shown. */
  id: string;
  approved: boolean;
  /** Why it was denied; only on a denial. */
  reason?: string;
}

/** A structured reply as a surface collected it from its own controls. */
export type StructuredReply =
  /** One decision per tool call shown, in the order shown. */
  | { type: 'tool_approval'; decisions: ToolDecision[] }
  /** One list of strings per question asked, positional. */
  | { type: 'ask_user'; answers: string[][] };

/** A structured reply to the question a session waits on, for the answerer to build and send. */
export interface StructuredAnswerRequest {
  key: SessionKey;
  binding: string;
  questionKey: string;
  /** The question's payload as the engine gave it (the dialect's request), for the builder. */
  payload: unknown;
  reply: StructuredReply;
  actor: Actor;
}

/**
 * Builds the dialect's message for a structured reply and gives it to the engine
 * (`SessionEngine.answer`), returning its result. The composition root hands the same one to
 * every surface that shows structured questions (app/structured-answers.ts), so no surface
 * builds a dialect's replies itself.
 */
export type AnswerStructured = (request: StructuredAnswerRequest) => Promise<AnswerResult>;

// ---- what the engine shows through a surface ------------------------------------------------

/** Where in a chat a session's messages go. */
export interface ChatTarget {
  sessionId: string;
  key: SessionKey;
}

export type NoticeKind =
  | 'no-output'
  | 'task-failed'
  | 'task-rejected'
  | 'task-canceled'
  | 'context-changed'
  | 'session-gone'
  | 'agent-busy'
  | 'agent-unreachable'
  | 'agent-refused'
  | 'credentials-rejected'
  | 'identity-refused'
  | 'question-unsupported'
  | 'question-timeout'
  | 'answer-rejected'
  | 'cancel-failed'
  | 'decision-not-sent'
  | 'binding-removed'
  | 'approval-not-allowed'
  | 'poll-timeout';

/** A message from the broker itself. `text` is ours (never an agent's error message, E-9). */
export interface Notice {
  kind: NoticeKind;
  text: string;
  /** The turn it is about, when there is one. */
  turnId?: string;
}

/** Whom a turn's answer is for, and whether it can have been shown before. */
export interface AnswerFor {
  /** The id of the person whose turn it answers (S-5's actor); undefined for a trigger's turn. */
  actorId: string | undefined;
  /**
   * This process stored the turn: no process before it can have shown its answer, so without
   * a ref there is no earlier message of it to look for.
   */
  fresh: boolean;
}

/** The message that shows one turn's answer as it grows. */
export interface AnswerSink {
  /** The answer changed. Called per event: must return at once; the surface coalesces. */
  update(view: AnswerView): void;
  /**
   * The answer is complete: show exactly this text. Resolves when it is shown. `end` says how
   * its task ended, when the engine knows: a surface may then mark the turn done in the same
   * call that shows the last words (Slack's stream stop sets the session's status).
   */
  finish(view: AnswerView, end?: AnswerEnd): Promise<void>;
}

/** How an answer's task ended: over (completed, failed, …), or paused waiting for the person. */
export type AnswerEnd = 'task-ended' | 'task-paused';

export interface QuestionPrompt {
  turnId: string;
  taskId: string;
  question: Question;
}

/**
 * The chat port: everything the engine shows. Modeled on Bolt's Receiver: small, and one fake
 * implements it in tests.
 */
export interface ChatSurface {
  /**
   * Opens the answer of a turn. `ref` is what `onRef` reported before (persisted by the engine),
   * so after a restart the surface updates the same message instead of posting a second one.
   * `answering` says whom it answers (a surface may address the answer to them).
   */
  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
    answering: AnswerFor,
  ): AnswerSink;
  postNotice(target: ChatTarget, notice: Notice): Promise<void>;
  /** Shows a question; returns a reference to the prompt. */
  askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null>;
  showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void>;
  /**
   * The person `actorId` as the surface knows them now, for the label line of a turn about to be
   * sent whose label lacks their name (S-6): a surface takes a message without waiting to look
   * its author up, and the engine asks here before the send. Bounded by the surface; undefined
   * or a rejection: the label stays as stored.
   */
  person?(target: ChatTarget, actorId: string): Promise<Actor | undefined>;
}

/** Typed domain events for metrics, traces and logs to subscribe to. */
export interface EventSink {
  emit(event: EngineEvent): void;
  /**
   * Whether this sink wants `agent.event`, one per event of an agent's stream: thousands per
   * long answer, so the engine builds them only for a sink that says so (tests that watch a
   * stream's progress do; nothing in the broker itself does).
   */
  readonly agentEvents?: boolean;
}

/** What a turn's trace needs to know of it: ids, never text. */
export interface TracedTurn {
  turnId: string;
  sessionId: string;
  binding: string;
  kind: string;
}

/**
 * The spans of turns, from the chat message to its settlement. A port rather than an event
 * sink because the engine needs answers back (the context to store with a turn and to send to
 * the agent), and a port rather than an OpenTelemetry import so that core stays free of
 * tracing libraries: observability implements it with `@opentelemetry/api`, and without it
 * the engine passes no context at all.
 */
export interface TurnTracer {
  /** A turn was received: its span begins. The context returned is stored with the turn. */
  begin(turn: TracedTurn): TraceContext | null;
  /** The turn was a repeat of one already stored: the span begun for it is dropped. */
  discard(turnId: string): void;
  /**
   * The context the turn's calls to the agent go under. A turn this process did not begin
   * (it was taken over after a restart) gets a new span, linked to `stored` — not its child:
   * the first span never ended, and a trace should not pretend it did.
   */
  contextOf(turn: TracedTurn & { stored: TraceContext | null }): TraceContext | null;
  /** The turn settled (`outcome` as in the turn.settled event): its span ends. */
  end(turnId: string, outcome: string): void;
}
