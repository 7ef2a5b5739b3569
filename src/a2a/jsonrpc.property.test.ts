import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentCallError, MalformedResponseError } from '../core/agent/errors.js';
import { decodeResponse, encodeRequest, errorFromRpc } from './jsonrpc.js';

/**
 * Property tests of the JSON-RPC envelope: whatever an agent sends, reading it either gives a
 * result or an error body for our id, or throws MalformedResponseError — never anything else
 * (a TypeError would be a crash of the turn, not a contract outcome).
 */

const id = fc.oneof(fc.uuid(), fc.string({ minLength: 1, maxLength: 20 }));
// As the wire carries them: jsonValue may produce -0, which JSON writes as 0.
const json = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);

describe('JSON-RPC envelope (property)', () => {
  it('reads any text as a result, an error body or a MalformedResponseError, nothing else', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          json.map((v) => JSON.stringify(v)),
        ),
        id,
        (text, ours) => {
          try {
            const outcome = decodeResponse(text, ours);
            if (!outcome.ok) expect(Number.isInteger(outcome.error.code)).toBe(true);
          } catch (error) {
            expect(error).toBeInstanceOf(MalformedResponseError);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('round-trips a result envelope for its own id, and refuses it for another', () => {
    fc.assert(
      fc.property(id, id, json, (ours, other, result) => {
        const body = JSON.stringify({ jsonrpc: '2.0', id: ours, result });
        expect(decodeResponse(body, ours)).toEqual({ ok: true, result });
        if (other !== ours) expect(() => decodeResponse(body, other)).toThrow(MalformedResponseError);
      }),
    );
  });

  it('reads an error with an integer code (our id or null) and maps it to a typed error for every call kind', () => {
    fc.assert(
      fc.property(
        fc.oneof(id, fc.constant(null)),
        fc.integer({ min: -40_000, max: 40_000 }),
        fc.string(),
        fc.constantFrom('send', 'answer', 'other'),
        (envelopeId, code, message, kind) => {
          const body = JSON.stringify({ jsonrpc: '2.0', id: envelopeId, error: { code, message } });
          const outcome = decodeResponse(body, typeof envelopeId === 'string' ? envelopeId : 'ours');
          expect(outcome).toMatchObject({ ok: false, error: { code, message } });
          if (!outcome.ok) {
            const error = errorFromRpc(outcome.error, kind);
            expect(error).toBeInstanceOf(AgentCallError);
            // E-9: the agent's words stay out of our message.
            if (message.length > 3) expect(error.message).not.toContain(message);
          }
        },
      ),
    );
  });

  it('writes requests the reader of a server would accept as JSON-RPC 2.0', () => {
    fc.assert(
      fc.property(id, fc.string({ minLength: 1 }), json, (ours, method, params) => {
        const parsed = JSON.parse(encodeRequest(ours, method, params)) as Record<string, unknown>;
        expect(parsed).toEqual({ jsonrpc: '2.0', id: ours, method, params });
      }),
    );
  });
});
