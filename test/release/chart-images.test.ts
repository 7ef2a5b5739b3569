import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { setChartImage } from '../../scripts/chart-images.js';

/** scripts/chart-images.ts: Artifact Hub's image list pointed at the published image, comments kept. */

const CHART_YAML = readFileSync(join(import.meta.dirname, '../../charts/agentkourier/Chart.yaml'), 'utf8');
const DIGEST = `sha256:${'0f'.repeat(32)}`;

describe('the chart image annotation', () => {
  it('names the image by version and digest, and keeps every other line of Chart.yaml', () => {
    const out = setChartImage(CHART_YAML, `ghcr.io/acme/agentkourier:1.2.3@${DIGEST}`);
    const chart = parse(out) as { annotations: Record<string, string> };
    expect(parse(chart.annotations['artifacthub.io/images'] ?? '')).toEqual([
      { name: 'agentkourier', image: `ghcr.io/acme/agentkourier:1.2.3@${DIGEST}` },
    ]);
    // The comments and the other annotations survive.
    expect(out).toContain('# The image the default values run');
    expect(chart.annotations['artifacthub.io/crds']).toBe(
      (parse(CHART_YAML) as typeof chart).annotations['artifacthub.io/crds'],
    );
  });

  it('refuses a reference that is not repository:tag[@digest], and a chart without the annotation', () => {
    for (const bad of [
      'ghcr.io/acme/agentkourier',
      'ghcr.io/Acme/agentkourier:1',
      `x:1@sha256:${'z'.repeat(64)}`,
    ])
      expect(() => setChartImage(CHART_YAML, bad), bad).toThrow(/is not <repository>:<tag>/);
    expect(() => setChartImage('name: x\nannotations: {}\n', 'a/b:1')).toThrow(/no artifacthub.io\/images/);
  });
});
