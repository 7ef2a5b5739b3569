import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINDING, startWebChatHarness, type WebChatHarness } from './harness.js';

/**
 * Property tests of the web chat's JSON API: whatever a client sends, the answer is a 2xx with
 * what was asked, or a 4xx naming what is wrong, never a 5xx and never a hang; and what it takes
 * is what the engine stores, text unchanged.
 */

let h: WebChatHarness;
beforeAll(async () => {
  h = await startWebChatHarness({ bodyLimitBytes: 16 * 1024 });
});
afterAll(async () => h?.close());

const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record(
    {
      binding: fc.oneof(fc.constant(BINDING), fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 1 })),
      text: fc.oneof(fc.string({ maxLength: 200 }), fc.jsonValue({ maxDepth: 1 })),
      extra: fc.jsonValue({ maxDepth: 1 }),
    },
    { requiredKeys: [] },
  ),
);

describe('web chat API (property)', () => {
  it('answers any body to POST /api/threads with 201 or a 4xx that says why', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await h.api('POST', '/api/threads', b);
        if (res.status === 201) {
          const { message } = res.json as { message: { text: string } };
          expect(message.text).toBe((b as { text: string }).text);
        } else {
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
          expect((res.json as { error: { code: string; message: string } }).error.code).toMatch(/^[a-z_]+$/);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('answers any raw bytes to the API with a 4xx, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 300 }),
        fc.constantFrom('/api/threads', '/api/threads/nope/messages', '/api/threads/nope/answer'),
        async (raw, path) => {
          const res = await h.call('POST', path, {
            raw,
            headers: { 'content-type': 'application/json', origin: h.origin },
          });
          expect(res.status).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
  });
});
