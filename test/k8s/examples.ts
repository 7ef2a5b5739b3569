import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';

/** examples/*.yaml as documents, for the unit test and the cluster test that applies them. */

export const EXAMPLE_FILES = ['a2a.yaml', 'a2a-polling.yaml', 'kagent.yaml'] as const;

export const exampleDocument = z
  .object({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: z.object({ name: z.string() }).loose(),
    spec: z.unknown().optional(),
    stringData: z.record(z.string(), z.string()).optional(),
  })
  .loose();

export type ExampleDocument = z.output<typeof exampleDocument>;

export async function exampleDocuments(file: string): Promise<ExampleDocument[]> {
  const text = await readFile(new URL(`../../examples/${file}`, import.meta.url), 'utf8');
  return parseAllDocuments(text).map((d) => exampleDocument.parse(d.toJS()));
}
