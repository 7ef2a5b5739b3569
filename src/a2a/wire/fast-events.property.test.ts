import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AgentCallError, MalformedResponseError } from '../../core/agent/errors.js';
import type { StreamEvent } from '../../core/agent/model.js';
import type { WireCodec } from './codec.js';
import * as v03 from './v0_3/codec.js';
import * as v10 from './v1_0/codec.js';

/**
 * The hand-written fast path for artifact and status updates (fast-events.ts) against each
 * version's zod path, over generated events as the wire carries them (JSON, round-tripped) and over the same
 * events broken at random places. For every input: when the zod path refuses it, the fast path
 * declines it (so the error is the zod path's); when the fast path reads it, it builds exactly
 * the zod path's model. And valid text-only updates of both kinds do take the fast path.
 */

type Json = unknown;
const asWire = (v: Json): Json => JSON.parse(JSON.stringify(v)) as Json;
const json = fc.jsonValue({ maxDepth: 2 });
// Keys that trip hand-written readers: prototype names, numeric-looking keys, and the members of
// the schemas themselves (so a mutation adds a `raw` beside a `text`, a `task` beside an update).
const key = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '0', '10'),
  fc.constantFrom('text', 'kind', 'raw', 'url', 'data', 'mediaType', 'filename', 'metadata', 'file'),
  fc.constantFrom('artifact', 'parts', 'append', 'lastChunk', 'taskId', 'extensions', 'task', 'message'),
  fc.constantFrom('statusUpdate', 'artifactUpdate', 'artifactId', 'name', 'description', 'final'),
  fc.constantFrom('status', 'state', 'role', 'messageId', 'timestamp', 'referenceTaskIds', 'contextId'),
);
const metadata = fc.dictionary(key, json, { maxKeys: 4 });
const str = fc.string({ maxLength: 12 });

/** An artifact update's fields common to both versions, parts left to the version. */
function update(part: fc.Arbitrary<Json>): fc.Arbitrary<Record<string, Json>> {
  const artifact = fc.record(
    {
      artifactId: str,
      name: str,
      description: str,
      parts: fc.array(part, { maxLength: 3 }),
      metadata,
      extensions: fc.array(str, { maxLength: 2 }),
    },
    { requiredKeys: [] },
  );
  return fc.record(
    { taskId: str, contextId: str, artifact, append: fc.boolean(), lastChunk: fc.boolean(), metadata },
    { requiredKeys: ['artifact'] },
  );
}

const textPart10 = fc.record(
  { text: str, mediaType: fc.constantFrom('text/plain', 'text/markdown'), filename: str, metadata },
  { requiredKeys: ['text'] },
);
const textPart03 = fc.record(
  { kind: fc.constant('text'), text: str, metadata },
  { requiredKeys: ['kind', 'text'] },
);

const valid10 = update(textPart10).map((u) => asWire({ artifactUpdate: u }));
const valid03 = update(textPart03).map((u) => asWire({ kind: 'artifact-update', ...u }));

/**
 * A status update's fields common to both versions (a token of kagent's stream: a working
 * status whose message is text), states, roles and parts left to the version; 0.3's `kind`s
 * and `final` added by the caller.
 */
function statusUpdate(
  part: fc.Arbitrary<Json>,
  state: fc.Arbitrary<Json>,
  role: fc.Arbitrary<Json>,
  messageKind: fc.Arbitrary<Json>,
): fc.Arbitrary<Record<string, Json>> {
  const message = fc.record(
    {
      kind: messageKind,
      messageId: str,
      role,
      parts: fc.array(part, { maxLength: 3 }),
      contextId: str,
      taskId: str,
      referenceTaskIds: fc.array(str, { maxLength: 2 }),
      extensions: fc.array(str, { maxLength: 2 }),
      metadata,
    },
    { requiredKeys: [] },
  );
  const status = fc.record({ state, message, timestamp: str }, { requiredKeys: ['state'] });
  return fc.record({ taskId: str, contextId: str, status, metadata }, { requiredKeys: ['status'] });
}

/** Names every object inherits: a state or role must be looked up as the agent's own string. */
const inherited = fc.constantFrom('constructor', 'toString', '__proto__', 'hasOwnProperty');
const state10 = fc.oneof(
  fc.constantFrom('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_INPUT_REQUIRED', 'working', '2'),
  fc.integer({ min: -1, max: 9 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  inherited,
);
const state03 = fc.oneof(
  fc.constantFrom('working', 'completed', 'input-required', 'auth-required'),
  str,
  inherited,
);
const status10 = statusUpdate(
  textPart10,
  state10,
  fc.oneof(fc.constantFrom('ROLE_AGENT', 'ROLE_USER', 'ROLE_UNSPECIFIED', 1, 2, 1.5), inherited),
  fc.constant(undefined),
).map((u) => asWire({ statusUpdate: u }));
const status03 = fc
  .tuple(
    statusUpdate(
      textPart03,
      state03,
      fc.oneof(fc.constantFrom('agent', 'user'), inherited),
      fc.constant('message'),
    ),
    fc.option(fc.boolean(), { nil: undefined }),
  )
  .map(([u, final]) => asWire({ kind: 'status-update', ...u, final }));

interface Mutation {
  at: number;
  op: 'set' | 'delete' | 'add';
  name: string;
  value: Json;
}
const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('set' as const, 'delete' as const, 'add' as const),
  name: key,
  // Wrong types most of all, and now and then a member of another kind of part or event.
  value: fc.oneof(json, fc.constantFrom(null, [], {}, '', 0, true, { text: 1 }, { kind: 'file' })),
});

/** Every object and array inside `root`, the root included. */
function containers(
  root: Json,
  out: (Record<string, Json> | Json[])[] = [],
): (Record<string, Json> | Json[])[] {
  if (typeof root !== 'object' || root === null) return out;
  const c = root as Record<string, Json> | Json[];
  out.push(c);
  for (const v of Object.values(c)) containers(v, out);
  return out;
}

/** Breaks a copy of `event` in a few places: a member replaced, removed or added. */
function mutate(event: Json, mutations: Mutation[]): Json {
  const copy = asWire(event);
  for (const m of mutations) {
    const all = containers(copy);
    const found = all[m.at % all.length];
    if (Array.isArray(found)) {
      // An array's members are its indices (an index one past the end appends).
      const index = m.at % (found.length + 1);
      if (m.op === 'delete') found.splice(index, 1);
      else found[index] = asWire(m.value);
      continue;
    }
    const target = found as Record<string, Json>;
    const keys = Object.keys(target);
    const name = m.op === 'add' || keys.length === 0 ? m.name : (keys[m.at % keys.length] as string);
    if (m.op === 'delete') delete target[name];
    else
      Object.defineProperty(target, name, {
        value: asWire(m.value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  // Back through JSON, so the input is what JSON.parse makes (a __proto__ key an own member).
  return asWire(copy);
}

type Outcome = { ok: true; event: StreamEvent } | { ok: false; error: unknown };
function run(read: (r: unknown) => StreamEvent, input: unknown): Outcome {
  try {
    return { ok: true, event: read(input) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The one property: the fast path declines what zod refuses, and agrees on what it reads. */
function agree(
  fast: (r: unknown) => StreamEvent | undefined,
  schema: (r: unknown) => StreamEvent,
  codec: WireCodec,
  input: unknown,
): StreamEvent | undefined {
  const bySchema = run(schema, input);
  const byFast = fast(input);
  const byCodec = run((r) => codec.decodeEvent(r), input);
  if (!bySchema.ok) {
    expect(bySchema.error).toBeInstanceOf(MalformedResponseError);
    expect(byFast).toBeUndefined();
    // The codec's error is the schema's: same class, code and words.
    expect(byCodec.ok).toBe(false);
    if (!byCodec.ok) {
      expect(byCodec.error).toBeInstanceOf(MalformedResponseError);
      expect((byCodec.error as AgentCallError).code).toBe('malformed_response');
      expect((byCodec.error as Error).message).toBe((bySchema.error as Error).message);
    }
    return undefined;
  }
  if (byFast !== undefined) {
    expect(byFast).toStrictEqual(bySchema.event);
    // Same fields in the same order, so anything that serialises the model sees no difference.
    expect(JSON.stringify(byFast)).toBe(JSON.stringify(bySchema.event));
  }
  expect(byCodec).toStrictEqual(bySchema);
  return byFast;
}

/** Every member the schemas name, per version: each is set to any JSON value in turn. */
const artifactMembers = ['artifactId', 'name', 'description', 'parts', 'metadata', 'extensions'];
const updateMembers = ['taskId', 'contextId', 'append', 'lastChunk', 'metadata', 'artifact'];
const members10: (string | number)[][] = [
  ['task'],
  ['message'],
  ['statusUpdate'],
  ['artifactUpdate'],
  ...updateMembers.map((m) => ['artifactUpdate', m]),
  ...artifactMembers.map((m) => ['artifactUpdate', 'artifact', m]),
  ...['text', 'raw', 'url', 'data', 'mediaType', 'filename', 'metadata'].map((m) => [
    'artifactUpdate',
    'artifact',
    'parts',
    0,
    m,
  ]),
  ['artifactUpdate', 'artifact', 'extensions', 0],
];
const members03: (string | number)[][] = [
  ['kind'],
  ...updateMembers.map((m) => [m]),
  ...artifactMembers.map((m) => ['artifact', m]),
  ...['kind', 'text', 'metadata'].map((m) => ['artifact', 'parts', 0, m]),
  ['artifact', 'extensions', 0],
];
const messageMembers = [
  'kind',
  'messageId',
  'role',
  'parts',
  'contextId',
  'taskId',
  'referenceTaskIds',
  'extensions',
  'metadata',
];
const statusMembers = ['taskId', 'contextId', 'status', 'metadata', 'final'];
const statusMembers10: (string | number)[][] = [
  ['task'],
  ['message'],
  ['statusUpdate'],
  ['artifactUpdate'],
  ...statusMembers.map((m) => ['statusUpdate', m]),
  ...['state', 'message', 'timestamp'].map((m) => ['statusUpdate', 'status', m]),
  ...messageMembers.map((m) => ['statusUpdate', 'status', 'message', m]),
  ...['text', 'raw', 'url', 'data', 'mediaType', 'filename', 'metadata'].map((m) => [
    'statusUpdate',
    'status',
    'message',
    'parts',
    0,
    m,
  ]),
  ['statusUpdate', 'status', 'message', 'referenceTaskIds', 0],
  ['statusUpdate', 'status', 'message', 'extensions', 0],
];
const statusMembers03: (string | number)[][] = [
  ['kind'],
  ...statusMembers.map((m) => [m]),
  ...['state', 'message', 'timestamp'].map((m) => ['status', m]),
  ...messageMembers.map((m) => ['status', 'message', m]),
  ...['kind', 'text', 'data', 'file', 'metadata'].map((m) => ['status', 'message', 'parts', 0, m]),
  ['status', 'message', 'referenceTaskIds', 0],
  ['status', 'message', 'extensions', 0],
];

/** A copy of `event` with the member at `path` set to `value` (missing containers made). */
function setAt(event: Json, path: (string | number)[], value: Json): Json {
  const copy = asWire(event) as Record<string | number, Json>;
  let at = copy;
  for (const [i, step] of path.entries()) {
    if (i === path.length - 1) {
      Object.defineProperty(at, step, { value, enumerable: true, writable: true, configurable: true });
    } else {
      const next = at[step];
      if (typeof next !== 'object' || next === null) {
        at[step] = typeof path[i + 1] === 'number' ? [] : {};
      }
      at = at[step] as Record<string | number, Json>;
    }
  }
  return asWire(copy);
}

const at10 = { fast: v10.readFastEvent, schema: v10.readEventBySchema, codec: v10.v1_0 } as const;
const at03 = { fast: v03.readFastEvent, schema: v03.readEventBySchema, codec: v03.v0_3 } as const;
const versions = [
  { name: 'artifact-update at 1.0', valid: valid10, members: members10, ...at10 },
  { name: 'artifact-update at 0.3', valid: valid03, members: members03, ...at03 },
  { name: 'status-update at 1.0', valid: status10, members: statusMembers10, ...at10 },
  { name: 'status-update at 0.3', valid: status03, members: statusMembers03, ...at03 },
];

describe.each(versions)('the $name fast path (property)', (v) => {
  it('reads every valid text-only update, to the zod path’s model', () => {
    fc.assert(
      fc.property(v.valid, (input) => {
        const fast = agree(v.fast, v.schema, v.codec, input);
        expect(fast).toBeDefined();
      }),
      { numRuns: 1_000 },
    );
  });

  it('declines whatever the zod path refuses, and agrees on the rest, over broken updates', () => {
    fc.assert(
      fc.property(v.valid, fc.array(mutation, { minLength: 1, maxLength: 3 }), (input, mutations) => {
        agree(v.fast, v.schema, v.codec, mutate(input, mutations));
      }),
      { numRuns: 3_000 },
    );
  });

  it('declines whatever the zod path refuses, and agrees on the rest, with any member of any type', () => {
    fc.assert(
      fc.property(v.valid, fc.constantFrom(...v.members), json, (input, path, value) => {
        agree(v.fast, v.schema, v.codec, setAt(input, path, value));
      }),
      { numRuns: 3_000 },
    );
  });

  it('declines whatever the zod path refuses over any JSON value', () => {
    fc.assert(
      fc.property(json, (input) => {
        agree(v.fast, v.schema, v.codec, input);
      }),
      { numRuns: 1_000 },
    );
  });
});
