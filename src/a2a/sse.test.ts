import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SizeLimitError } from '../core/agent/errors.js';
import { formatSseEvent, type SseEvent, SseParser } from './sse.js';

function parseAll(chunks: Array<string | Uint8Array>, max = 1 << 20): SseEvent[] {
  const parser = new SseParser(max);
  const events: SseEvent[] = [];
  for (const chunk of chunks) events.push(...parser.push(chunk));
  events.push(...parser.end());
  return events;
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const p of points) {
    out.push(bytes.subarray(from, p));
    from = p;
  }
  out.push(bytes.subarray(from));
  return out;
}

describe('SseParser', () => {
  it('reads single-line events, as the SDKs write them', () => {
    const events = parseAll(['data: {"a":1}\n\ndata: {"b":2}\n\n']);
    expect(events.map((e) => e.data)).toEqual(['{"a":1}', '{"b":2}']);
    expect(events[0]?.type).toBe('message');
  });

  it('joins multi-line data with LF, accepts CRLF and lone CR, ignores comments and keep-alives', () => {
    const text = ': ping\r\n\r\nevent: error\r\ndata: {"x":\r\ndata: 1}\r\n\r\n:keep-alive\rdata:{"y":2}\r\r';
    const events = parseAll([text]);
    expect(events).toEqual([
      { type: 'error', data: '{"x":\n1}' },
      { type: 'message', data: '{"y":2}' },
    ]);
  });

  it('keeps a CR at a chunk end and an LF at the next chunk start as one line break', () => {
    const events = parseAll(['data: a\r', '\ndata: b\r', '\n\r', '\n']);
    expect(events).toEqual([{ type: 'message', data: 'a\nb' }]);
  });

  it('decodes UTF-8 split inside a multi-byte sequence, and strips a leading BOM', () => {
    const bytes = new TextEncoder().encode('\uFEFFdata: héllo ✓\n\n');
    const events = parseAll(splitAt(bytes, [1, 2, 3, 10, 11, 15, 16, 17]));
    expect(events).toEqual([{ type: 'message', data: 'héllo ✓' }]);
  });

  it('drops an event that never got its blank line (stream cut)', () => {
    expect(parseAll(['data: complete\n\ndata: partial\n'])).toEqual([{ type: 'message', data: 'complete' }]);
  });

  it('yields the same events for the same bytes however they are split (property)', () => {
    const eventArb = fc.record({
      data: fc.string({ maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, ' ')),
      lines: fc.integer({ min: 1, max: 3 }),
      type: fc.option(fc.constantFrom('error', 'update'), { nil: undefined }),
      comment: fc.boolean(),
      crlf: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(eventArb, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (specs, cuts) => {
          let wire = '';
          const expected: SseEvent[] = [];
          for (const spec of specs) {
            const data = Array.from({ length: spec.lines }, (_, i) => `${spec.data}${i}`).join('\n');
            let frame = (spec.comment ? ': keep-alive\n' : '') + formatSseEvent(data, spec.type);
            if (spec.crlf) frame = frame.replace(/\n/g, '\r\n');
            wire += frame;
            expected.push({ type: spec.type ?? 'message', data });
          }
          const bytes = new TextEncoder().encode(wire);
          expect(parseAll(splitAt(bytes, cuts))).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('throws SizeLimitError when one event grows past the bound, across chunks', () => {
    const parser = new SseParser(100);
    expect.assertions(2);
    try {
      for (let i = 0; i < 10; i++) parser.push(`data: ${'x'.repeat(30)}\n`);
    } catch (error) {
      expect(error).toBeInstanceOf(SizeLimitError);
      expect((error as SizeLimitError).limit).toBe('event');
    }
  });

  it('throws SizeLimitError for a single line with no end that passes the bound', () => {
    const parser = new SseParser(64);
    parser.push(`data: ${'y'.repeat(40)}`);
    expect(() => parser.push('y'.repeat(40))).toThrow(SizeLimitError);
  });

  it('does not count bytes of events already dispatched against the bound', () => {
    const parser = new SseParser(64);
    const events: SseEvent[] = [];
    for (let i = 0; i < 100; i++) events.push(...parser.push(`data: ${'z'.repeat(40)}\n\n`));
    expect(events).toHaveLength(100);
  });

  it('keeps nothing of a chunk but the unfinished line and the last event id', () => {
    // V8's slices are views into the whole string: an unfinished line kept as a slice kept its
    // whole chunk's text alive until the next chunk. 200 parsers each hold the last line of a
    // 64 KB chunk: as slices, 12.8 MB; as copies of their own, a few dozen KB.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const chunk = (i: number): string =>
      `${formatSseEvent('x'.repeat(65_000)).replace('data:', `id: ${i}-abcdefghijklmnop\ndata:`)}data: {"unfinished line ${i}`;
    gc();
    const before = process.memoryUsage().heapUsed;
    const parsers = Array.from({ length: 200 }, (_, i) => {
      const parser = new SseParser(1 << 20);
      expect(parser.push(chunk(i))).toHaveLength(1);
      return parser;
    });
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(held).toBeLessThan(2_000_000);
    // And the line still ends where the next chunk says.
    const [first] = parsers;
    expect(first?.push('"}\n\n')).toStrictEqual([
      { type: 'message', data: '{"unfinished line 0"}', id: '0-abcdefghijklmnop' },
    ]);
  });
});
