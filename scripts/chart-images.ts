import { readFileSync, writeFileSync } from 'node:fs';
import { isMap, parse, parseDocument, stringify } from 'yaml';

/**
 * Points a Chart.yaml's Artifact Hub image list (`artifacthub.io/images`) at the image a release
 * publishes, by version and, when known, by digest: what Artifact Hub shows and scans is then
 * the image the chart runs. scripts/package-chart.sh runs it on the copy it packages.
 *
 *   node scripts/chart-images.ts <Chart.yaml> <repository>:<version>[@sha256:<hex>]
 *
 * The annotation must exist and list the chart's one image; anything else fails, naming it.
 */
export function setChartImage(text: string, image: string): string {
  if (!/^[a-z0-9][a-z0-9._\-/:]*:[0-9A-Za-z._-]+(@sha256:[0-9a-f]{64})?$/.test(image))
    throw new Error(`"${image}" is not <repository>:<tag>[@sha256:<64 hex>]`);
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`Chart.yaml is not valid YAML: ${doc.errors[0]?.message}`);
  const annotations = doc.get('annotations', true);
  if (!isMap(annotations)) throw new Error('Chart.yaml has no annotations');
  const listed = annotations.get('artifacthub.io/images');
  if (typeof listed !== 'string') throw new Error('Chart.yaml has no artifacthub.io/images annotation');
  const images = parse(listed) as unknown;
  if (!Array.isArray(images) || images.length !== 1 || typeof images[0]?.name !== 'string')
    throw new Error('artifacthub.io/images must list exactly one image with a name');
  annotations.set('artifacthub.io/images', stringify([{ name: images[0].name, image }]));
  return doc.toString();
}

if (import.meta.main) {
  const [file, image] = process.argv.slice(2);
  if (file === undefined || image === undefined) {
    process.stderr.write(
      'usage: node scripts/chart-images.ts <Chart.yaml> <repository>:<version>[@sha256:<hex>]\n',
    );
    process.exit(2);
  }
  try {
    writeFileSync(file, setChartImage(readFileSync(file, 'utf8'), image));
  } catch (error) {
    process.stderr.write(`chart-images: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
