import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, StreamEvent, TaskStatus } from '../../src/core/agent/model.js';
import { argumentsHash } from '../../src/core/approval-audit.js';
import { DialectConfigError, dialectSpec } from '../../src/dialects/index.js';
import {
  askUserAnswerId,
  askUserResponse,
  describeToolCall,
  kagentV1Dialect as dialect,
  HitlReplyError,
  type HitlRequest,
  hitlRequestOf,
  messageExtensions,
  toolApprovalResponse,
  KAGENT_HITL_EXTENSION as URI,
  visibleTools,
} from '../../src/dialects/kagent-v1/index.js';

/** A pause as kagent's runtime writes it (kagent.md §1.6; kagent-adk `build_hitl_status_message`). */
function pause(payload: unknown, options: { extensions?: string[]; messageId?: string } = {}): TaskStatus {
  const message: Message = {
    messageId: options.messageId ?? 'm-9',
    role: 'agent',
    taskId: 't-42',
    contextId: 'c-7',
    parts: [{ kind: 'text', text: "Tool 'restart_deployment' requires approval before execution." }],
    extensions: options.extensions ?? [URI],
    metadata: { [URI]: payload },
  };
  return { state: 'input-required', message };
}

const twoTools = {
  type: 'tool_approval_request',
  hint: "Tool 'restart_deployment' requires approval before execution.",
  tools: [
    { id: 'adk-conf-1', call_id: 'call_a', name: 'delete_file', args: { path: '/tmp/old' } },
    {
      id: 'adk-conf-2',
      call_id: 'call_b',
      name: 'restart_deployment',
      args: { name: 'api', namespace: 'prod' },
    },
  ],
};

const nestedApproval = {
  type: 'tool_approval_request',
  hint: 'Remote agent k8s_agent requires approval',
  tools: [{ id: 'parent-conf-1', call_id: 'parent-call-1', name: 'k8s_agent', args: { request: '…' } }],
  nested: {
    subagent_name: 'k8s_agent',
    task_id: 'child-task-1',
    context_id: 'child-ctx-1',
    tools: [{ id: 'child-conf-1', call_id: 'child-call-1', name: 'delete_pod', args: { name: 'obsolete' } }],
  },
};

const askUser = {
  type: 'ask_user_request',
  id: 'ask-1',
  questions: [
    { question: 'Which DB?', choices: ['PostgreSQL', 'MySQL'], multiple: false },
    { question: 'Anything else?', choices: [], multiple: false },
  ],
};

const nestedAskUser = {
  type: 'ask_user_request',
  id: 'parent-conf-1',
  questions: [{ question: 'Which namespace?', choices: ['prod', 'staging'], multiple: false }],
  nested: {
    subagent_name: 'k8s_agent',
    task_id: 'child-task-1',
    context_id: 'child-ctx-1',
    tools: [
      {
        id: 'child-ask-1',
        call_id: 'child-ask-call',
        name: 'ask_user',
        args: { questions: [{ question: 'Which namespace?' }] },
      },
    ],
  },
};

function requestOf(status: TaskStatus): HitlRequest {
  const reading = dialect.readPause(status, null);
  if (reading.kind !== 'question') throw new Error(`not a question: ${reading.reason}`);
  const request = hitlRequestOf(reading.question.reply);
  if (request === undefined) throw new Error('payload is not a request');
  return request;
}

describe('kagent-v1 dialect: reading pauses', () => {
  it('[Q-3] reads a two-tool approval as a structured question keyed by the status message', () => {
    const reading = dialect.readPause(pause(twoTools), null);
    expect(reading.kind).toBe('question');
    if (reading.kind !== 'question') return;
    expect(reading.question.kind).toBe('structured');
    expect(reading.question.key).toBe('hitl:m:m-9');
    expect(reading.question.text).toBe(
      'The agent needs approval for 2 tool calls: delete_file, restart_deployment',
    );
    expect(reading.question.choices).toBeUndefined();
    expect(reading.question.reply).toEqual(twoTools);
    // The reply data survives the store's JSON round trip.
    expect(hitlRequestOf(JSON.parse(JSON.stringify(reading.question.reply)))).toEqual(twoTools);
    // The neutral form: each visible call with its id, call id, name, arguments as text and digest.
    expect(reading.question.form).toEqual({
      kind: 'approval',
      hint: twoTools.hint,
      calls: twoTools.tools.map((t) => ({
        id: t.id,
        callId: t.call_id,
        name: t.name,
        args: JSON.stringify(t.args, null, 2),
        argsCut: false,
        argsSha256: argumentsHash(t.args),
      })),
    });
  });

  it('[Q-3] reads questions with choices into the form, each question with its own', () => {
    const one = dialect.readPause(pause({ ...askUser, questions: [askUser.questions[0]] }), null);
    expect(one.kind === 'question' && one.question.form).toEqual({
      kind: 'ask',
      items: [{ question: 'Which DB?', choices: ['PostgreSQL', 'MySQL'], multiple: false }],
    });
    const two = dialect.readPause(pause(askUser), null);
    expect(two.kind).toBe('question');
    if (two.kind !== 'question') return;
    expect(two.question.text).toBe('The agent asks:\nWhich DB?\nAnything else?');
    expect(two.question.choices).toBeUndefined();
    expect(two.question.reply).toEqual(askUser);
    expect(two.question.form).toEqual({
      kind: 'ask',
      items: [
        { question: 'Which DB?', choices: ['PostgreSQL', 'MySQL'], multiple: false },
        { question: 'Anything else?', choices: [], multiple: false },
      ],
    });
  });

  it('[Q-3] fills what the ask_user tool leaves out: no choices is free text, single-select', () => {
    const request = requestOf(
      pause({ type: 'ask_user_request', id: 'a', questions: [{ question: 'Why?' }] }),
    );
    expect(request.type === 'ask_user_request' && request.questions).toEqual([
      { question: 'Why?', choices: [], multiple: false },
    ]);
  });

  it('[Q-3] shows the sub-agent’s own tool calls for a sub-agent pause', () => {
    const reading = dialect.readPause(pause(nestedApproval), null);
    expect(reading.kind).toBe('question');
    if (reading.kind !== 'question') return;
    expect(reading.question.text).toBe('The sub-agent k8s_agent needs approval for a tool call: delete_pod');
    const request = requestOf(pause(nestedApproval));
    expect(visibleTools(request).map((t) => t.id)).toEqual(['child-conf-1']);
  });

  it('[Q-3] answers a nested ask_user with the child’s id, a plain one with its own', () => {
    const nested = requestOf(pause(nestedAskUser));
    const plain = requestOf(pause(askUser));
    if (nested.type !== 'ask_user_request' || plain.type !== 'ask_user_request') throw new Error('type');
    expect(askUserAnswerId(nested)).toBe('child-ask-1');
    expect(askUserAnswerId(plain)).toBe('ask-1');
  });

  it('turns a null args into {} as kagent does', () => {
    const request = requestOf(
      pause({ type: 'tool_approval_request', tools: [{ id: 'c1', call_id: 'x', name: 'ping', args: null }] }),
    );
    expect(visibleTools(request)[0]?.args).toEqual({});
  });

  it('[Q-3] needs both the URI in extensions and an object with a type under it; otherwise reads text', () => {
    // Metadata without the extension is ignored, as kagent ignores it: the hint is a text question.
    const noExtension = dialect.readPause(pause(twoTools, { extensions: [] }), null);
    expect(noExtension).toEqual({
      kind: 'question',
      question: {
        kind: 'text',
        text: "Tool 'restart_deployment' requires approval before execution.",
        key: 'm:m-9',
      },
    });
    for (const payload of [undefined, 'tool_approval_request', ['x'], { tools: [] }, { type: 7 }]) {
      const reading = dialect.readPause(pause(payload), null);
      expect(reading.kind === 'question' && reading.question.kind).toBe('text');
    }
  });

  it('[Q-1] falls back to the generic reading for a text-only pause, and refuses other parts', () => {
    const text: TaskStatus = {
      state: 'input-required',
      message: { messageId: 'q1', role: 'agent', parts: [{ kind: 'text', text: 'Which namespace?' }] },
    };
    expect(dialect.readPause(text, null)).toEqual({
      kind: 'question',
      question: { kind: 'text', text: 'Which namespace?', key: 'm:q1' },
    });
    const data: TaskStatus = {
      state: 'input-required',
      message: { messageId: 'q2', role: 'agent', parts: [{ kind: 'data', data: { form: 1 } }] },
    };
    expect(dialect.readPause(data, null).kind).toBe('unsupported');
    expect(dialect.readPause({ state: 'input-required' }, null).kind).toBe('unsupported');
  });

  it('[Q-1] does not ask the same pause twice', () => {
    expect(dialect.readPause(pause(twoTools), 'hitl:m:m-9')).toEqual({
      kind: 'unsupported',
      reason: 'the agent asked the same question again',
    });
  });

  it('keys a pause without a messageId by its visible ids', () => {
    const reading = dialect.readPause(pause(nestedApproval, { messageId: '' }), null);
    expect(reading.kind === 'question' && reading.question.key).toBe(
      'hitl:tool_approval_request:child-conf-1',
    );
  });

  const malformed: Array<[string, unknown]> = [
    ['an unknown type', { type: 'tool_approval_form', tools: twoTools.tools }],
    ['a response instead of a request', { type: 'tool_approval_response', approvals: [] }],
    ['no tools', { type: 'tool_approval_request', tools: [] }],
    [
      'a tool without an id',
      { type: 'tool_approval_request', tools: [{ call_id: 'c', name: 'n', args: {} }] },
    ],
    [
      'an empty tool name',
      { type: 'tool_approval_request', tools: [{ id: 'i', call_id: 'c', name: '', args: {} }] },
    ],
    [
      'args that are not an object',
      { type: 'tool_approval_request', tools: [{ id: 'i', call_id: 'c', name: 'n', args: [1] }] },
    ],
    ['a field kagent does not define', { ...twoTools, approve_all: true }],
    ['repeated ids', { type: 'tool_approval_request', tools: [twoTools.tools[0], twoTools.tools[0]] }],
    ['no questions', { type: 'ask_user_request', id: 'a', questions: [] }],
    ['a question without text', { type: 'ask_user_request', id: 'a', questions: [{ question: '' }] }],
    [
      'choices that are not text',
      { type: 'ask_user_request', id: 'a', questions: [{ question: 'q', choices: [1] }] },
    ],
    ['an ask_user without id', { type: 'ask_user_request', questions: [{ question: 'q' }] }],
    [
      'a nested pause without its task',
      { ...nestedApproval, nested: { ...nestedApproval.nested, task_id: null } },
    ],
    ['a nested pause with two parent calls', { ...nestedApproval, tools: [...twoTools.tools] }],
    [
      'a nested ask_user with two child calls',
      { ...nestedAskUser, nested: { ...nestedAskUser.nested, tools: [...twoTools.tools] } },
    ],
    ['a recursive nested pause', { ...nestedApproval, nested: { ...nestedApproval.nested, nested: {} } }],
  ];

  it.each(malformed)('[Q-3] refuses %s as unsupported', (_what, payload) => {
    const reading = dialect.readPause(pause(payload), null);
    expect(reading.kind).toBe('unsupported');
  });

  it('never throws on any payload under the URI', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.constantFrom('tool_approval_request', 'ask_user_request'),
        (value, type) => {
          const payload =
            typeof value === 'object' && value !== null && !Array.isArray(value) ? { ...value, type } : value;
          const reading = dialect.readPause(pause(payload), null);
          expect(['question', 'unsupported']).toContain(reading.kind);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('kagent-v1 dialect: replies', () => {
  const tools = requestOf(pause(twoTools));

  it('[Q-5][Q-3] builds a decision per tool call, in the request’s order, a reason only on a denial', () => {
    const reply = toolApprovalResponse(tools, [
      { id: 'adk-conf-2', approved: false, reason: 'No prod restarts during the freeze' },
      { id: 'adk-conf-1', approved: true, reason: 'ignored' },
    ]);
    expect(reply.metadata).toEqual({
      [URI]: {
        type: 'tool_approval_response',
        approvals: [
          { id: 'adk-conf-1', approved: true },
          { id: 'adk-conf-2', approved: false, rejection_reason: 'No prod restarts during the freeze' },
        ],
      },
    });
    expect(reply.text).toBe(
      'Approved delete_file\nDenied restart_deployment: No prod restarts during the freeze',
    );
    expect(reply.text).not.toMatch(/^\[/); // S-6: no label line
  });

  it('[Q-5] refuses a missing, repeated or unknown id, and never reads a missing one as approval', () => {
    const codeOf = (fn: () => unknown): string => {
      try {
        fn();
      } catch (error) {
        if (error instanceof HitlReplyError) return error.code;
        throw error;
      }
      return 'none';
    };
    expect(codeOf(() => toolApprovalResponse(tools, [{ id: 'adk-conf-1', approved: true }]))).toBe(
      'hitl_missing_decision',
    );
    expect(
      codeOf(() =>
        toolApprovalResponse(tools, [
          { id: 'adk-conf-1', approved: true },
          { id: 'adk-conf-1', approved: false },
          { id: 'adk-conf-2', approved: true },
        ]),
      ),
    ).toBe('hitl_duplicate_decision');
    expect(
      codeOf(() =>
        toolApprovalResponse(tools, [
          { id: 'adk-conf-1', approved: true },
          { id: 'adk-conf-2', approved: true },
          { id: 'call_a', approved: true },
        ]),
      ),
    ).toBe('hitl_unknown_decision');
    expect(codeOf(() => toolApprovalResponse(requestOf(pause(askUser)), []))).toBe('hitl_wrong_request');
    expect(codeOf(() => askUserResponse(tools, [['x']]))).toBe('hitl_wrong_request');
  });

  it('[Q-3] answers a sub-agent pause with the child ids, never the parent’s', () => {
    const nested = requestOf(pause(nestedApproval));
    const reply = toolApprovalResponse(nested, [{ id: 'child-conf-1', approved: true }]);
    expect(reply.metadata[URI]).toEqual({
      type: 'tool_approval_response',
      approvals: [{ id: 'child-conf-1', approved: true }],
    });
    expect(() => toolApprovalResponse(nested, [{ id: 'parent-conf-1', approved: true }])).toThrow(
      HitlReplyError,
    );
  });

  it('[Q-3] builds ask_user answers, positional, as lists of text', () => {
    const reply = askUserResponse(requestOf(pause(askUser)), [['PostgreSQL'], ['Caching, please']]);
    expect(reply.metadata).toEqual({
      [URI]: {
        type: 'ask_user_response',
        id: 'ask-1',
        answers: [{ answer: ['PostgreSQL'] }, { answer: ['Caching, please'] }],
      },
    });
    expect(reply.text).toBe('Which DB? → PostgreSQL\nAnything else? → Caching, please');
    const nested = askUserResponse(requestOf(pause(nestedAskUser)), [['prod']]);
    expect(nested.metadata[URI]).toMatchObject({ id: 'child-ask-1' });
  });

  it('refuses the wrong number of answers, and several for a single-select question', () => {
    const request = requestOf(pause(askUser));
    expect(() => askUserResponse(request, [['PostgreSQL']])).toThrow(
      expect.objectContaining({ code: 'hitl_answer_count' }),
    );
    expect(() => askUserResponse(request, [['PostgreSQL', 'MySQL'], []])).toThrow(
      expect.objectContaining({ code: 'hitl_answer_shape' }),
    );
    const multi = requestOf(
      pause({
        type: 'ask_user_request',
        id: 'm',
        questions: [{ question: 'Which?', choices: ['a', 'b'], multiple: true }],
      }),
    );
    expect(askUserResponse(multi, [['a', 'b']]).metadata[URI]).toMatchObject({
      answers: [{ answer: ['a', 'b'] }],
    });
  });

  it('[Q-3] names the extension on a message only when its metadata carries a HITL response', () => {
    const reply = toolApprovalResponse(tools, [
      { id: 'adk-conf-1', approved: true },
      { id: 'adk-conf-2', approved: true },
    ]);
    expect(messageExtensions({ 'agentkourier.dev/actor': { id: 'U1' }, ...reply.metadata })).toEqual([URI]);
    expect(messageExtensions(null)).toEqual([]);
    expect(messageExtensions({ 'agentkourier.dev/actor': { id: 'U1' } })).toEqual([]);
    expect(messageExtensions({ [URI]: twoTools })).toEqual([]);
    expect(messageExtensions({ [URI]: 'tool_approval_response' })).toEqual([]);
  });
});

describe('kagent-v1 dialect: tool calls shown to a person', () => {
  it('[Q-5] shows the tool name, then its arguments pretty-printed', () => {
    expect(
      describeToolCall({ name: 'restart_deployment', args: { name: 'api', namespace: 'prod' } }, 500),
    ).toBe('restart_deployment\n{\n  "name": "api",\n  "namespace": "prod"\n}');
    expect(describeToolCall({ name: 'ping', args: {} }, 50)).toBe('ping\n{}');
  });

  it('[Q-5] cuts long arguments but keeps the name, and never splits a character', () => {
    const text = describeToolCall({ name: 'write_file', args: { body: '😀'.repeat(100) } }, 40);
    expect(text.length).toBeLessThanOrEqual(40);
    expect(text.startsWith('write_file\n{')).toBe(true);
    expect(text.endsWith('…')).toBe(true);
    expect(text.isWellFormed()).toBe(true);
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }),
        fc.jsonValue(),
        fc.integer({ min: 1, max: 300 }),
        (name, v, max) => {
          const out = describeToolCall({ name: name === '' ? 'x' : name, args: { v } }, max);
          expect(out.length).toBeLessThanOrEqual(max);
          expect(out.isWellFormed()).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('[Q-5] makes controls and direction overrides visible instead of letting them disguise text', () => {
    const text = describeToolCall({ name: 'rm\u202Eetad', args: { cmd: 'a\u0007b\u2066' } }, 500);
    expect(text).toContain('rm\\u202eetad');
    expect(['\u0007', '\u202E', '\u2066'].filter((c) => text.includes(c))).toEqual([]);
    expect(text).toContain('a\\u0007b\\u2066'); // JSON escapes the C0 control itself
  });
});

describe('kagent-v1 dialect: tool steps and wiring', () => {
  function working(parts: Message['parts']): StreamEvent {
    return {
      kind: 'status-update',
      taskId: 't',
      contextId: 'c',
      status: { state: 'working', message: { messageId: 'w', role: 'agent', parts } },
    };
  }

  it('[R-9] shows function calls and results marked by ADK or kagent, ADK’s key first', () => {
    const steps = dialect.toolSteps(
      working([
        {
          kind: 'data',
          data: { id: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } },
          metadata: { kagent_type: 'function_call' },
        },
        {
          kind: 'data',
          data: { id: 'call_a', name: 'add_numbers', response: { result: 5 } },
          metadata: { adk_type: 'function_response', kagent_type: 'ignored' },
        },
        { kind: 'data', data: { x: 1 } },
        { kind: 'text', text: 'thinking' },
      ]),
    );
    expect(steps).toEqual([
      { kind: 'call', toolName: 'add_numbers', summary: '{"a":2,"b":3}' },
      { kind: 'result', toolName: 'add_numbers', summary: '{"result":5}' },
    ]);
  });

  it('[R-9] hides ADK’s confirmation plumbing and long-running calls', () => {
    const steps = dialect.toolSteps(
      working([
        {
          kind: 'data',
          data: { id: 'c1', name: 'adk_request_confirmation', args: {} },
          metadata: { kagent_type: 'function_call', kagent_is_long_running: true },
        },
        {
          kind: 'data',
          data: { id: 'c1', name: 'adk_request_confirmation', response: { response: '{}' } },
          metadata: { kagent_type: 'function_response' },
        },
        {
          kind: 'data',
          data: { id: 'c2', name: 'deploy', args: {} },
          metadata: { adk_type: 'function_call', adk_is_long_running: true },
        },
      ]),
    );
    expect(steps).toEqual([]);
  });

  it('[DT-2][DT-4][S-8] is what dialectSpec gives for kagent-v1: its endpoint and its one extension', () => {
    const spec = dialectSpec('kagent-v1');
    expect(spec.dialect).toBe(dialect);
    expect(spec.dialect.name).toBe('kagent-v1');
    expect(spec.extensions).toEqual([URI]);
    expect(spec.endpoint('http://kagent.example:8083/', { namespace: 'team-a', name: 'k8s-agent' })).toBe(
      'http://kagent.example:8083/agents/team-a/k8s-agent',
    );
    expect(dialectSpec('a2a').extensions).toEqual([]);
    // Without the agent's namespace and name there is no endpoint: a typed error says so.
    expect(() => spec.endpoint('http://kagent.example:8083/', undefined)).toThrow(DialectConfigError);
    expect(() => spec.endpoint('http://kagent.example:8083/', undefined)).toThrow(
      expect.objectContaining({ code: 'dialect_config' }),
    );
  });
});
