import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { v0_3 } from '../../src/a2a/wire/v0_3/codec.js';
import { v1_0 } from '../../src/a2a/wire/v1_0/codec.js';
import { MalformedResponseError } from '../../src/core/agent/errors.js';
import {
  type AgentEvent,
  encodeStreamResult,
  type StoredPart,
  type TaskState,
} from '../peers/contract-agent/wire.js';

// The test agent's encoders (test/peers/contract-agent/wire.ts) were written apart from our codecs; the same
// event encoded at 1.0 and at 0.3 must decode to one internal event (ids, states, parts, flags).

const states: TaskState[] = [
  'submitted',
  'working',
  'input-required',
  'auth-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
];
const json = fc.jsonValue({ maxDepth: 2 });
const part: fc.Arbitrary<StoredPart> = fc.oneof(
  fc.record({ text: fc.string() }),
  fc.record({ data: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), json, { maxKeys: 3 }) }),
);
const id = fc.string({ minLength: 1, maxLength: 12 });
const message = fc.record({
  messageId: id,
  role: fc.constantFrom('user' as const, 'agent' as const),
  parts: fc.array(part, { maxLength: 3 }),
});

const event: fc.Arbitrary<AgentEvent> = fc.oneof(
  fc.record({
    kind: fc.constant('status' as const),
    taskId: id,
    contextId: id,
    status: fc.record(
      { state: fc.constantFrom(...states), message: fc.option(message, { nil: undefined }) },
      { requiredKeys: ['state'] },
    ),
  }),
  fc.record({
    kind: fc.constant('artifact' as const),
    taskId: id,
    contextId: id,
    artifact: fc.record({ artifactId: id, parts: fc.array(part, { minLength: 1, maxLength: 3 }) }),
    append: fc.boolean(),
    lastChunk: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('message' as const), message }),
);

describe('wire codecs', () => {
  it('decode the same event at 1.0 and 0.3 to the same internal event (property)', () => {
    fc.assert(
      fc.property(event, (ev) => {
        const from10 = v1_0.decodeEvent(encodeStreamResult('1.0', ev));
        const from03 = v0_3.decodeEvent(encodeStreamResult('0.3', ev));
        // 0.3 alone carries `final`; everything else must agree.
        if (from03.kind === 'status-update') delete from03.final;
        expect(from10).toEqual(from03);
        if (ev.kind === 'artifact' && from10.kind === 'artifact-update') {
          expect(from10.append).toBe(ev.append);
          expect(from10.artifact.parts.map((p) => p.kind)).toEqual(
            ev.artifact.parts.map((p) => ('text' in p ? 'text' : 'data')),
          );
        }
        if (ev.kind === 'status' && from10.kind === 'status-update')
          expect(from10.status.state).toBe(ev.status.state);
      }),
      { numRuns: 500 },
    );
  });

  it('read 1.0 enum numbers and unknown states leniently, and refuse two oneof members', () => {
    const status = (state: unknown) => ({ statusUpdate: { taskId: 't', contextId: 'c', status: { state } } });
    expect(v1_0.decodeEvent(status(6))).toMatchObject({ status: { state: 'input-required' } });
    expect(v1_0.decodeEvent(status('TASK_STATE_FROM_THE_FUTURE'))).toMatchObject({
      status: { state: 'unknown' },
    });
    expect(() =>
      v1_0.decodeEvent({ ...status('TASK_STATE_WORKING'), task: { id: 't', status: { state: 1 } } }),
    ).toThrow(MalformedResponseError);
    expect(() => v1_0.decodeEvent({})).toThrow(MalformedResponseError);
    expect(() => v0_3.decodeEvent({ kind: 'mystery' })).toThrow(MalformedResponseError);
  });

  it('tolerate unknown fields from newer agents', () => {
    const ev = v1_0.decodeEvent({
      artifactUpdate: {
        taskId: 't',
        contextId: 'c',
        artifact: { artifactId: 'a', parts: [{ text: 'x', shiny: 1 }], novel: true },
        extra: {},
      },
    });
    expect(ev).toMatchObject({ kind: 'artifact-update', artifact: { parts: [{ kind: 'text', text: 'x' }] } });
  });

  it('read file parts of both versions into one shape', () => {
    const ten = v1_0.decodeEvent({
      message: {
        messageId: 'm',
        role: 'ROLE_AGENT',
        parts: [{ url: 'https://x/f.png', mediaType: 'image/png', filename: 'f.png' }],
      },
    });
    const three = v0_3.decodeEvent({
      kind: 'message',
      messageId: 'm',
      role: 'agent',
      parts: [{ kind: 'file', file: { uri: 'https://x/f.png', mimeType: 'image/png', name: 'f.png' } }],
    });
    expect(ten).toEqual(three);
    expect(ten).toMatchObject({
      message: { parts: [{ kind: 'file', uri: 'https://x/f.png', mediaType: 'image/png', name: 'f.png' }] },
    });
  });
});
