/**
 * Tool arguments and results as a person reads them. The broker gives a step's summary as
 * compact JSON (cut at 200 characters); here it becomes pretty JSON, and a newline inside a
 * string is shown as a new line rather than as `\n`. A cut summary is no longer JSON: it keeps
 * its shape, with its newlines shown the same way. No DOM here, so it is checked outside a browser.
 */

export function readableJson(text: string): string {
  let pretty = text;
  try {
    pretty = JSON.stringify(JSON.parse(text), null, 2) ?? text;
  } catch {
    // Cut or not JSON at all: shown as it came.
  }
  return showNewlines(pretty);
}

/**
 * `\n` escapes (and `\r\n`) as real line breaks. An escaped backslash before an `n` (`\\n`,
 * a backslash and the letter) is left alone: backslashes are counted in pairs.
 */
export function showNewlines(json: string): string {
  return json.replace(/(?<!\\)((?:\\\\)*)\\r\\n|(?<!\\)((?:\\\\)*)\\n/g, (_m, a?: string, b?: string) => {
    return `${a ?? b ?? ''}\n`;
  });
}
