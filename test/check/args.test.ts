import { describe, expect, it } from 'vitest';
import { CheckArgumentError, parseCheckArgs } from '../../src/check/index.js';
import { KAGENT_HITL_EXTENSION } from '../../src/dialects/index.js';
import { check } from './helpers.js';

const SECRET = 'tok-9d2e-secret';

describe('check arguments', () => {
  it('defaults: a2a, a user id identity, 60s, lines', () => {
    const parsed = parseCheckArgs(['http://agent.example/a2a']);
    expect(parsed).toEqual({
      help: false,
      options: {
        endpoint: 'http://agent.example/a2a',
        dialect: 'a2a',
        speaks: [],
        identity: { kind: 'user-id', userId: 'agentkourier-check' },
        headers: {},
        json: false,
        polling: false,
        timeoutMs: 60_000,
      },
    });
  });

  it('[DT-2] kagent-v1 endpoint is the url plus /agents/<namespace>/<name>, speaking the HITL extension', () => {
    const parsed = parseCheckArgs([
      'http://kagent.example/api/a2a/',
      '--dialect',
      'kagent-v1',
      '--agent',
      'team/helper',
      '--token',
      SECRET,
      '--header',
      'X-Team: payments',
      '--header',
      'X-Empty:',
      '--timeout',
      '1m30s',
      '--json',
    ]);
    expect(parsed).toEqual({
      help: false,
      options: {
        endpoint: 'http://kagent.example/api/a2a/agents/team/helper',
        dialect: 'kagent-v1',
        speaks: [KAGENT_HITL_EXTENSION],
        identity: { kind: 'bearer', token: SECRET },
        headers: { 'X-Team': 'payments', 'X-Empty': '' },
        json: true,
        polling: false,
        timeoutMs: 90_000,
      },
    });
  });

  it('[P-1] --polling checks as a backend with spec.polling reaches the agent', () => {
    const parsed = parseCheckArgs(['http://agent.example/a2a', '--polling']);
    expect(parsed.help === false && parsed.options.polling).toBe(true);
  });

  it.each([
    ['no endpoint', [], /endpoint is missing/],
    ['two endpoints', ['http://a.example', 'http://b.example'], /exactly one endpoint/],
    ['not a URL', ['agent.example'], /must be a URL/],
    ['not http', ['ftp://agent.example'], /http or https/],
    ['an unknown dialect', ['http://a.example', '--dialect', 'grpc'], /--dialect must be a2a or kagent-v1/],
    ['kagent-v1 without --agent', ['http://a.example', '--dialect', 'kagent-v1'], /needs --agent/],
    ['--agent on a2a', ['http://a.example', '--agent', 'ns/name'], /only to --dialect kagent-v1/],
    [
      'a bad --agent',
      ['http://a.example', '--dialect', 'kagent-v1', '--agent', 'helper'],
      /<namespace>\/<name>/,
    ],
    ['--token and --user-id', ['http://a.example', '--token', SECRET, '--user-id', 'U1'], /not both/],
    ['a header without a colon', ['http://a.example', '--header', `X-Key ${SECRET}`], /'Name: value'/],
    ['a header given twice', ['http://a.example', '--header', 'X-A: 1', '--header', 'x-a: 2'], /given twice/],
    ['a bad --timeout', ['http://a.example', '--timeout', '30'], /duration/],
    ['a --timeout too long', ['http://a.example', '--timeout', '1h'], /between/],
    ['an unknown option', ['http://a.example', '--verbose'], /verbose/],
    ['an option without its value', ['http://a.example', '--token'], /token/],
  ])('refuses %s', (_name, argv, message) => {
    expect(() => parseCheckArgs(argv)).toThrow(CheckArgumentError);
    expect(() => parseCheckArgs(argv)).toThrow(message);
  });

  it('exits 2 on a wrong argument, with the reason on stderr and no secret anywhere', async () => {
    for (const argv of [
      ['http://a.example', '--token', SECRET, '--user-id', 'U1'],
      ['http://a.example', '--header', `X-Key ${SECRET}`],
      // The client's own check: a static header may not replace one the client sets.
      ['http://a.example', '--header', `Authorization: Bearer ${SECRET}`],
    ]) {
      const run = await check(argv);
      expect(run.code).toBe(2);
      expect(run.out).toEqual([]);
      expect(run.err[0]).toMatch(/^agentkourier check: /);
      expect(run.err.join('\n')).not.toContain(SECRET);
    }
  });

  it('--help prints the usage and exits 0', async () => {
    const run = await check(['--help']);
    expect(run.code).toBe(0);
    expect(run.out.join('\n')).toMatch(/Usage: agentkourier check <endpoint>/);
  });
});
