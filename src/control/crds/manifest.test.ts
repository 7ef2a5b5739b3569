import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { A2AClient } from '../../a2a/client.js';
import { InvalidConfigError } from '../../core/errors.js';
import { RESERVED_HEADER_NAMES } from './agent-backend.js';
import { parseDuration } from './duration.js';
import { CRD_DIRS } from './generate.js';
import { CRD_DEFINITIONS, crdFileName, crdManifest, crdYaml } from './manifest.js';
import { NotStructuralError, toStructuralSchema } from './openapi.js';

describe('CRDs generated from the zod schemas', () => {
  it.each(
    CRD_DEFINITIONS.flatMap((d) =>
      ['crds/', 'charts/agentkourier/crds/'].map((dir) => [dir, d.kind, d] as const),
    ),
  )('%s holds exactly the generated %s CRD', async (dir, _kind, def) => {
    const committed = await readFile(new URL(`../../../${dir}${crdFileName(def)}`, import.meta.url), 'utf8');
    // On failure: run `npx tsx src/control/crds/generate.ts` and commit crds/ and the chart's crds/.
    expect(committed).toBe(crdYaml(def));
  });

  it('writes the chart and crds/ from the one generator, and nothing else is in either', async () => {
    const wanted = CRD_DEFINITIONS.map(crdFileName).sort();
    for (const dir of CRD_DIRS) expect((await readdir(dir)).sort()).toEqual(wanted);
  });

  it('writes the status subresource, short names and Ready printer columns', () => {
    for (const def of CRD_DEFINITIONS) {
      const yaml = parse(crdYaml(def));
      const version = yaml.spec.versions[0];
      expect(version.subresources).toEqual({ status: {} });
      expect(yaml.spec.names.shortNames.length).toBeGreaterThan(0);
      expect(version.additionalPrinterColumns.map((c: { name: string }) => c.name)).toContain('Ready');
      expect(yaml.spec.scope).toBe('Namespaced');
    }
  });

  it('carries each CEL rule next to the field it checks', () => {
    const backend = crdManifest(CRD_DEFINITIONS[0]);
    const text = JSON.stringify(backend);
    expect(text).toContain('has(self.value) != has(self.valueFrom)');
    const binding = JSON.stringify(crdManifest(CRD_DEFINITIONS[1]));
    expect(binding).toContain(
      '(has(self.tokenSecretRef) ? 1 : 0) + (has(self.userId) ? 1 : 0) + (has(self.perPerson) ? 1 : 0) == 1',
    );
    expect(binding).toContain("duration(self) >= duration('1s')");
  });

  it('refuses a schema the API server would not take as structural', () => {
    expect(() => toStructuralSchema(z.object({ a: z.union([z.string(), z.number()]) }))).toThrow(
      NotStructuralError,
    );
    const lookAround = () => toStructuralSchema(z.object({ a: z.string().regex(/^(?!x)/) }));
    expect(lookAround).toThrow(expect.objectContaining({ code: 'not_structural', path: '.a' }));
    expect(lookAround).toThrow(/look-around/);
  });
});

describe('reserved header names', () => {
  it.each(RESERVED_HEADER_NAMES.map((n) => [n]))(
    'the A2A client refuses %s as a static header too',
    (name) => {
      expect(
        () =>
          new A2AClient({
            endpoint: 'http://agent.example/a2a',
            identity: { kind: 'user-id', userId: 'U1' },
            headers: { [name]: 'x' },
          }),
      ).toThrow(InvalidConfigError);
    },
  );
});

describe('parseDuration', () => {
  it.each([
    ['10m', 600_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['90s', 90_000],
    ['250ms', 250],
  ])('reads %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '10', 'ten minutes', '-5m', '1d', '5 m'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
