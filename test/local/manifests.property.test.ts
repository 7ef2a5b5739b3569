import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { LocalManifestError } from '../../src/local/errors.js';
import { parseManifests } from '../../src/local/manifests.js';

/**
 * Property tests of local mode's YAML manifests: any text is either a set of valid objects or
 * one LocalManifestError that lists problems by document, never a crash; and a valid Binding
 * written back as YAML reads the same.
 */

const OPTIONS = { demoAgentUrl: undefined };

const backend = (name: string, url: string) => ({
  apiVersion: 'agentkourier.dev/v1alpha1',
  kind: 'AgentBackend',
  metadata: { name },
  spec: { dialect: 'a2a', url },
});

const name = fc.stringMatching(/^[a-z]([a-z0-9-]{0,20}[a-z0-9])?$/);
const channel = fc.stringMatching(/^C[A-Z0-9]{4,10}$/);

describe('local manifests (property)', () => {
  it('reads any text as valid objects or one LocalManifestError, never anything else', () => {
    const docs = fc.array(
      fc.oneof(
        fc.jsonValue({ maxDepth: 4 }).map((v) => stringify(v)),
        fc.string(),
        fc
          .record(
            {
              apiVersion: fc.constantFrom('agentkourier.dev/v1alpha1', 'v1', 'x'),
              kind: fc.constantFrom('AgentBackend', 'Binding', 'Secret', 'Other'),
              metadata: fc.record(
                { name: fc.oneof(name, fc.string()), namespace: fc.oneof(name, fc.string()) },
                { requiredKeys: [] },
              ),
              spec: fc.jsonValue({ maxDepth: 3 }),
            },
            { requiredKeys: [] },
          )
          .map((o) => stringify(o)),
      ),
      { maxLength: 4 },
    );
    fc.assert(
      fc.property(docs, (parts) => {
        const text = parts.join('\n---\n');
        try {
          const m = parseManifests(text, 'x.yaml', OPTIONS);
          for (const b of m.bindings) expect(typeof b.metadata.name).toBe('string');
        } catch (error) {
          expect(error).toBeInstanceOf(LocalManifestError);
          expect((error as LocalManifestError).message).toMatch(/x\.yaml/);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reads a valid Binding back the same after writing it as YAML', () => {
    fc.assert(
      fc.property(name, name, fc.array(channel, { maxLength: 3 }), fc.boolean(), (b, n, channels, dms) => {
        const binding = {
          apiVersion: 'agentkourier.dev/v1alpha1',
          kind: 'Binding',
          metadata: { name: b, namespace: n },
          spec: {
            backendRef: { name: 'agents' },
            identity: { userId: 'U1' },
            slack: { channels: [...new Set(channels)], allowDirectMessages: dms },
          },
        };
        const text = [
          stringify({
            ...backend('agents', 'http://127.0.0.1:9/a2a'),
            metadata: { name: 'agents', namespace: n },
          }),
          stringify(binding),
        ].join('---\n');
        const m = parseManifests(text, 'x.yaml', OPTIONS);
        expect(m.bindings).toHaveLength(1);
        expect(m.bindings[0]?.metadata).toMatchObject({ name: b, namespace: n });
        expect(m.bindings[0]?.spec.slack).toEqual(binding.spec.slack);
      }),
      { numRuns: 200 },
    );
  });
});
