/**
 * An A2A 1.0 agent that writes its answer at a person's reading pace rather than at once, and
 * keeps the time each token left it: the freshness and ack benches' agent. A message scripts
 * its answer in its text: `[tag:<id>]` names it (the bench's thread), `[tokens:N]` and
 * `[rate:R]` make it N tokens at R a second, `[delay:ms]` holds the first token back (a slow
 * agent). Each token is an appended artifact chunk; then the completed status and the full Task.
 * The tokens are short words (a model's token is about four characters), so a 600-token answer
 * stays one Slack message.
 */

import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { benchCard, listenForStreams } from './bench-http.js';

const WORDS = [
  'pods',
  'are',
  'ready',
  'in',
  'the',
  'cluster',
  'and',
  'logs',
  'show',
  'no',
  'errors',
  'since',
];

/** Token `i` of every answer: the same text for every tag, so a visible prefix maps to a count. */
export function pacedToken(i: number): string {
  const word = WORDS[i % WORDS.length] as string;
  return i % 16 === 15 ? `${word}. ` : `${word} `;
}

/** The whole text of an answer of `tokens` tokens. */
export function pacedText(tokens: number): string {
  let text = '';
  for (let i = 0; i < tokens; i++) text += pacedToken(i);
  return text;
}

/** What one scripted answer did: when each token was written (Date.now, ms). */
export interface Timeline {
  tag: string;
  /** Requests that named this tag (SendStreamingMessage): more than one means a turn sent twice. */
  requests: number;
  emittedAt: number[];
  /** When the completed status was written. */
  endedAt: number | undefined;
}

export interface PacedAgent {
  readonly endpoint: string;
  timeline(tag: string): Timeline | undefined;
  timelines(): Timeline[];
  close(): Promise<void>;
}

interface Live {
  tag: string;
  res: ServerResponse;
  idJson: string;
  taskId: string;
  contextId: string;
  tokens: number;
  intervalMs: number;
  startAt: number;
  sent: number;
}

function frame(idJson: string, result: unknown): string {
  return `data: {"jsonrpc":"2.0","id":${idJson},"result":${JSON.stringify(result)}}\n\n`;
}

const num = (text: string, key: string, fallback: number): number => {
  const m = new RegExp(`\\[${key}:(\\d+)\\]`).exec(text);
  return m === null ? fallback : Number(m[1]);
};

export async function startPacedAgent(): Promise<PacedAgent> {
  const timelines = new Map<string, Timeline>();
  const live = new Set<Live>();
  const sockets = new Set<Socket>();
  const done = new Map<string, { contextId: string; text: string }>();
  let next = 0;
  const endpointBox = { value: '' };

  // One ticker writes every stream's due tokens: 50 streams at 30 tokens a second need no timers each.
  const tick = (): void => {
    const now = Date.now();
    for (const s of [...live]) {
      const timeline = timelines.get(s.tag);
      if (s.res.destroyed || timeline === undefined) {
        live.delete(s);
        continue;
      }
      let out = '';
      while (s.sent < s.tokens && s.startAt + s.sent * s.intervalMs <= now) {
        const artifactUpdate: Record<string, unknown> = {
          taskId: s.taskId,
          contextId: s.contextId,
          artifact: { artifactId: 'answer', parts: [{ text: pacedToken(s.sent) }] },
        };
        if (s.sent > 0) artifactUpdate.append = true;
        out += frame(s.idJson, { artifactUpdate });
        timeline.emittedAt.push(now);
        s.sent++;
      }
      if (s.sent < s.tokens) {
        if (out !== '') s.res.write(out);
        continue;
      }
      const full = pacedText(s.tokens);
      const status = { state: 'TASK_STATE_COMPLETED', timestamp: new Date(now).toISOString() };
      out += frame(s.idJson, { statusUpdate: { taskId: s.taskId, contextId: s.contextId, status } });
      out += frame(s.idJson, {
        task: {
          id: s.taskId,
          contextId: s.contextId,
          status,
          artifacts: [{ artifactId: 'answer', parts: [{ text: full }] }],
        },
      });
      s.res.end(out);
      timeline.endedAt = now;
      done.set(s.taskId, { contextId: s.contextId, text: full });
      live.delete(s);
    }
  };
  const ticker = setInterval(tick, 5);

  const send = (res: ServerResponse, idJson: string, params: Record<string, unknown>): void => {
    const message = (params.message ?? {}) as { contextId?: string; parts?: Array<{ text?: string }> };
    const text = message.parts?.map((p) => p.text ?? '').join('') ?? '';
    const tag = /\[tag:([\w-]+)\]/.exec(text)?.[1] ?? `untagged-${next}`;
    const n = ++next;
    const taskId = `task-${n}`;
    const contextId =
      message.contextId !== undefined && message.contextId !== '' ? message.contextId : `ctx-${n}`;
    const timeline = timelines.get(tag) ?? { tag, requests: 0, emittedAt: [], endedAt: undefined };
    timeline.requests++;
    timelines.set(tag, timeline);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(
      frame(idJson, { task: { id: taskId, contextId, status: { state: 'TASK_STATE_SUBMITTED' } } }) +
        frame(idJson, { statusUpdate: { taskId, contextId, status: { state: 'TASK_STATE_WORKING' } } }),
    );
    live.add({
      tag,
      res,
      idJson,
      taskId,
      contextId,
      tokens: num(text, 'tokens', 20),
      intervalMs: 1000 / num(text, 'rate', 30),
      startAt: Date.now() + num(text, 'delay', 0),
      sent: 0,
    });
  };

  const handle = (res: ServerResponse, body: string): void => {
    const rpc = JSON.parse(body) as { id?: unknown; method?: string; params?: Record<string, unknown> };
    const idJson = JSON.stringify(rpc.id ?? null);
    const reply = (payload: string): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"jsonrpc":"2.0","id":${idJson},${payload}}`);
    };
    if (rpc.method === 'SendStreamingMessage') {
      send(res, idJson, rpc.params ?? {});
      return;
    }
    if (rpc.method === 'GetTask') {
      // Only a settled task is known here: the broker reads one only after its stream ended.
      const id = String(rpc.params?.id ?? '');
      const task = done.get(id);
      if (task === undefined) {
        reply('"error":{"code":-32001,"message":"task not found"}');
        return;
      }
      const artifacts = [{ artifactId: 'answer', parts: [{ text: task.text }] }];
      const status = { state: 'TASK_STATE_COMPLETED' };
      reply(`"result":${JSON.stringify({ id, contextId: task.contextId, status, artifacts })}`);
      return;
    }
    reply('"error":{"code":-32601,"message":"method not found"}');
  };

  const server: Server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.setHeader('content-type', 'application/json');
      res.end(benchCard('paced', endpointBox.value));
      return;
    }
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => handle(res, Buffer.concat(parts).toString('utf8')));
  });
  endpointBox.value = await listenForStreams(server, sockets);
  return {
    endpoint: endpointBox.value,
    timeline: (tag) => timelines.get(tag),
    timelines: () => [...timelines.values()],
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(ticker);
        for (const s of live) s.res.destroy();
        live.clear();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
