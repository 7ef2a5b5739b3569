import type { SessionStore } from '../../src/core/store.js';
import {
  type ContractAgent,
  startContractAgent,
  type WireVersion,
} from '../peers/contract-agent/contract-agent.js';
import { type ChatServer, startChatServer } from './chat-server.js';

/**
 * The pieces of the seeded crash scenario that the SIGKILL run (./kill-run.ts) and the power-cut
 * run (./power-run.ts) share: the agent and the chat that outlive the broker, the choice of a
 * moment to strike, the wait until every turn settles, and the verdict on each turn.
 */

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface CrashPeers {
  agent: ContractAgent;
  chat: ChatServer;
  /** The agent's answer to every message, in chunks: what a complete answer shows. */
  chunks: string[];
  close(): Promise<void>;
}

export async function startCrashPeers(o: { version: WireVersion; polling?: boolean }): Promise<CrashPeers> {
  const chunks = Array.from({ length: 6 }, (_, i) => `part ${i} `);
  const agent = await startContractAgent({
    version: o.version,
    // 1.0 agents drop a repeated messageId; this 0.3 agent runs it again, as many do.
    dedupe: o.version === '1.0',
    defaultAnswer: { chunks, chunkDelayMs: 15 },
    workOn: true,
    ...(o.polling === true ? { card: { streaming: false } } : {}),
  });
  const chat = await startChatServer();
  return {
    agent,
    chat,
    chunks,
    async close() {
      await agent.close().catch(() => undefined);
      await chat.close().catch(() => undefined);
    },
  };
}

/**
 * Waits for a random moment to strike: a random time, or after a random number of calls to the
 * agent and a random moment later (inside a stream, between a send and its record, in a
 * follow); sooner if the agent has gone quiet.
 */
export async function untilStrike(random: () => number, agent: ContractAgent): Promise<void> {
  if (random() < 0.2) {
    await sleep(random() * 1_200);
    return;
  }
  const before = agent.requests.length;
  const calls = 1 + Math.floor(random() * 10);
  const until = Date.now() + 4_000;
  let seen = before;
  let quietSince = Date.now();
  while (agent.requests.length < before + calls && Date.now() < until) {
    if (agent.requests.length !== seen) {
      seen = agent.requests.length;
      quietSince = Date.now();
    } else if (Date.now() - quietSince > 400) break;
    await sleep(2);
  }
  await sleep(random() * 40);
}

/** Until every turn is settled and no session has work left, or `ms` have passed. */
export async function untilSettled(reader: SessionStore, turnIds: string[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const turns = await Promise.all(turnIds.map((id) => reader.getTurn(id).catch(() => undefined)));
    const done = turns.every((t) => t?.state === 'settled');
    if (done && (await reader.sessionsWithWork().catch(() => ['?'])).length === 0) return;
    if (Date.now() > deadline) return;
    await sleep(100);
  }
}

/** Until every turn's answer is shown whole and final in the chat, or `ms` have passed. */
export async function untilAnswered(peers: CrashPeers, turnIds: string[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  const answers = () => [...peers.chat.answers.values()];
  const whole = (id: string) =>
    answers().some((a) => a.turnId === id && a.final && a.text === peers.chunks.join(''));
  while (!turnIds.every(whole) && Date.now() < deadline) await sleep(20);
}

/**
 * A turn is lost when it did not complete or its whole answer is not shown in exactly one
 * message; duplicated when the agent ran it more than once (1.0 drops a repeated messageId) or
 * the chat shows its answer in more than one message.
 */
export async function judgeTurns(
  reader: SessionStore,
  turnIds: string[],
  peers: CrashPeers,
  version: WireVersion,
): Promise<{ lost: string[]; duplicated: string[] }> {
  const lost: string[] = [];
  const duplicated: string[] = [];
  for (const id of turnIds) {
    const turn = await reader.getTurn(id);
    const shown = [...peers.chat.answers.values()].filter((a) => a.turnId === id);
    const complete =
      shown.length === 1 && shown[0]?.final === true && shown[0].text === peers.chunks.join('');
    if (turn?.outcome !== 'completed' || !complete) lost.push(id);
    const runs = peers.agent.runs.get(id) ?? 0;
    if ((version === '1.0' && runs > 1) || shown.length > 1 || (shown[0]?.created ?? 0) > 1)
      duplicated.push(id);
  }
  return { lost, duplicated };
}
