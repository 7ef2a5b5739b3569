import { crc32, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { manifestFor, PackageArgsError, teamsPackage } from '../../scripts/teams-package.js';

/** The entries of a stored zip, read from its central directory, each checked against its CRC. */
function entries(zip: Buffer): Map<string, Buffer> {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const out = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    expect(zip.readUInt32LE(at)).toBe(0x02014b50);
    const crc = zip.readUInt32LE(at + 16);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    const start = local + 30 + zip.readUInt16LE(local + 26);
    const data = zip.subarray(start, start + size);
    expect(crc32(data)).toBe(crc);
    out.set(name, data);
    at += 46 + nameLength;
  }
  return out;
}

/** Width, height and colour type of a PNG, and its pixels' first row decoded. */
function pngInfo(data: Buffer): { width: number; height: number; colourType: number; firstRow: Buffer } {
  expect(data.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const width = data.readUInt32BE(16);
  const idat = data.indexOf('IDAT');
  const length = data.readUInt32BE(idat - 4);
  const raw = inflateSync(data.subarray(idat + 4, idat + 4 + length));
  return {
    width,
    height: data.readUInt32BE(20),
    colourType: data[25] ?? -1,
    firstRow: raw.subarray(0, width * 4 + 1),
  };
}

describe('the Teams app package (npm run teams:package)', () => {
  const APP = '11111111-2222-4333-8444-555555555555';

  it('holds the manifest with the app id as the bot and the host as its domain, and the two icons Teams asks for', () => {
    const files = entries(teamsPackage(APP.toUpperCase(), 'kourier.example.com'));
    expect([...files.keys()].sort()).toEqual(['color.png', 'manifest.json', 'outline.png']);
    const manifest = JSON.parse((files.get('manifest.json') as Buffer).toString('utf8'));
    expect(manifest.id).toBe(APP);
    expect(manifest.bots[0].botId).toBe(APP);
    expect(manifest.bots[0].scopes).toEqual(['personal', 'team', 'groupChat']);
    expect(manifest.validDomains).toEqual(['kourier.example.com']);
    expect(JSON.stringify(manifest)).not.toContain('{{');
    const color = pngInfo(files.get('color.png') as Buffer);
    expect([color.width, color.height, color.colourType]).toEqual([192, 192, 6]);
    const outline = pngInfo(files.get('outline.png') as Buffer);
    expect([outline.width, outline.height]).toEqual([32, 32]);
    // The outline is white on transparent: its corner pixel is fully transparent.
    expect(outline.firstRow[4]).toBe(0);
  });

  it('refuses an app id that is not a GUID and a host that is not a name', () => {
    expect(() => manifestFor('not-a-guid', 'kourier.example.com')).toThrow(PackageArgsError);
    expect(() => manifestFor(APP, 'https://kourier.example.com/')).toThrow(PackageArgsError);
  });
});
