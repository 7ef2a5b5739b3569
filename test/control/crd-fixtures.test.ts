import { describe, expect, it } from 'vitest';
import { agentBackendSpec } from '../../src/control/crds/agent-backend.js';
import { bindingSpec } from '../../src/control/crds/binding.js';
import { INVALID, VALID } from './crd-fixtures.js';

/** The zod half of the CRD agreement; test/integration/k8s-crds.test.ts runs the API server half. */

const schemaOf = (kind: 'AgentBackend' | 'Binding') =>
  kind === 'AgentBackend' ? agentBackendSpec : bindingSpec;

describe('CRD fixtures through zod', () => {
  it.each(VALID.map((f) => [f.title, f] as const))('accepts %s', (_title, fixture) => {
    const parsed = schemaOf(fixture.kind).safeParse(fixture.spec);
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it.each(INVALID.map((f) => [f.title, f] as const))('refuses %s', (_title, fixture) => {
    const parsed = schemaOf(fixture.kind).safeParse(fixture.spec);
    expect(parsed.success).toBe(false);
    const text = (parsed.error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
    expect(text).toContain(fixture.refusedWith ?? '');
  });
});
