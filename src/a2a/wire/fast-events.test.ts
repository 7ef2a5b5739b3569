import { describe, expect, it } from 'vitest';
import { MalformedResponseError } from '../../core/agent/errors.js';
import * as v03 from './v0_3/codec.js';
import * as v10 from './v1_0/codec.js';

// Examples beside the property test: what the fast path takes, what it leaves to zod, and that
// a broken hot event still gets zod's typed error naming the bad member.

/** A token as kagent's runtimes stream it at 1.0: a working status update with its message. */
const token10 = (message: unknown, extra: Record<string, unknown> = {}) => ({
  statusUpdate: {
    taskId: 't',
    contextId: 'c',
    status: { state: 'TASK_STATE_WORKING', message, timestamp: '2026-12-04T21:00:00Z' },
    metadata: { kagent_adk_partial: true, kagent_author: 'k8s_agent' },
    ...extra,
  },
});
const token03 = (message: unknown, extra: Record<string, unknown> = {}) => ({
  kind: 'status-update',
  taskId: 't',
  contextId: 'c',
  status: { state: 'working', message, timestamp: '2026-12-04T21:00:00Z' },
  final: false,
  metadata: { kagent_adk_partial: true, kagent_author: 'k8s_agent' },
  ...extra,
});

const update10 = (artifact: unknown, extra: Record<string, unknown> = {}) => ({
  artifactUpdate: { taskId: 't', contextId: 'c', artifact, append: true, ...extra },
});
const update03 = (artifact: unknown, extra: Record<string, unknown> = {}) => ({
  kind: 'artifact-update',
  taskId: 't',
  contextId: 'c',
  artifact,
  append: true,
  ...extra,
});

function malformedMessage(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(MalformedResponseError);
    expect((error as MalformedResponseError).code).toBe('malformed_response');
    return (error as Error).message;
  }
  throw new Error('expected a MalformedResponseError');
}

describe('the artifact-update fast path', () => {
  it('reads a text chunk at 1.0 and at 0.3 to the same model', () => {
    const expected = {
      kind: 'artifact-update',
      taskId: 't',
      contextId: 'c',
      artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'hi', metadata: { k: 1 } }] },
      append: true,
      lastChunk: false,
    };
    const fast10 = v10.readFastEvent(
      update10({ artifactId: 'a', parts: [{ text: 'hi', metadata: { k: 1 } }] }),
    );
    const fast03 = v03.readFastEvent(
      update03({ artifactId: 'a', parts: [{ kind: 'text', text: 'hi', metadata: { k: 1 } }] }),
    );
    expect(fast10).toStrictEqual(expected);
    expect(fast03).toStrictEqual(expected);
  });

  it('leaves other parts and other events to the zod path, which reads them', () => {
    const file10 = update10({
      artifactId: 'a',
      parts: [{ text: 'x' }, { url: 'https://f', mediaType: 'image/png' }],
    });
    expect(v10.readFastEvent(file10)).toBeUndefined();
    expect(v10.v1_0.decodeEvent(file10)).toMatchObject({
      artifact: {
        parts: [
          { kind: 'text', text: 'x' },
          { kind: 'file', uri: 'https://f', mediaType: 'image/png' },
        ],
      },
    });
    const data03 = update03({ artifactId: 'a', parts: [{ kind: 'data', data: { n: 1 } }] });
    expect(v03.readFastEvent(data03)).toBeUndefined();
    expect(v03.v0_3.decodeEvent(data03)).toMatchObject({
      artifact: { parts: [{ kind: 'data', data: { n: 1 } }] },
    });
    const task10 = { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } };
    expect(v10.readFastEvent(task10)).toBeUndefined();
    expect(v10.v1_0.decodeEvent(task10)).toMatchObject({ kind: 'task', task: { id: 't' } });
  });

  it('gives a broken hot event the zod path’s typed error, naming the member (1.0)', () => {
    expect(malformedMessage(() => v10.v1_0.decodeEvent(update10({ parts: [{ text: 5 }] })))).toMatch(
      /at artifactUpdate\.artifact\.parts\.0\.text/,
    );
    expect(malformedMessage(() => v10.v1_0.decodeEvent(update10({ parts: [] }, { append: 'yes' })))).toMatch(
      /at artifactUpdate\.append/,
    );
    expect(
      malformedMessage(() => v10.v1_0.decodeEvent({ ...update10({ parts: [{ text: 'x' }] }), task: null })),
    ).toMatch(/at task/);
    expect(
      malformedMessage(() => v10.v1_0.decodeEvent(update10({ parts: [{ text: 'x', mediaType: 3 }] }))),
    ).toMatch(/at artifactUpdate\.artifact\.parts\.0\.mediaType/);
  });

  it('gives a broken hot event the zod path’s typed error, naming the member (0.3)', () => {
    expect(malformedMessage(() => v03.v0_3.decodeEvent(update03({ parts: [{ kind: 'text' }] })))).toMatch(
      /at artifact\.parts\.0\.text/,
    );
    expect(
      malformedMessage(() =>
        v03.v0_3.decodeEvent(update03({ parts: [] }, { metadata: ['not', 'a', 'record'] })),
      ),
    ).toMatch(/at metadata/);
    expect(malformedMessage(() => v03.v0_3.decodeEvent(update03('not an artifact')))).toMatch(/at artifact/);
  });
});

describe('the status-update fast path', () => {
  it('reads a token of kagent’s stream at 1.0 and at 0.3 to the same model as zod', () => {
    const fast10 = v10.readFastEvent(
      token10({ messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'hi', metadata: { k: 1 } }] }),
    );
    const fast03 = v03.readFastEvent(
      token03({
        kind: 'message',
        messageId: 'm',
        role: 'agent',
        parts: [{ kind: 'text', text: 'hi', metadata: { k: 1 } }],
      }),
    );
    const expected = {
      kind: 'status-update',
      taskId: 't',
      contextId: 'c',
      status: {
        state: 'working',
        message: { messageId: 'm', role: 'agent', parts: [{ kind: 'text', text: 'hi', metadata: { k: 1 } }] },
        timestamp: '2026-12-04T21:00:00Z',
      },
      metadata: { kagent_adk_partial: true, kagent_author: 'k8s_agent' },
    };
    expect(fast10).toStrictEqual(expected);
    expect(fast03).toStrictEqual({ ...expected, final: false });
    expect(JSON.stringify(fast03)).toBe(
      JSON.stringify(
        v03.readEventBySchema(
          token03({
            kind: 'message',
            messageId: 'm',
            role: 'agent',
            parts: [{ kind: 'text', text: 'hi', metadata: { k: 1 } }],
          }),
        ),
      ),
    );
  });

  it('reads a status with no message, and the states and roles each version writes', () => {
    expect(v10.readFastEvent({ statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } })).toStrictEqual({
      kind: 'status-update',
      taskId: '',
      contextId: '',
      status: { state: 'completed' },
    });
    expect(v10.readFastEvent({ statusUpdate: { status: { state: 6 } } })).toMatchObject({
      status: { state: 'input-required' },
    });
    expect(v10.readFastEvent(token10({ messageId: 'm', role: 1, parts: [] }))).toMatchObject({
      status: { message: { role: 'user' } },
    });
    expect(v03.readFastEvent(token03({ messageId: 'm', role: 'user', parts: [] }))).toMatchObject({
      status: { message: { role: 'user' } },
    });
    expect(v03.readFastEvent({ kind: 'status-update', status: { state: 'no-such-state' } })).toMatchObject({
      status: { state: 'unknown' },
    });
  });

  it('leaves a message with a tool step (a data part) to the zod path, which reads it', () => {
    const call = { data: { name: 'get_pods', args: {} }, metadata: { kagent_type: 'function_call' } };
    const step10 = token10({ messageId: 'm', role: 'ROLE_AGENT', parts: [call] });
    expect(v10.readFastEvent(step10)).toBeUndefined();
    expect(v10.v1_0.decodeEvent(step10)).toMatchObject({
      status: { message: { parts: [{ kind: 'data', data: { name: 'get_pods' } }] } },
    });
    const step03 = token03({
      kind: 'message',
      messageId: 'm',
      role: 'agent',
      parts: [{ kind: 'data', ...call }],
    });
    expect(v03.readFastEvent(step03)).toBeUndefined();
    expect(v03.v0_3.decodeEvent(step03)).toMatchObject({
      status: { message: { parts: [{ kind: 'data', data: { name: 'get_pods' } }] } },
    });
  });

  it('declines a number zod refuses: JSON.parse makes Infinity of 1e400, for a state or a role (1.0)', () => {
    const state = JSON.parse('{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":1e400}}}');
    expect(v10.readFastEvent(state)).toBeUndefined();
    expect(malformedMessage(() => v10.v1_0.decodeEvent(state))).toMatch(/at statusUpdate\.status\.state/);
    const role = JSON.parse(
      '{"statusUpdate":{"status":{"state":"TASK_STATE_WORKING","message":{"role":-1e400,"parts":[{"text":"hi"}]}}}}',
    );
    expect(v10.readFastEvent(role)).toBeUndefined();
    expect(malformedMessage(() => v10.v1_0.decodeEvent(role))).toMatch(
      /at statusUpdate\.status\.message\.role/,
    );
  });

  it('copies a metadata record with an own __proto__ key, dropping the key as zod does', () => {
    const input = JSON.parse(
      '{"statusUpdate":{"status":{"state":"TASK_STATE_WORKING"},"metadata":{"__proto__":{"polluted":true},"k":1}}}',
    );
    const fast = v10.readFastEvent(input);
    expect(fast).toStrictEqual(v10.readEventBySchema(input));
    const metadata = fast?.kind === 'status-update' ? fast.metadata : undefined;
    expect(metadata).toStrictEqual({ k: 1 });
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('gives a broken token the zod path’s typed error, naming the member (1.0)', () => {
    expect(
      malformedMessage(() =>
        v10.v1_0.decodeEvent(token10({ messageId: 'm', parts: [{ text: 'x' }], role: true })),
      ),
    ).toMatch(/at statusUpdate\.status\.message\.role/);
    expect(
      malformedMessage(() => v10.v1_0.decodeEvent({ statusUpdate: { status: { state: null } } })),
    ).toMatch(/at statusUpdate\.status\.state/);
    expect(
      malformedMessage(() =>
        v10.v1_0.decodeEvent(token10({ messageId: 'm', parts: [] }, { metadata: 'no' })),
      ),
    ).toMatch(/at statusUpdate\.metadata/);
  });

  it('gives a broken token the zod path’s typed error, naming the member (0.3)', () => {
    expect(
      malformedMessage(() => v03.v0_3.decodeEvent(token03({ kind: 'task', messageId: 'm', parts: [] }))),
    ).toMatch(/at status\.message\.kind/);
    expect(
      malformedMessage(() => v03.v0_3.decodeEvent(token03({ messageId: 'm', parts: [] }, { final: 'no' }))),
    ).toMatch(/at final/);
    expect(
      malformedMessage(() =>
        v03.v0_3.decodeEvent(token03({ messageId: 'm', parts: [], referenceTaskIds: [1] })),
      ),
    ).toMatch(/at status\.message\.referenceTaskIds\.0/);
  });
});
