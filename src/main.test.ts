import { describe, expect, it } from 'vitest';
import { run } from './main.js';

describe('agentkourier binary', () => {
  it('prints the version and help, and refuses an unknown command with exit 2', () => {
    const lines: string[] = [];
    expect(run(['version'], (l) => lines.push(l))).toBe(0);
    expect(lines[0]).toMatch(/^\d+\.\d+\.\d+/);
    expect(run(['help'], (l) => lines.push(l))).toBe(0);
    expect(lines[1]).toContain('Usage: agentkourier');
    expect(run(['nope'], (l) => lines.push(l))).toBe(2);
    expect(lines[2]).toContain('unknown command "nope"');
  });
});
