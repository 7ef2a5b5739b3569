import { describe, expect, it } from 'vitest';
import { readableJson, showNewlines } from '../../../src/surfaces/webchat/page/readable.js';

describe("a tool step's arguments, readable (readable.ts)", () => {
  it('shows compact JSON pretty, with a newline in a string as a new line', () => {
    expect(readableJson('{"query":"[Web chat: Local user (webchat-local)]\\nhello"}')).toBe(
      '{\n  "query": "[Web chat: Local user (webchat-local)]\nhello"\n}',
    );
    expect(readableJson('{"a":[1,{"b":null}]}')).toBe(
      '{\n  "a": [\n    1,\n    {\n      "b": null\n    }\n  ]\n}',
    );
  });

  it('leaves an escaped backslash before an n alone (a backslash and the letter)', () => {
    // The JSON text "C:\\new": a backslash, then "new".
    expect(showNewlines('"C:\\\\new"')).toBe('"C:\\\\new"');
    // An escaped backslash, then a newline.
    expect(showNewlines('"a\\\\\\nb"')).toBe('"a\\\\\nb"');
    expect(showNewlines('"a\\r\\nb\\n\\nc"')).toBe('"a\nb\n\nc"');
  });

  it('keeps a summary that was cut (no longer JSON) as it came, newlines shown', () => {
    expect(readableJson('{"query":"line one\\nline tw…')).toBe('{"query":"line one\nline tw…');
  });
});
