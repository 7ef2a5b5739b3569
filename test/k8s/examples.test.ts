import { describe, expect, it } from 'vitest';
import { agentBackend } from '../../src/k8s/crds/agent-backend.js';
import { binding } from '../../src/k8s/crds/binding.js';
import { EXAMPLE_FILES, type ExampleDocument, exampleDocuments } from './examples.js';

/** examples/*.yaml parse with the CRD schemas; test/integration/k8s-controller.test.ts applies them. */

const inNamespace = (d: ExampleDocument | undefined) => ({
  ...d,
  metadata: { ...d?.metadata, namespace: 'team-a' },
});

describe('examples', () => {
  it.each(EXAMPLE_FILES.map((f) => [f]))(
    '%s holds a Secret, an AgentBackend and a Binding that parse',
    async (file) => {
      const docs = await exampleDocuments(file);
      expect(docs.map((d) => d.kind)).toEqual(['Secret', 'AgentBackend', 'Binding']);
      expect(agentBackend.safeParse(inNamespace(docs[1])).error?.issues ?? []).toEqual([]);
      expect(binding.safeParse(inNamespace(docs[2])).error?.issues ?? []).toEqual([]);
    },
  );
});
