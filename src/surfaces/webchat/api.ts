import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { ApprovalAuditSink } from '../../core/approval-audit.js';
import type { Actor } from '../../core/compose.js';
import { ReplyShapeError } from '../../core/errors.js';
import type { ChatInbound } from '../../core/inbound.js';
import type { AgentClient, AnswerResult, StructuredReply, ToolCallToDecide } from '../../core/ports.js';
import { sessionIdOf } from '../../core/store.js';
import { checkAnswers, checkDecisions, summariseAnswers, summariseDecisions } from './answers.js';
import { WebChatRequestError } from './errors.js';
import { type FollowOptions, followThread } from './follow.js';
import { parseBody, readJson, sendJson } from './http.js';
import { answerBody, createThreadBody, postMessageBody, threadListQuery } from './schemas.js';
import type { WebChatSurface } from './surface.js';
import type { Thread } from './threads.js';
import type { BindingView, MessageView } from './view.js';

/** The Bindings the web chat offers (LiveRegistry fits). */
export interface BindingDirectory {
  /** The Bindings, with their agent's client when it can describe the agent (card examples). */
  list(): ReadonlyArray<{ ref: string; client?: Pick<AgentClient, 'describe'> }>;
  get(ref: string): { ref: string } | undefined;
}

/** Whether a Binding's agent can be used now, and why not (local mode: the Binding's Ready condition). */
export interface BindingReadiness {
  ready: boolean;
  /** Ready's reason (CardFetchFailed, SecretNotFound, …). */
  reason: string;
  /** For people: what is wrong. */
  message: string;
}

export interface ApiDeps {
  engine: Pick<ChatInbound, 'receive' | 'cancel' | 'findSession' | 'answer'>;
  surface: WebChatSurface;
  registry: BindingDirectory;
  /** Each Binding's readiness, when the mode knows it; unknown: shown as ready. */
  readiness?: (ref: string) => BindingReadiness | undefined;
  /** Where each tool approval decided here is audited (the broker's approval audit). */
  audit?: ApprovalAuditSink;
  actor: Actor;
  bodyLimitBytes: number;
  follow: FollowOptions;
  logger: Logger;
  /** Each open event stream registers its end, so closing the server ends them. */
  track(end: () => void): () => void;
}

type Params = Record<string, string>;
type Handler = (req: IncomingMessage, res: ServerResponse, params: Params, url: URL) => Promise<void>;

interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  names: string[];
  handler: Handler;
}

const ID = '([A-Za-z0-9_.-]{1,100})';

/** The JSON API under /api (docs/webchat.md, "API"). */
export class WebChatApi {
  readonly #deps: ApiDeps;
  readonly #routes: Route[];

  constructor(deps: ApiDeps) {
    this.#deps = deps;
    const route = (method: Route['method'], path: string, handler: Handler): Route => {
      const names = [...path.matchAll(/:(\w+)/g)].map((m) => m[1] ?? '');
      return { method, pattern: new RegExp(`^${path.replace(/:\w+/g, ID)}$`), names, handler };
    };
    this.#routes = [
      route('GET', '/api/bindings', (_q, res) => this.#bindings(res)),
      route('GET', '/api/threads', (_q, res, _p, url) => this.#threads(res, url)),
      route('POST', '/api/threads', (req, res) => this.#createThread(req, res)),
      route('GET', '/api/threads/:thread', (_q, res, p) => this.#readThread(res, p)),
      route('POST', '/api/threads/:thread/messages', (req, res, p) => this.#postMessage(req, res, p)),
      route('POST', '/api/threads/:thread/messages/:message/answer', (req, res, p) =>
        this.#answer(req, res, p),
      ),
      route('POST', '/api/threads/:thread/cancel', (_q, res, p) => this.#cancel(res, p)),
      route('GET', '/api/threads/:thread/events', (_q, res, p) => this.#follow(res, p)),
    ];
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    let pathMatched = false;
    for (const r of this.#routes) {
      const match = r.pattern.exec(url.pathname);
      if (match === null) continue;
      pathMatched = true;
      if (r.method !== req.method) continue;
      const params: Params = {};
      r.names.forEach((name, i) => {
        params[name] = match[i + 1] ?? '';
      });
      await r.handler(req, res, params, url);
      return;
    }
    if (pathMatched)
      throw new WebChatRequestError(405, 'method_not_allowed', `${req.method} is not allowed here`);
    throw new WebChatRequestError(404, 'not_found', `no API route ${url.pathname}`);
  }

  async #bindings(res: ServerResponse): Promise<void> {
    const bindings: BindingView[] = await Promise.all(
      this.#deps.registry.list().map(async (b) => {
        const readiness = this.#deps.readiness?.(b.ref);
        const view: BindingView = {
          ref: b.ref,
          threadCount: this.#deps.surface.threads.countFor(b.ref),
          examples: b.client === undefined ? [] : await cardExamples(b.client),
          ready: readiness?.ready ?? true,
        };
        if (readiness !== undefined && !readiness.ready)
          view.problem = { reason: readiness.reason, message: readiness.message };
        return view;
      }),
    );
    sendJson(res, 200, { bindings: bindings.sort((a, b) => a.ref.localeCompare(b.ref)) });
  }

  async #threads(res: ServerResponse, url: URL): Promise<void> {
    const query = parseBody(threadListQuery, Object.fromEntries(url.searchParams));
    const threads = this.#deps.surface.threads.list(query.binding).map((t) => t.summary());
    sendJson(res, 200, { threads });
  }

  async #createThread(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = parseBody(createThreadBody, await readJson(req, this.#deps.bodyLimitBytes));
    if (this.#deps.registry.get(body.binding) === undefined) {
      throw new WebChatRequestError(404, 'binding_not_found', `no Binding ${body.binding}`);
    }
    const thread = this.#deps.surface.threads.create(body.binding);
    const message = await this.#say(thread, body.text);
    sendJson(res, 201, { thread: thread.summary(), message }, { Location: `/api/threads/${thread.id}` });
  }

  async #readThread(res: ServerResponse, params: Params): Promise<void> {
    sendJson(res, 200, this.#thread(params).view());
  }

  async #postMessage(req: IncomingMessage, res: ServerResponse, params: Params): Promise<void> {
    const thread = this.#thread(params);
    const body = parseBody(postMessageBody, await readJson(req, this.#deps.bodyLimitBytes));
    const message = await this.#say(thread, body.text);
    sendJson(res, 202, { message });
  }

  async #answer(req: IncomingMessage, res: ServerResponse, params: Params): Promise<void> {
    const thread = this.#thread(params);
    const prompt = thread.get(params.message ?? '');
    if (prompt === undefined)
      throw new WebChatRequestError(404, 'message_not_found', 'no such message in this thread');
    const body = parseBody(answerBody, await readJson(req, this.#deps.bodyLimitBytes));
    const question = prompt.question;
    const approval = prompt.approval;
    if (question === undefined && approval === undefined) {
      throw new WebChatRequestError(400, 'not_a_prompt', 'this message is not a question or an approval');
    }
    const status = question?.status ?? approval?.status;
    if (status === 'answered')
      throw new WebChatRequestError(409, 'already_answered', 'this prompt was answered already');
    if (status !== 'open') {
      throw new WebChatRequestError(
        409,
        'question_not_pending',
        `this prompt takes no answer any more (${status})`,
      );
    }
    if (question?.mode === 'text') {
      if (body.text === undefined) throw badShape('this question is answered with text');
      // A text question takes the next reply in the thread: the answer is a message.
      const message = await this.#say(thread, body.text);
      sendJson(res, 202, { status: 'accepted', message });
      return;
    }
    let reply: StructuredReply;
    let summary: string;
    if (approval !== undefined) {
      const refusal = this.#deps.surface.approvalRefusal(thread.binding);
      if (refusal !== undefined) throw new WebChatRequestError(403, 'approver_required', refusal);
      if (body.decisions === undefined) throw badShape('an approval is answered with decisions');
      const decisions = checkDecisions(approval, body.decisions);
      reply = { type: 'tool_approval', decisions };
      summary = summariseDecisions(approval, decisions);
    } else if (question !== undefined && question.items.length > 0) {
      if (body.answers === undefined)
        throw badShape('this question is answered with answers (one list per question)');
      const answers = checkAnswers(question, body.answers);
      reply = { type: 'ask_user', answers };
      summary = summariseAnswers(question, answers);
    } else {
      throw new WebChatRequestError(
        409,
        'question_unreadable',
        'this question cannot be answered from the web chat',
      );
    }
    const key = (question ?? approval)?.key ?? '';
    await this.#decide(thread, prompt, key, reply, summary, res);
  }

  async #decide(
    thread: Thread,
    prompt: MessageView,
    questionKey: string,
    reply: StructuredReply,
    summary: string,
    res: ServerResponse,
  ): Promise<void> {
    // The engine knows whether it still waits for this question (not the page's copy).
    const session = await this.#deps.engine.findSession(sessionIdOf(thread.key));
    if (session?.question?.questionKey !== questionKey) {
      thread.setPromptStatus(prompt.id, 'closed');
      throw new WebChatRequestError(409, 'question_not_pending', 'the agent no longer waits for this answer');
    }
    let result: AnswerResult;
    try {
      result = await this.#deps.engine.answer({
        key: thread.key,
        binding: session.binding,
        questionKey,
        reply,
        actor: this.#deps.actor,
      });
    } catch (error) {
      // The page checked the reply against the prompt; the agent's dialect checks it against
      // the question itself, and its refusal names ids only.
      if (error instanceof ReplyShapeError)
        throw new WebChatRequestError(400, 'invalid_request', error.message);
      throw error;
    }
    if (result.status === 'stale') {
      thread.setPromptStatus(prompt.id, 'closed');
      throw new WebChatRequestError(409, 'question_not_pending', 'the agent no longer waits for this answer');
    }
    if (result.status === 'duplicate') {
      thread.setPromptStatus(prompt.id, 'answered');
      throw new WebChatRequestError(409, 'already_answered', 'this prompt was answered already');
    }
    if (result.status === 'closed') {
      thread.setPromptStatus(prompt.id, 'closed');
      throw new WebChatRequestError(
        409,
        'question_closed',
        'the task that asked was stopped; this decision was not sent',
      );
    }
    if (reply.type === 'tool_approval' && session.question.form?.kind === 'approval')
      this.#audit(thread, prompt, session.question.form.calls, session.question.taskId, result.turnId, reply);
    thread.change(prompt.id, (m) => {
      if (m.approval !== undefined && reply.type === 'tool_approval') {
        m.approval.status = 'answered';
        m.approval.decisions = reply.decisions;
      }
      if (m.question !== undefined) {
        m.question.status = 'answered';
        m.question.answer = summary;
      }
    });
    const message = thread.add({ author: 'person', kind: 'message', text: summary, turnId: result.turnId });
    sendJson(res, 202, { status: 'accepted', message });
  }

  /** One audit record per tool call decided, the same record a Slack decision makes. */
  #audit(
    thread: Thread,
    prompt: MessageView,
    shown: readonly ToolCallToDecide[],
    taskId: string,
    turnId: string,
    reply: Extract<StructuredReply, { type: 'tool_approval' }>,
  ): void {
    const sink = this.#deps.audit;
    if (sink === undefined) return;
    const decidedAt = new Date().toISOString();
    const { id, name, email } = this.#deps.actor;
    const approver = {
      id,
      ...(name === undefined ? {} : { name }),
      ...(email === undefined ? {} : { email }),
    };
    const calls = new Map(shown.map((c) => [c.id, c]));
    for (const decision of reply.decisions) {
      const call = calls.get(decision.id);
      if (call === undefined) continue;
      sink.record({
        binding: thread.binding,
        sessionId: sessionIdOf(thread.key),
        surface: thread.key.surface,
        workspace: thread.key.workspaceId,
        channel: thread.key.channelId,
        thread: thread.id,
        prompt: prompt.id,
        taskId,
        turnId,
        approver,
        decidedAt,
        tool: { id: call.id, ...(call.callId === undefined ? {} : { callId: call.callId }), name: call.name },
        argumentsSha256: call.argsSha256,
        decision: decision.approved ? 'approved' : 'denied',
        ...(decision.approved || decision.reason === undefined ? {} : { reason: decision.reason }),
        allAtOnce: true,
      });
    }
  }

  /** The stop button: the engine cancels the thread's running task (the thread shows how it ends). */
  async #cancel(res: ServerResponse, params: Params): Promise<void> {
    const thread = this.#thread(params);
    const result = await this.#deps.engine.cancel(thread.key, { actor: this.#deps.actor });
    if (result.status === 'failed' && result.code === 'binding-unavailable') {
      throw new WebChatRequestError(
        409,
        'binding_unavailable',
        'the Binding of this thread is not available',
      );
    }
    sendJson(res, 200, { status: result.status });
  }

  async #follow(res: ServerResponse, params: Params): Promise<void> {
    const thread = this.#thread(params);
    const end = followThread(res, thread, this.#deps.follow);
    const untrack = this.#deps.track(end);
    res.on('close', untrack);
  }

  /** A person's message: shown first (so it sits above its answer), then stored by the engine. */
  async #say(thread: Thread, text: string): Promise<MessageView> {
    for (const open of thread.openPrompts()) {
      if (open.question?.mode === 'text') thread.setPromptStatus(open.id, 'answered', text);
    }
    const message = thread.add({ author: 'person', kind: 'message', text });
    try {
      const result = await this.#deps.engine.receive({
        kind: 'person',
        key: thread.key,
        binding: thread.binding,
        chatMessageId: `web-${randomUUID()}`,
        actor: this.#deps.actor,
        text,
        addressed: true,
      });
      thread.change(message.id, (m) => {
        m.turnId = result.turnId;
      });
    } catch (cause) {
      thread.change(message.id, (m) => {
        m.failed = true;
      });
      this.#deps.logger.error({ err: cause, thread: thread.id }, 'web chat message not stored');
      throw new WebChatRequestError(503, 'not_stored', 'the message could not be stored; try again', {
        cause,
      });
    }
    return message;
  }

  #thread(params: Params): Thread {
    const thread = this.#deps.surface.threads.get(params.thread ?? '');
    if (thread === undefined) throw new WebChatRequestError(404, 'thread_not_found', 'no such thread');
    return thread;
  }
}

function badShape(message: string): WebChatRequestError {
  return new WebChatRequestError(400, 'invalid_request', message);
}

const EXAMPLES = 5;
const EXAMPLE_CHARS = 80;
/** The list never waits long for a card: a slow agent's Binding is listed without examples. */
const EXAMPLES_WAIT_MS = 500;

/** The first few example requests of an agent card's skills, cut short; none if it is slow. */
async function cardExamples(client: Pick<AgentClient, 'describe'>): Promise<string[]> {
  if (client.describe === undefined) return [];
  const wait = new AbortController();
  const late = delay(EXAMPLES_WAIT_MS, undefined, { signal: wait.signal }).catch(() => undefined);
  const described = await Promise.race([client.describe().catch(() => undefined), late]);
  wait.abort();
  return (described?.skills ?? [])
    .flatMap((skill) => skill.examples)
    .map((example) => example.replace(/\s+/g, ' ').trim().slice(0, EXAMPLE_CHARS))
    .filter((example) => example !== '')
    .slice(0, EXAMPLES);
}
