/**
 * The Microsoft Teams app package (docs/teams.md): manifests/teams/manifest.json with the app's
 * id and the broker's host put in, and its two icons (a 192×192 colour one, a 32×32 white
 * outline on transparent, as Teams asks), zipped flat into one file to upload in Teams.
 *
 *   npm run teams:package -- --app-id <client id> --host <your host> [--out dist/teams-app.zip]
 *
 * The icons are drawn here and the zip written here (stored, no compression): both are small,
 * and the script needs nothing but Node.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { crc32, deflateSync } from 'node:zlib';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HOST = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/;

export class PackageArgsError extends Error {}

/** The manifest with the app id and host put in; refuses what Teams would refuse. */
export function manifestFor(appId: string, host: string): Record<string, unknown> {
  const id = appId.toLowerCase();
  if (!GUID.test(id))
    throw new PackageArgsError('--app-id must be the app registration’s client id (a GUID)');
  if (!HOST.test(host)) throw new PackageArgsError('--host must be a host name, such as kourier.example.com');
  const template = readFileSync(join(ROOT, 'manifests', 'teams', 'manifest.json'), 'utf8');
  return JSON.parse(template.replaceAll('{{APP_ID}}', id).replaceAll('{{HOST}}', host)) as Record<
    string,
    unknown
  >;
}

/** A PNG of `size`×`size`, each pixel's RGBA from `paint`. */
export function png(size: number, paint: (x: number, y: number) => [number, number, number, number]): Buffer {
  const rows = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) {
    rows[y * (size * 4 + 1)] = 0;
    for (let x = 0; x < size; x++) rows.set(paint(x, y), y * (size * 4 + 1) + 1 + x * 4);
  }
  const chunk = (type: string, data: Buffer): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A ring: the broker's mark. Inside the ring `on`, elsewhere `off`. */
function ring(size: number, on: [number, number, number, number], off: [number, number, number, number]) {
  const c = (size - 1) / 2;
  return png(size, (x, y) => {
    const r = Math.hypot(x - c, y - c) / (size / 2);
    return r > 0.45 && r < 0.75 ? on : off;
  });
}

/** A zip of the files, stored (no compression), as Teams' upload reads it. */
export function zip(files: ReadonlyArray<{ name: string; data: Buffer }>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const name = Buffer.from(f.name, 'utf8');
    const crc = crc32(f.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(f.data.length, 18);
    local.writeUInt32LE(f.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(f.data.length, 20);
    central.writeUInt32LE(f.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, f.data);
    centrals.push(central, name);
    offset += local.length + name.length + f.data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

export function teamsPackage(appId: string, host: string): Buffer {
  const manifest = manifestFor(appId, host);
  return zip([
    { name: 'manifest.json', data: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`) },
    { name: 'color.png', data: ring(192, [255, 255, 255, 255], [0x3b, 0x5b, 0xdb, 255]) },
    { name: 'outline.png', data: ring(32, [255, 255, 255, 255], [0, 0, 0, 0]) },
  ]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { 'app-id': { type: 'string' }, host: { type: 'string' }, out: { type: 'string' } },
  });
  try {
    const out = values.out ?? join(ROOT, 'dist', 'teams-app.zip');
    const data = teamsPackage(values['app-id'] ?? '', values.host ?? '');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, data);
    console.log(`wrote ${out} (${data.length} bytes): upload it in Teams (docs/teams.md)`);
  } catch (error) {
    if (!(error instanceof PackageArgsError)) throw error;
    console.error(error.message);
    process.exitCode = 2;
  }
}
