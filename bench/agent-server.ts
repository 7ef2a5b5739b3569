// Over 450 lines as one piece: every benchmark's agent shares its one task table, held streams and scripted answers.
/**
 * The engine benchmarks' agent: a fast, scriptable A2A 1.0 JSON-RPC server on loopback. It runs
 * in the benchmark's parent process, so the process under measurement (a child) holds only the
 * client side of every stream.
 *
 * Every SendStreamingMessage creates a task and answers it with a prebuilt stream: a `task`
 * event (submitted), a working status, N appended artifact chunks, a completed status, then the
 * full Task in completed state (so the engine settles without a GetTask). With `holdAfter` set,
 * the stream stops after that many chunks and stays open until `release()`. A message may
 * script its own answer with `[chunks:N]` and `[hold-after:K]` in its text, so a client in
 * another process needs no side channel to ask for it; `[shape:kagent]` answers as kagent's
 * runtimes do (every chunk a working status update whose message holds the token, the whole
 * answer as one artifact update after them, then the completed status and the full Task). GetTask and
 * SubscribeToTask answer from the task's current state; `completeAll()` turns every task
 * completed (the agent finished while the broker was down). `[ask]` pauses the task on a text
 * question (input-required) until a message names it as its answer; `[trickle-ms:N]` sends a
 * held stream's next chunk every N ms, holding back its last (bench/scale.ts).
 */

import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { benchCard, listenForStreams } from './bench-http.js';

export interface AgentServerConfig {
  /** Artifact chunks per answer. */
  chunks: number;
  /** Stop each stream after this many chunks and hold it open until release(); null: never. */
  holdAfter: number | null;
}

export interface AgentServer {
  readonly endpoint: string;
  configure(config: Partial<AgentServerConfig>): void;
  /** Streams currently held open. */
  held(): number;
  /** Finishes every held stream: the rest of its chunks, the completed status, the full Task. */
  release(): void;
  /**
   * Sends the first artifact chunk of every held stream that has sent none yet, spread evenly
   * over `spreadMs`, and holds each stream again after it (release() finishes them). The chunk
   * carries `[t:<ns>]`, the system-wide monotonic clock (process.hrtime) read just before the
   * write, so the broker can tell how long the event took from the socket to its surface.
   * Returns how many streams it stamped.
   */
  releaseStamped(spreadMs: number): number;
  /** Every task not paused on a question is completed now; held streams are finished too. */
  completeAll(): void;
  /** Every task so far: its id, the text of the message that started it, and its state. */
  tasks(): Array<{
    id: string;
    contextId: string;
    text: string;
    state: 'working' | 'input-required' | 'completed';
  }>;
  /** Requests served so far, by JSON-RPC method. */
  readonly calls: Record<string, number>;
  close(): Promise<void>;
}

/** How an answer is streamed: appended artifact chunks, or kagent's token status updates. */
export type AnswerShape = 'artifacts' | 'kagent';

interface BenchTask {
  id: string;
  contextId: string;
  chunks: number;
  shape: AnswerShape;
  completed: boolean;
  /** The message that started it; `asked`: paused on a question until it is answered. */
  text: string;
  asked: boolean;
  /**
   * A release() came while it worked: a stream to it cut before (the client follows it again
   * with SubscribeToTask) is not held again but finished, as the release meant.
   */
  released?: boolean;
}

/** What a message says to ask the bench agent for an answer of `chunks` chunks of artifact text. */
export function answerAsked(chunks: number): string {
  return `[chunks:${chunks}]`;
}

/** The events of one answer of `chunks` chunks (a bare client's count). */
export function eventsPerTurn(chunks: number, shape: AnswerShape): number {
  // task, working, the chunks, completed, the full Task; kagent's whole answer as one more.
  return chunks + (shape === 'kagent' ? 5 : 4);
}

interface HeldStream {
  task: BenchTask;
  res: ServerResponse;
  idJson: string;
  /** Chunks already sent. */
  sent: number;
}

const TIMESTAMP = '2026-01-01T00:00:00.000Z';

function chunkText(i: number): string {
  return `token ${i} of the answer, with some words. `;
}

/** The whole answer of `chunks` chunks, as the final Task carries it. */
export function fullText(chunks: number): string {
  let text = '';
  for (let i = 0; i < chunks; i++) text += chunkText(i);
  return text;
}

function taskJson(task: BenchTask): Record<string, unknown> {
  if (task.asked) return { id: task.id, contextId: task.contextId, status: questionStatus(task) };
  if (!task.completed) {
    return { id: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_WORKING' } };
  }
  return {
    id: task.id,
    contextId: task.contextId,
    status: { state: 'TASK_STATE_COMPLETED', timestamp: TIMESTAMP },
    artifacts: [{ artifactId: 'answer', parts: [{ text: fullText(task.chunks) }] }],
  };
}

/** The status of a task paused on a text question (docs/agent-contract.md, Q-1). */
function questionStatus(task: BenchTask): Record<string, unknown> {
  const message = { messageId: `q-${task.id}`, role: 'ROLE_AGENT', parts: [{ text: 'Which namespace?' }] };
  return { state: 'TASK_STATE_INPUT_REQUIRED', message, timestamp: TIMESTAMP };
}

/** An SSE frame whose JSON-RPC id is already JSON-encoded (the request's own type echoed). */
function frame(idJson: string, resultJson: string): string {
  return `data: {"jsonrpc":"2.0","id":${idJson},"result":${resultJson}}\n\n`;
}

const TASK_MARK = '@@TASK@@';
const CTX_MARK = '@@CTX@@';

/** What kagent's Python runtime puts in every event's metadata (its app, user, session, …). */
const KAGENT_METADATA = {
  kagent_app_name: 'bench_agent',
  kagent_user_id: 'bench-user',
  kagent_session_id: CTX_MARK,
  kagent_invocation_id: 'e-5f1c9a2b-7d3e-4f60-9b8a-1c2d3e4f5a6b',
  kagent_author: 'bench_agent',
  kagent_adk_partial: true,
};

/**
 * The result JSON of every event of an answer of `chunks` chunks, with the task and context ids
 * left as marks: built once per chunk count, filled in per request by a split/join.
 */
class Templates {
  readonly #byShape = new Map<string, { head: string[]; chunk: string[]; tail: string[] }>();

  get(chunks: number, shape: AnswerShape): { head: string[]; chunk: string[]; tail: string[] } {
    const key = `${shape}:${chunks}`;
    let t = this.#byShape.get(key);
    if (t === undefined) {
      const ids = { taskId: TASK_MARK, contextId: CTX_MARK };
      const head = [
        JSON.stringify({
          task: { id: TASK_MARK, contextId: CTX_MARK, status: { state: 'TASK_STATE_SUBMITTED' } },
        }),
        JSON.stringify({ statusUpdate: { ...ids, status: { state: 'TASK_STATE_WORKING' } } }),
      ];
      const chunk: string[] = [];
      for (let i = 0; i < chunks; i++)
        chunk.push(shape === 'kagent' ? kagentToken(i) : artifactChunk(i, chunks));
      const tail = [
        JSON.stringify({
          statusUpdate: { ...ids, status: { state: 'TASK_STATE_COMPLETED', timestamp: TIMESTAMP } },
        }),
        JSON.stringify({
          task: {
            id: TASK_MARK,
            contextId: CTX_MARK,
            status: { state: 'TASK_STATE_COMPLETED', timestamp: TIMESTAMP },
            artifacts: [{ artifactId: 'answer', parts: [{ text: fullText(chunks) }] }],
          },
        }),
      ];
      if (shape === 'kagent') {
        // kagent's whole answer, once, before the completed status.
        const artifact = { artifactId: 'answer', parts: [{ text: fullText(chunks) }] };
        tail.unshift(JSON.stringify({ artifactUpdate: { ...ids, artifact, lastChunk: true } }));
      }
      t = { head, chunk, tail };
      this.#byShape.set(key, t);
    }
    return t;
  }
}

function artifactChunk(i: number, chunks: number): string {
  const artifactUpdate: Record<string, unknown> = {
    taskId: TASK_MARK,
    contextId: CTX_MARK,
    artifact: { artifactId: 'answer', parts: [{ text: chunkText(i) }] },
  };
  if (i > 0) artifactUpdate.append = true;
  if (i === chunks - 1) artifactUpdate.lastChunk = true;
  return JSON.stringify({ artifactUpdate });
}

/** A token as kagent streams it: a working status update whose message holds its text. */
function kagentToken(i: number): string {
  return JSON.stringify({
    statusUpdate: {
      taskId: TASK_MARK,
      contextId: CTX_MARK,
      status: {
        state: 'TASK_STATE_WORKING',
        message: { messageId: `token-${i}`, role: 'ROLE_AGENT', parts: [{ text: chunkText(i) }] },
        timestamp: TIMESTAMP,
      },
      metadata: KAGENT_METADATA,
    },
  });
}

function fill(template: string, task: BenchTask): string {
  return template.split(TASK_MARK).join(task.id).split(CTX_MARK).join(task.contextId);
}

function frames(templates: string[], from: number, to: number, idJson: string, task: BenchTask): string {
  let out = '';
  for (let i = from; i < to; i++) out += frame(idJson, fill(templates[i] as string, task));
  return out;
}

export async function startAgentServer(initial: Partial<AgentServerConfig> = {}): Promise<AgentServer> {
  const config: AgentServerConfig = { chunks: 50, holdAfter: null, ...initial };
  const templates = new Templates();
  const tasks = new Map<string, BenchTask>();
  const held = new Set<HeldStream>();
  /** The timers of held streams that trickle ([trickle-ms:N]): a chunk each tick, all but the last. */
  const trickling = new Map<HeldStream, NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  const calls: Record<string, number> = {};
  let next = 0;
  const endpointBox = { value: '' };

  const card = (): string => benchCard('bench', endpointBox.value);

  const rpcResult = (res: ServerResponse, idJson: string, result: unknown): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`{"jsonrpc":"2.0","id":${idJson},"result":${JSON.stringify(result)}}`);
  };
  const rpcError = (res: ServerResponse, idJson: string, code: number, message: string): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`{"jsonrpc":"2.0","id":${idJson},"error":${JSON.stringify({ code, message })}}`);
  };

  /** The rest of a held (or fresh) answer from chunk `from`: chunks, completed status, full Task. */
  const finish = (stream: HeldStream): void => {
    const t = templates.get(stream.task.chunks, stream.task.shape);
    stream.task.completed = true;
    if (stream.res.destroyed || stream.res.writableEnded) return;
    stream.res.end(
      frames(t.chunk, stream.sent, t.chunk.length, stream.idJson, stream.task) +
        frames(t.tail, 0, t.tail.length, stream.idJson, stream.task),
    );
  };

  /** The first chunk, stamped with the time it is written; the stream is held again after it. */
  const sendStamped = (stream: HeldStream): void => {
    const t = templates.get(stream.task.chunks, stream.task.shape);
    if (stream.res.destroyed || stream.res.writableEnded) return;
    const first = fill(t.chunk[0] as string, stream.task).replace(
      '"text":"token 0 ',
      `"text":"[t:${process.hrtime.bigint()}] token 0 `,
    );
    stream.res.write(frame(stream.idJson, first));
    stream.sent = 1;
    held.add(stream);
  };

  const stopTrickle = (stream: HeldStream): void => {
    clearInterval(trickling.get(stream));
    trickling.delete(stream);
  };

  const hold = (stream: HeldStream, trickleMs: number | null = null): void => {
    held.add(stream);
    stream.res.on('close', () => {
      held.delete(stream);
      stopTrickle(stream);
    });
    if (trickleMs === null) return;
    const t = templates.get(stream.task.chunks, stream.task.shape);
    const tick = (): void => {
      if (stream.sent >= stream.task.chunks - 1 || stream.res.destroyed) {
        stopTrickle(stream);
        return;
      }
      stream.res.write(frames(t.chunk, stream.sent, stream.sent + 1, stream.idJson, stream.task));
      stream.sent++;
    };
    trickling.set(stream, setInterval(tick, trickleMs));
  };

  /** An answer to a task paused on a question: the task works again, streams its chunks, completes. */
  const resume = (res: ServerResponse, idJson: string, task: BenchTask, text: string): void => {
    const chunksMark = /\[chunks:(\d+)\]/.exec(text);
    task.chunks = chunksMark === null ? config.chunks : Number(chunksMark[1]);
    task.asked = false;
    task.completed = true;
    const t = templates.get(task.chunks, task.shape);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // No `task` event: the task exists; its working status first.
    res.end(
      frames(t.head, 1, t.head.length, idJson, task) +
        frames(t.chunk, 0, t.chunk.length, idJson, task) +
        frames(t.tail, 0, t.tail.length, idJson, task),
    );
  };

  const sendStream = (res: ServerResponse, idJson: string, params: Record<string, unknown>): void => {
    const message = (params.message ?? {}) as {
      contextId?: string;
      taskId?: string;
      parts?: Array<{ text?: string }>;
    };
    // The sender may script its own answer: "[chunks:N]" and "[hold-after:K]" in the text.
    const text = message.parts?.[0]?.text ?? '';
    const paused = tasks.get(message.taskId ?? '');
    if (paused?.asked === true) {
      resume(res, idJson, paused, text);
      return;
    }
    const chunksMark = /\[chunks:(\d+)\]/.exec(text);
    const holdMark = /\[hold-after:(\d+)\]/.exec(text);
    const n = ++next;
    const task: BenchTask = {
      id: `task-${n}`,
      contextId: message.contextId !== undefined && message.contextId !== '' ? message.contextId : `ctx-${n}`,
      chunks: chunksMark === null ? config.chunks : Number(chunksMark[1]),
      shape: text.includes('[shape:kagent]') ? 'kagent' : 'artifacts',
      completed: false,
      text,
      asked: text.includes('[ask]'),
    };
    const holdAfter = holdMark === null ? config.holdAfter : Number(holdMark[1]);
    tasks.set(task.id, task);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const t = templates.get(task.chunks, task.shape);
    if (task.asked) {
      // the turn ends paused on a question; the stream ends with it.
      const question = JSON.stringify({
        statusUpdate: { taskId: task.id, contextId: task.contextId, status: questionStatus(task) },
      });
      res.end(frames(t.head, 0, t.head.length, idJson, task) + frame(idJson, question));
      return;
    }
    if (holdAfter === null || holdAfter >= task.chunks) {
      task.completed = true;
      res.end(
        frames(t.head, 0, t.head.length, idJson, task) +
          frames(t.chunk, 0, t.chunk.length, idJson, task) +
          frames(t.tail, 0, t.tail.length, idJson, task),
      );
      return;
    }
    const sent = holdAfter;
    res.write(frames(t.head, 0, t.head.length, idJson, task) + frames(t.chunk, 0, sent, idJson, task));
    const trickleMark = /\[trickle-ms:(\d+)\]/.exec(text);
    hold({ task, res, idJson, sent }, trickleMark === null ? null : Number(trickleMark[1]));
  };

  const subscribe = (res: ServerResponse, idJson: string, task: BenchTask): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // A snapshot first; a completed task's snapshot is the whole story.
    const snapshot = frame(idJson, JSON.stringify({ task: taskJson(task) }));
    if (task.completed) {
      res.end(snapshot);
      return;
    }
    res.write(snapshot);
    if (task.released === true) {
      finish({ task, res, idJson, sent: 0 });
      return;
    }
    // Held until released; then the remaining chunks are sent as if from the start of the stream.
    hold({ task, res, idJson, sent: 0 });
  };

  const handle = (res: ServerResponse, body: string): void => {
    let rpc: { id?: unknown; method?: string; params?: Record<string, unknown> };
    try {
      rpc = JSON.parse(body) as typeof rpc;
    } catch {
      rpcError(res, 'null', -32700, 'parse error');
      return;
    }
    // Echo the id with its JSON type.
    const idJson = JSON.stringify(rpc.id ?? null);
    const method = rpc.method ?? '';
    calls[method] = (calls[method] ?? 0) + 1;
    const params = rpc.params ?? {};
    if (method === 'SendStreamingMessage') {
      sendStream(res, idJson, params);
      return;
    }
    if (method === 'GetTask' || method === 'SubscribeToTask' || method === 'CancelTask') {
      const task = tasks.get(String(params.id ?? ''));
      if (task === undefined) {
        rpcError(res, idJson, -32001, 'task not found');
        return;
      }
      if (method === 'SubscribeToTask') subscribe(res, idJson, task);
      else rpcResult(res, idJson, taskJson(task));
      return;
    }
    if (method === 'ListTasks') {
      rpcResult(res, idJson, { tasks: [], nextPageToken: '' });
      return;
    }
    rpcError(res, idJson, -32601, 'method not found');
  };

  const server: Server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.setHeader('content-type', 'application/json');
      res.end(card());
      return;
    }
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => handle(res, Buffer.concat(parts).toString('utf8')));
  });
  // 1,000 concurrent streams on one origin: no connection cap, long keep-alive, no request timeout
  // cutting a held stream.
  server.maxConnections = Number.POSITIVE_INFINITY;
  server.headersTimeout = 60_000;
  endpointBox.value = await listenForStreams(server, sockets);

  return {
    endpoint: endpointBox.value,
    calls,
    configure: (c) => Object.assign(config, c),
    held: () => held.size,
    release: () => {
      for (const task of tasks.values()) if (!task.asked && !task.completed) task.released = true;
      for (const stream of [...held]) {
        held.delete(stream);
        stopTrickle(stream);
        finish(stream);
      }
    },
    releaseStamped: (spreadMs) => {
      const streams = [...held].filter((s) => s.sent === 0 && s.task.chunks > 0);
      streams.forEach((stream, i) => {
        held.delete(stream);
        const at = streams.length <= 1 ? 0 : (spreadMs * i) / (streams.length - 1);
        setTimeout(() => sendStamped(stream), at);
      });
      return streams.length;
    },
    completeAll: () => {
      for (const task of tasks.values()) if (!task.asked) task.completed = true;
      for (const stream of [...held]) {
        held.delete(stream);
        stopTrickle(stream);
        finish(stream);
      }
    },
    tasks: () =>
      [...tasks.values()].map((t) => ({
        id: t.id,
        contextId: t.contextId,
        text: t.text,
        state: t.asked ? 'input-required' : t.completed ? 'completed' : 'working',
      })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const stream of held) stream.res.destroy();
        held.clear();
        for (const timer of trickling.values()) clearInterval(timer);
        trickling.clear();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
