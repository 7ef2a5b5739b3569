/**
 * Plain-text renderings of what an agent asked, for prompts a person decides on (Q-5: "exactly
 * which tool will run with which arguments"). Everything here is untrusted agent data: the
 * output is plain text, never markup, so a surface must put it in a plain-text element (or
 * escape it for its own markup); characters that would disguise text are made visible here.
 */

import { cutWithMark, visibleText } from '../../core/text.js';

const ELLIPSIS = '…';

export { visibleText };

/** Cuts text to at most `max` characters (UTF-16 units) without splitting a surrogate pair. */
export function cut(text: string, max: number): string {
  return cutWithMark(text, max, ELLIPSIS);
}

/** Pretty JSON (2-space indent) that never throws on odd values. */
export function prettyJson(value: unknown): string {
  try {
    return (
      JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) ?? 'null'
    );
  } catch {
    return '[arguments that cannot be shown]';
  }
}

/** A tool call's arguments, pretty-printed and cut to `maxChars`; '{}' for none. */
export function describeArgs(args: Record<string, unknown>, maxChars: number): string {
  return cut(visibleText(prettyJson(args)), maxChars);
}

/**
 * One tool call as plain text: the tool's name on the first line, its arguments pretty-printed
 * below, the whole cut to `maxChars`. The name is kept whole when it fits, so a long argument
 * list never hides which tool would run.
 */
export function describeToolCall(
  tool: { name: string; args: Record<string, unknown> },
  maxChars: number,
): string {
  const name = cut(visibleText(tool.name), Math.max(1, Math.min(maxChars, 200)));
  const room = maxChars - name.length - 1;
  if (room <= 0) return cut(name, maxChars);
  return `${name}\n${describeArgs(tool.args, room)}`;
}
