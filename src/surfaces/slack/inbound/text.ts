/**
 * A person's Slack message as plain text for the agent: the mention of the app is dropped (it
 * addressed the broker, not the agent), Slack's `<…>` tokens become what the reader saw
 * (`@name`, `#channel`, a link's label and URL) and its three escapes are undone.
 */
export function slackToPlain(text: string, botUserId: string): string {
  const plain = text
    .replace(/<([^<>\n]*)>/g, (_m, inner: string) => token(inner, botUserId))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
  return plain.replace(/[ \t]{2,}/g, ' ').trim();
}

/** Whether a message's text mentions the app. */
export function mentions(text: string, botUserId: string): boolean {
  return text.includes(`<@${botUserId}>`) || text.includes(`<@${botUserId}|`);
}

function token(inner: string, botUserId: string): string {
  const [target = '', label] = splitLabel(inner);
  if (target.startsWith('@')) {
    const id = target.slice(1);
    if (id === botUserId) return '';
    return label === undefined ? `@${id}` : `@${label.replace(/^@/, '')}`;
  }
  if (target.startsWith('#')) return label === undefined ? target : `#${label}`;
  if (target.startsWith('!')) {
    const special = target.slice(1);
    if (label !== undefined) return label;
    if (special === 'here' || special === 'channel' || special === 'everyone') return `@${special}`;
    return `@${special.split('^')[0] ?? special}`;
  }
  const address = target.replace(/^mailto:/, '');
  if (label === undefined || label === target || label === address) return address;
  return `${label} (${address})`;
}

function splitLabel(inner: string): [string, string | undefined] {
  const bar = inner.indexOf('|');
  return bar === -1 ? [inner, undefined] : [inner.slice(0, bar), inner.slice(bar + 1)];
}
