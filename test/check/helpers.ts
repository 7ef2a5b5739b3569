import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RuleId, type RuleStatus, runCheck } from '../../src/check/index.js';
import type { JsonReport } from '../../src/check/report.js';
import {
  type ContractAgent,
  type ContractAgentOptions,
  startContractAgent,
} from '../peers/contract-agent/contract-agent.js';

/** One run of the checker with its output captured, as the binary would print it. */
export interface CheckRun {
  code: number;
  out: string[];
  err: string[];
}

export async function check(argv: string[]): Promise<CheckRun> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCheck(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

export async function checkJson(argv: string[]): Promise<CheckRun & { report: JsonReport }> {
  const run = await check([...argv, '--json']);
  return { ...run, report: JSON.parse(run.out.join('\n')) as JsonReport };
}

export function statuses(report: JsonReport): Record<string, RuleStatus> {
  return Object.fromEntries(report.rules.map((r) => [r.id, r.status]));
}

export function rule(report: JsonReport, id: RuleId): JsonReport['rules'][number] {
  const found = report.rules.find((r) => r.id === id);
  if (found === undefined) throw new Error(`no rule ${id} in the report`);
  return found;
}

/** The ids of the rules that failed. */
export function failed(report: JsonReport): string[] {
  return report.rules.filter((r) => r.status === 'FAIL').map((r) => r.id);
}

const agents: ContractAgent[] = [];

export async function start(o: ContractAgentOptions): Promise<ContractAgent> {
  const agent = await startContractAgent(o);
  agents.push(agent);
  return agent;
}

export async function closeAgents(): Promise<void> {
  await Promise.all(agents.splice(0).map((a) => a.close()));
}

/** A loopback port nothing listens on: a server is opened there, then closed. */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** JSON-RPC method names per wire version, as the contract agent routes them. */
export const METHOD = {
  '1.0': { send: 'SendStreamingMessage', get: 'GetTask', subscribe: 'SubscribeToTask', cancel: 'CancelTask' },
  '0.3': { send: 'message/stream', get: 'tasks/get', subscribe: 'tasks/resubscribe', cancel: 'tasks/cancel' },
} as const;
