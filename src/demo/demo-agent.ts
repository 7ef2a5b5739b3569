import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import { demoCard } from './card.js';
import { DemoExecutor } from './executor.js';
import { refuseFinishedSubscribe } from './finished-subscribe.js';
import { answerRepeat } from './memory.js';

/**
 * The built-in demo agent: a real A2A 1.0 server (the official JS SDK) with streaming, that
 * answers in artifact text chunks, asks a question, asks to run two tools through kagent's
 * human-in-the-loop extension, reports tool steps, and fails on request. It listens on
 * loopback and serves the kagent-v1 layout (`/agents/<namespace>/<name>`), so the local
 * manifest binds it with the kagent-v1 dialect and approvals show. This file serves it; the
 * turns are ./executor.ts, what it says ./scenarios.ts, its card ./card.ts, and its answer to a
 * repeated messageId ./memory.ts.
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
  const handler = new DefaultRequestHandler(demoCard(endpoint), new InMemoryTaskStore(), executor);
  app.use(`${DEMO_AGENT_PATH}/.well-known/agent-card.json`, agentCardHandler({ agentCardProvider: handler }));
  app.use(DEMO_AGENT_PATH, express.json({ limit: '1mb' }), (req, res, next) => {
    answerRepeat(executor.memory, req.body, res).then((answered) => {
      if (!answered) next();
    }, next);
  });
  app.use(DEMO_AGENT_PATH, refuseFinishedSubscribe(executor.memory));
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
