import { afterEach, describe, expect, it } from 'vitest';
import { RULE_IDS, type RuleId } from '../../src/check/index.js';
import { PROBE_TEXT, UNSUPPORTED_METHOD } from '../../src/check/observe.js';
import { KAGENT_HITL_EXTENSION } from '../../src/dialects/index.js';
import {
  answer,
  bareMessage,
  type ContractAgent,
  type ContractAgentOptions,
  newContext,
  noIds,
  redirect,
  rpcError,
  script,
  slowHeaders,
  type WireVersion,
} from '../peers/contract-agent/contract-agent.js';
import { check, checkJson, closeAgents, deadPort, failed, METHOD, rule, start, statuses } from './helpers.js';

afterEach(closeAgents);

/** What a well-behaved agent gets: every rule passes but the two a version or a short check rules out. */
function expectedFor(version: WireVersion): Record<string, string> {
  const out: Record<string, string> = Object.fromEntries(RULE_IDS.map((id) => [id, 'PASS']));
  out['reply.events-5min'] = 'SKIP';
  out['poll.progress'] = 'SKIP';
  // Only with --identity-keys (test/check/identity.test.ts).
  out['identity.verified'] = 'SKIP';
  if (version === '0.3') out['method.list-tasks'] = 'SKIP';
  return out;
}

describe.each(['1.0', '0.3'] as const)('check against a well-behaved agent at A2A %s', (version) => {
  it('passes every rule, SKIPs only what the version or a short check rules out, and exits 0', async () => {
    const agent = await start({ version });
    const { code, report, err } = await checkJson([agent.endpoint]);
    expect(statuses(report)).toEqual(expectedFor(version));
    expect(rule(report, 'reply.events-5min').detail).toMatch(/cannot be proven in a short check/);
    if (version === '0.3')
      expect(rule(report, 'method.list-tasks').detail).toMatch(/does not exist in A2A 0\.3/);
    expect(code).toBe(0);
    expect(err).toEqual([]);
  });

  it('sends only marked probes, one run per messageId, and leaves no task running', async () => {
    const agent = await start({ version });
    await checkJson([agent.endpoint]);
    const sends = agent.rpc(METHOD[version].send);
    expect(sends).toHaveLength(3);
    for (const send of sends) expect(JSON.stringify(send.body)).toContain('agentkourier check: ');
    expect(JSON.stringify(sends[0]?.body)).toContain(PROBE_TEXT);
    // The third send repeats the first messageId; a deduping agent ran it once.
    expect([...agent.runs.values()].sort()).toEqual([1, 1]);
    for (const task of agent.tasks.values()) expect(['completed', 'canceled']).toContain(task.status.state);
  });
});

describe.each(['1.0', '0.3'] as const)(
  'check --polling against an agent that does not stream, at A2A %s',
  (version) => {
    const send = version === '1.0' ? 'SendMessage' : 'message/send';
    const streamed = [METHOD[version].send, METHOD[version].subscribe];

    it(`[P-1][P-2][P-3] checks the non-streaming path: send, task id, GetTask progress, cancel, ListTasks, dedupe (${version})`, async () => {
      const agent = await start({
        version,
        card: { streaming: false },
        defaultAnswer: { chunks: ['polled ', 'answer'], chunkDelayMs: 700 },
      });
      const { code, report, err } = await checkJson([agent.endpoint, '--polling']);
      const expected = expectedFor(version);
      expected['poll.progress'] = 'PASS';
      expected['method.subscribe'] = 'SKIP';
      expect(statuses(report)).toEqual(expected);
      expect(rule(report, 'card.streaming').detail).toMatch(/reaches it with SendMessage and GetTask/);
      expect(rule(report, 'poll.progress').detail).toMatch(/completed after [1-9]\d* GetTask read/);
      expect(rule(report, 'reply.artifact-text').status).toBe('PASS');
      expect(code).toBe(0);
      expect(err).toEqual([]);
      // Only non-streaming calls, each send asking for an immediate return; one run per messageId.
      for (const method of streamed) expect(agent.rpc(method)).toHaveLength(0);
      const sends = agent.rpc(send);
      expect(sends).toHaveLength(3);
      const configuration = (sends[0]?.body as { params: { configuration: unknown } } | undefined)?.params
        .configuration;
      expect(configuration).toEqual(version === '1.0' ? { returnImmediately: true } : { blocking: false });
      expect([...agent.runs.values()].sort()).toEqual([1, 1]);
    });

    it(`[DT-3][P-1] without --polling, fails card.streaming and says how to opt in (${version})`, async () => {
      const agent = await start({ version, card: { streaming: false } });
      const { code, report } = await checkJson([agent.endpoint]);
      expect(rule(report, 'card.streaming')).toMatchObject({ status: 'FAIL' });
      expect(rule(report, 'card.streaming').consequence).toMatch(/spec\.polling.*--polling/);
      expect(code).toBe(1);
      expect(agent.rpc(send)).toHaveLength(0);
    });

    it(`[P-1] with --polling, an agent whose card streams is still checked by streaming (${version})`, async () => {
      const agent = await start({ version });
      const { report } = await checkJson([agent.endpoint, '--polling']);
      expect(rule(report, 'poll.progress')).toMatchObject({ status: 'SKIP' });
      expect(rule(report, 'card.streaming').detail).toMatch(/streamed even with polling on/);
      expect(agent.rpc(send)).toHaveLength(0);
      expect(agent.rpc(METHOD[version].send).length).toBeGreaterThan(0);
    });
  },
);

interface Misbehaviour {
  name: string;
  /** The rule it breaks, and how. */
  rule: RuleId;
  status?: 'FAIL' | 'WARN';
  options?: Omit<ContractAgentOptions, 'version'>;
  setup?: (agent: ContractAgent, version: WireVersion) => void;
  args?: string[];
  /** What the rule must say it saw. */
  detail: RegExp;
  /** Rules that fail too because the misbehaviour inherently breaks them as well. */
  alsoFails?: RuleId[];
  versions?: WireVersion[];
}

const MISBEHAVIOURS: Misbehaviour[] = [
  {
    name: '[DT-1] card without JSON-RPC',
    detail: /lists GRPC( 1\.0)?, none of them JSON-RPC at A2A 1\.0 or 0\.3/,
    rule: 'card.jsonrpc',
    options: { card: { interfaces: 'grpc-only' } },
  },
  {
    name: '[DT-3] card without streaming',
    detail: /capabilities\.streaming is false/,
    rule: 'card.streaming',
    options: { card: { streaming: false } },
  },
  {
    name: '[DT-4] a required extension the dialect does not speak',
    detail: /requires https:\/\/example\.com\/ext\/unknown\/v1; the a2a dialect speaks none/,
    rule: 'card.extensions',
    options: { card: { extensions: [{ uri: 'https://example.com/ext/unknown/v1', required: true }] } },
  },
  {
    name: '[DT-5] a redirect of a JSON-RPC call',
    detail: /a JSON-RPC call: HTTP 307 to http:\/\/elsewhere\.invalid\/a2a/,
    rule: 'transport.no-redirect',
    setup: (a) => a.enqueue(redirect('http://elsewhere.invalid/a2a', 307)),
  },
  {
    // A redirected card is also a card that could not be fetched: both rules name it.
    name: '[DT-5] a redirect of the card',
    detail: /the card: HTTP 302 to http:\/\/elsewhere\.invalid/,
    rule: 'transport.no-redirect',
    options: { card: { redirectTo: 'http://elsewhere.invalid/.well-known/agent-card.json' } },
    alsoFails: ['card.fetch'],
  },
  {
    name: '[DT-6] response headers later than the timeout',
    detail: /no response headers within 500ms: a JSON-RPC call/,
    rule: 'transport.headers-30s',
    setup: (a) => a.enqueue(slowHeaders(1500)),
    args: ['--timeout', '500ms'],
  },
  {
    name: '[R-1] a bare Message for an answer',
    detail: /bare Message.*hello from a message/,
    rule: 'reply.task-events',
    setup: (a, v) => a.enqueueFor(METHOD[v].send, bareMessage('hello from a message')),
  },
  {
    name: '[R-2] events without ids',
    detail: /left out the task id or the contextId/,
    rule: 'reply.ids',
    setup: (a, v) => a.enqueueFor(METHOD[v].send, noIds()),
  },
  {
    name: '[R-3] a new contextId on the second turn',
    detail: /came back in/,
    rule: 'reply.context-kept',
    setup: (a, v) => a.enqueueFor(METHOD[v].send, answer(), newContext()),
  },
  {
    name: '[R-4] the answer in the status message, no artifact text',
    detail: /completed with no artifact text.*"the answer"/,
    rule: 'reply.artifact-text',
    setup: (a, v) =>
      a.enqueueFor(
        METHOD[v].send,
        script([
          { event: 'task' },
          { event: 'working' },
          { event: 'completed', text: 'the answer' },
          { event: 'task' },
        ]),
      ),
  },
  {
    name: '[R-5] the stream ends while the task is still working',
    detail: /ended while the task was working/,
    rule: 'reply.final-task',
    setup: (a, v) =>
      a.enqueueFor(
        METHOD[v].send,
        script([{ event: 'task' }, { event: 'working' }, { event: 'chunk', text: 'part' }]),
      ),
    // The follow-up GetTask polls for one --timeout before the checker cancels the task.
    args: ['--timeout', '1s'],
  },
  {
    name: '[R-8] no dedupe of a repeated messageId',
    detail: /ran again as task/,
    rule: 'turn.messageid-dedupe',
    options: { dedupe: false },
  },
  {
    name: '[M-2] GetTask answering -32601',
    detail: /GetTask is not implemented \(JSON-RPC -32601/,
    rule: 'method.get-task',
    setup: (a, v) => a.enqueueFor(METHOD[v].get, rpcError(-32601, 'Method not found')),
  },
  {
    name: '[M-3] SubscribeToTask answering -32601',
    detail: /SubscribeToTask is not implemented/,
    rule: 'method.subscribe',
    setup: (a, v) => a.enqueueFor(METHOD[v].subscribe, rpcError(-32601, 'Method not found')),
  },
  {
    name: '[M-4] CancelTask answering -32601',
    detail: /CancelTask is not implemented/,
    rule: 'method.cancel',
    setup: (a, v) => a.enqueueFor(METHOD[v].cancel, rpcError(-32601, 'Method not found')),
  },
  {
    name: '[M-5] ListTasks answering -32601',
    detail: /ListTasks is not implemented/,
    rule: 'method.list-tasks',
    setup: (a) => a.enqueueFor('ListTasks', rpcError(-32601, 'Method not found')),
    versions: ['1.0'],
  },
  {
    name: '[E-3] -32004 for an unsupported method',
    detail: /answered -32004 \(unsupported operation\), not -32601/,
    rule: 'errors.busy-code',
    status: 'WARN',
    setup: (a) => a.enqueueFor(UNSUPPORTED_METHOD, rpcError(-32004, 'Unsupported operation')),
  },
];

const CASES = (['1.0', '0.3'] as const).flatMap((version) =>
  MISBEHAVIOURS.filter((m) => m.versions === undefined || m.versions.includes(version)).map(
    (m) => [`${m.name} (A2A ${version})`, version, m] as const,
  ),
);

describe('check against each misbehaviour of the contract agent', () => {
  it.each(CASES)('%s: fails exactly its rule', async (_name, version, m) => {
    const agent = await start({ version, ...m.options });
    m.setup?.(agent, version);
    const { code, report } = await checkJson([agent.endpoint, ...(m.args ?? [])]);
    const status = m.status ?? 'FAIL';
    const broken = rule(report, m.rule);
    expect(broken.status, broken.detail).toBe(status);
    expect(broken.detail).toMatch(m.detail);
    expect(broken.consequence).not.toBeNull();
    expect(failed(report).sort()).toEqual((status === 'FAIL' ? [m.rule, ...(m.alsoFails ?? [])] : []).sort());
    expect(code).toBe(status === 'FAIL' ? 1 : 0);
    // Whatever it did, the agent was left with nothing running, and no turn overlapped another.
    for (const task of agent.tasks.values())
      expect(['submitted', 'working']).not.toContain(task.status.state);
    expect(agent.overlaps).toEqual([]);
  });
});

describe('check against what the official SDKs do, which the contract allows', () => {
  it.each(['1.0', '0.3'] as const)(
    '[M-3] a -32004 refusal to subscribe to the finished probe task passes (A2A %s)',
    async (version) => {
      const agent = await start({ version });
      agent.enqueueFor(METHOD[version].subscribe, rpcError(-32004, 'Task is in a terminal state'));
      const { code, report } = await checkJson([agent.endpoint]);
      expect(rule(report, 'method.subscribe')).toMatchObject({
        status: 'PASS',
        detail: expect.stringMatching(/refused to subscribe to the finished probe task \(-32004\)/),
      });
      expect(failed(report)).toEqual([]);
      expect(code).toBe(0);
    },
  );

  it.each(['1.0', '0.3'] as const)(
    '[R-5] a stream that ends after the terminal status update, without the full Task, passes (A2A %s)',
    async (version) => {
      const agent = await start({ version });
      agent.enqueueFor(METHOD[version].send, answer({ final: 'status-only' }));
      const { code, report } = await checkJson([agent.endpoint]);
      expect(rule(report, 'reply.final-task')).toMatchObject({
        status: 'PASS',
        detail: 'the stream ended after the completed status update',
      });
      expect(report.rules.filter((r) => r.status === 'WARN' || r.status === 'FAIL')).toEqual([]);
      expect(code).toBe(0);
    },
  );

  it('[DT-7] a card naming another URL passes, and the detail says the broker ignores it', async () => {
    const agent = await start({ version: '1.0', card: { interfaceUrl: 'http://elsewhere.invalid/a2a' } });
    const { code, report } = await checkJson([agent.endpoint]);
    expect(rule(report, 'card.jsonrpc')).toMatchObject({
      status: 'PASS',
      detail: expect.stringMatching(
        /the card names http:\/\/elsewhere\.invalid\/a2a, which the broker ignores/,
      ),
    });
    expect(agent.requests.every((r) => r.path.startsWith('/a2a'))).toBe(true);
    expect(code).toBe(0);
  });
});

describe('check output', () => {
  it('--json prints the agent summary and one {id, status, detail, consequence} per rule, in order', async () => {
    const agent = await start({ version: '1.0', dedupe: false });
    const { report } = await checkJson([agent.endpoint]);
    expect(Object.keys(report).sort()).toEqual(['agent', 'rules']);
    expect(report.agent).toEqual({
      name: 'Contract Agent',
      version: '1.0.0',
      protocolVersion: '1.0',
      streaming: true,
      extensions: [],
    });
    expect(report.rules.map((r) => r.id)).toEqual([...RULE_IDS]);
    for (const r of report.rules) {
      expect(Object.keys(r).sort()).toEqual(['consequence', 'detail', 'id', 'status']);
      expect(r.detail).not.toBe('');
      expect(r.consequence === null).toBe(r.status === 'PASS' || r.status === 'SKIP');
    }
    expect(rule(report, 'turn.messageid-dedupe').consequence).toMatch(/runs it twice/);
  });

  it('prints one line per rule, with the consequence on a FAIL', async () => {
    const agent = await start({ version: '1.0', dedupe: false });
    const { code, out } = await check([agent.endpoint]);
    expect(code).toBe(1);
    for (const id of RULE_IDS) {
      expect(
        out.filter((l) => new RegExp(`^(PASS|FAIL|WARN|SKIP)  ${id.replace('.', '\\.')} `).test(l)),
      ).toHaveLength(1);
    }
    const dedupe = out.find((l) => l.includes(' turn.messageid-dedupe '));
    expect(dedupe).toMatch(/^FAIL .*ran again as task .* → .*runs it twice/);
    expect(out.at(-1)).toMatch(/^\d+ pass, 1 fail, 0 warn, 3 skip$/);
  });

  it('[S-8] calls with the token and the static headers, and never prints the token', async () => {
    const agent = await start({ version: '1.0', card: { streaming: false } });
    const token = 'sekret-token-4f1c';
    const text = await check([agent.endpoint, '--token', token, '--header', 'X-Team: payments']);
    const json = await check([agent.endpoint, '--token', token, '--json']);
    expect(agent.requests.length).toBeGreaterThan(0);
    for (const req of agent.requests) expect(req.headers.authorization).toBe(`Bearer ${token}`);
    expect(agent.requests.some((r) => r.headers['x-team'] === 'payments')).toBe(true);
    for (const run of [text, json]) expect([...run.out, ...run.err].join('\n')).not.toContain(token);
  });

  it('exits 2 when nothing answers at the endpoint', async () => {
    const port = await deadPort();
    const { code, report } = await checkJson([`http://127.0.0.1:${port}/a2a`, '--timeout', '2s']);
    expect(code).toBe(2);
    expect(report.agent).toBeNull();
    expect(rule(report, 'card.fetch')).toMatchObject({
      status: 'FAIL',
      detail: expect.stringMatching(/ECONNREFUSED/),
    });
    expect(failed(report)).toEqual(['card.fetch']);
  });
});

describe('check with the kagent-v1 dialect', () => {
  it('[DT-2] [DT-4] reaches the agent under /agents/<ns>/<name> and accepts its required HITL extension', async () => {
    const agent = await start({
      version: '1.0',
      path: '/api/a2a/agents/team/helper',
      card: { extensions: [{ uri: KAGENT_HITL_EXTENSION, required: true }] },
    });
    const base = `${agent.origin}/api/a2a`;
    const { code, report } = await checkJson([base, '--dialect', 'kagent-v1', '--agent', 'team/helper']);
    expect(statuses(report)).toEqual(expectedFor('1.0'));
    expect(code).toBe(0);
    const sends = agent.rpc('SendStreamingMessage');
    expect(sends[0]?.headers['a2a-extensions']).toBe(KAGENT_HITL_EXTENSION);

    // The same agent through the a2a dialect, which speaks no extension, is refused.
    const plain = await checkJson([agent.endpoint]);
    expect(failed(plain.report)).toEqual(['card.extensions']);
  });
});
