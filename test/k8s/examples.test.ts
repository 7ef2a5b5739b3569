import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { agentBackend } from '../../src/control/crds/agent-backend.js';
import { binding } from '../../src/control/crds/binding.js';
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

  it.each(EXAMPLE_FILES.map((f) => [f]))(
    "%s reaches its agent at a Service's address, never loopback (the controller's own pod in a cluster)",
    async (file) => {
      const backend = (await exampleDocuments(file)).find((d) => d.kind === 'AgentBackend');
      const url = new URL(String((backend?.spec as { url?: unknown } | undefined)?.url));
      expect(url.hostname).toMatch(/\.svc(\.cluster\.local)?$/);
    },
  );
});

/** The manifests docs/install.md and the chart's NOTES.txt tell people to paste (`<<'YAML'`). */
async function pastedManifests(path: string): Promise<ExampleDocument[]> {
  const text = await readFile(new URL(`../../${path}`, import.meta.url), 'utf8');
  const blocks = [...text.matchAll(/<<'YAML'\n([\s\S]*?)\n\s*YAML\n/g)].map((m) => {
    const body = m[1] ?? '';
    // NOTES.txt indents its manifest by three spaces; Helm templates in it are not in the block.
    const indent = /^( *)/.exec(body)?.[1]?.length ?? 0;
    return body
      .split('\n')
      .map((l) => l.slice(indent))
      .join('\n');
  });
  return blocks.flatMap((b) => parseAllDocuments(b).map((d) => d.toJS() as ExampleDocument));
}

describe('manifests in the install docs', () => {
  it.each([['docs/install.md'], ['charts/agentkourier/templates/NOTES.txt']])(
    'the AgentBackends and Bindings in %s parse with the CRD schemas',
    async (path) => {
      const docs = await pastedManifests(path);
      expect(docs.length).toBeGreaterThanOrEqual(2);
      for (const doc of docs) {
        const schema =
          doc.kind === 'AgentBackend' ? agentBackend : doc.kind === 'Binding' ? binding : undefined;
        expect(schema, doc.kind).toBeDefined();
        expect(schema?.safeParse(inNamespace(doc)).error?.issues ?? [], doc.metadata.name).toEqual([]);
      }
    },
  );
});

describe('examples/demo-agent.yaml (the README quick start applies it)', () => {
  it("holds the demo agent's Deployment and Service, an AgentBackend and a Binding that parse; the image is the chart's appVersion", async () => {
    const docs = await exampleDocuments('demo-agent.yaml');
    expect(docs.map((d) => d.kind)).toEqual(['Deployment', 'Service', 'AgentBackend', 'Binding']);
    expect(agentBackend.safeParse(inNamespace(docs[2])).error?.issues ?? []).toEqual([]);
    expect(binding.safeParse(inNamespace(docs[3])).error?.issues ?? []).toEqual([]);
    const chart = await readFile(new URL('../../charts/agentkourier/Chart.yaml', import.meta.url), 'utf8');
    const appVersion = /^appVersion: "?([^"\n]+)"?$/m.exec(chart)?.[1];
    const pod = z
      .object({
        spec: z.object({
          template: z.object({
            spec: z.object({
              containers: z.array(z.object({ image: z.string(), args: z.array(z.string()) })),
            }),
          }),
        }),
      })
      .parse(docs[0]);
    const [container] = pod.spec.template.spec.containers;
    expect(container?.image).toBe(`ghcr.io/agentkourier/agentkourier:${appVersion}`);
    expect(container?.args.slice(0, 1)).toEqual(['demo-agent']);
  });
});
