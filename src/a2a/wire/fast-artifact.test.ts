import { describe, expect, it } from 'vitest';
import { MalformedResponseError } from '../../core/agent/errors.js';
import * as v03 from './v0_3/codec.js';
import * as v10 from './v1_0/codec.js';

// Examples beside the property test: what the fast path takes, what it leaves to zod, and that
// a broken hot event still gets zod's typed error naming the bad member.

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
    expect(v10.readFastEvent({ statusUpdate: { status: { state: 'TASK_STATE_WORKING' } } })).toBeUndefined();
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
