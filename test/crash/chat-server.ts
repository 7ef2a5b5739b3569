import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A chat that outlives the engine processes of the crash tests, as Slack outlives the broker.
 * Answers are found by their ref, or, when the engine lost the ref, by their turn (as a real
 * surface finds its own message by the metadata it attached): that is the surface's half of
 * "every answer shown once".
 */
export interface ChatAnswer {
  ref: string;
  sessionId: string;
  turnId: string;
  text: string;
  final: boolean;
  /** Messages created for this turn: more than one is a duplicate answer. */
  created: number;
  /** Posts without a ref for a turn that had a message: the engine had lost the ref. */
  relinked: number;
}

export interface ChatNotice {
  sessionId: string;
  kind: string;
  turnId?: string;
}

export interface ChatServer {
  url: string;
  answers: Map<string, ChatAnswer>;
  notices: ChatNotice[];
  questions: number;
  close(): Promise<void>;
}

function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
      } catch (error) {
        reject(error);
      }
    });
    req.on('error', reject);
  });
}

export async function startChatServer(): Promise<ChatServer> {
  const answers = new Map<string, ChatAnswer>();
  const byTurn = new Map<string, ChatAnswer>();
  const state: ChatServer = { url: '', answers, notices: [], questions: 0, close: async () => undefined };
  let next = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const input = await body(req);
    const reply = (value: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    const sessionId = String(input.sessionId);
    if (req.url === '/answer') {
      const turnId = String(input.turnId);
      let answer = typeof input.ref === 'string' ? answers.get(input.ref) : undefined;
      if (answer === undefined) {
        answer = byTurn.get(turnId);
        if (answer !== undefined) answer.relinked++;
      }
      if (answer === undefined) {
        answer = { ref: `a${++next}`, sessionId, turnId, text: '', final: false, created: 1, relinked: 0 };
        answers.set(answer.ref, answer);
        byTurn.set(turnId, answer);
      }
      answer.text = String(input.text);
      if (input.final === true) answer.final = true;
      reply({ ref: answer.ref });
      return;
    }
    if (req.url === '/notice') {
      state.notices.push({
        sessionId,
        kind: String(input.kind),
        ...(typeof input.turnId === 'string' ? { turnId: input.turnId } : {}),
      });
      reply({});
      return;
    }
    if (req.url === '/question') {
      state.questions++;
      reply({ ref: `q${++next}` });
      return;
    }
    reply({});
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      res.writeHead(400);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
