/**
 * Whether a link's label may be shown for its target. A label is text the agent chose, so
 * `[https://good.example](https://evil.example)` would show one address and open another. A
 * label that names an address (a URL, a host name, an IP address, an e-mail address) is shown
 * only when every host it names is the target's host or a parent of it; otherwise the link is
 * shown with its real target instead. Prose labels ("the docs") are shown as written.
 *
 * Host names are compared as the WHATWG URL parser normalises them (lower case, punycode), so a
 * label in look-alike Unicode letters does not match the ASCII host it imitates.
 */

/** Something in a label that reads as an address: a scheme, an IPv4 address or a dotted name. */
const SCHEME = /[a-z][a-z0-9+.-]*:\/\//i;
const HOSTISH =
  /(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}[\p{L}\p{M}-]*\p{L}|\b\d{1,3}(?:\.\d{1,3}){3}\b/gu;

/** The hosts a label names, normalised; empty when it names none. */
export function hostsNamedIn(label: string): string[] {
  const hosts: string[] = [];
  for (const match of label.matchAll(HOSTISH)) {
    const host = normalisedHost(match[0]);
    hosts.push(host ?? match[0].toLowerCase());
  }
  return hosts;
}

/** Whether a label reads as an address at all (so it must agree with the target). */
export function looksLikeAddress(label: string): boolean {
  return SCHEME.test(label) || hostsNamedIn(label).length > 0;
}

/** True when `label` may be shown as the text of a link to `target`. */
export function labelFitsTarget(label: string, target: string): boolean {
  if (!looksLikeAddress(label)) return true;
  const targetHost = hostOfTarget(target);
  if (targetHost === undefined) return false;
  const named = hostsNamedIn(label);
  // A scheme with no host we can read ("https://" alone, "ftp://x") names nothing we can check.
  if (named.length === 0) return false;
  return named.every((host) => targetHost === host || targetHost.endsWith(`.${host}`));
}

function hostOfTarget(target: string): string | undefined {
  if (/^mailto:/i.test(target)) {
    const at = target.lastIndexOf('@');
    return at < 0 ? undefined : normalisedHost(target.slice(at + 1).split(/[?#]/)[0] ?? '');
  }
  try {
    return stripWww(new URL(target).hostname);
  } catch {
    return undefined;
  }
}

function normalisedHost(name: string): string | undefined {
  try {
    return stripWww(new URL(`http://${name.replace(/\.$/, '')}/`).hostname);
  } catch {
    return undefined;
  }
}

function stripWww(host: string): string {
  return host.replace(/\.$/, '').replace(/^www\./, '');
}
