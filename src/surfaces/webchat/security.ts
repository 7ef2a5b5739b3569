import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { WebChatRequestError } from './errors.js';

/**
 * Who may use the web chat. It listens on loopback by default, where any local program (and any
 * web page the person opens) can reach it, so three checks stand in front of the API:
 *
 * - Host: on loopback, the Host header must name a loopback address. A page on another site
 *   that rebinds its DNS name to 127.0.0.1 sends its own name, and is refused. Only the name is
 *   checked, not the port: a browser always sends the port it connected to, which differs from
 *   the server's when a tunnel stands between them (kubectl port-forward 9000:8082), and the
 *   port tells nothing about the site that made the page.
 * - Token: when one is configured, every API call carries `Authorization: Bearer <token>`.
 * - Origin: a state-changing request from a browser must come from this origin (CSRF).
 */

export interface AccessPolicy {
  /** Host names accepted in the Host header (its port aside); null: any (a token guards a non-loopback listener). */
  allowedHosts: ReadonlySet<string> | null;
  /** sha256 of the configured token, so comparisons take the same time whatever the input. */
  tokenDigest: Buffer | null;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}

export function accessPolicy(host: string, token: string | undefined): AccessPolicy {
  const tokenDigest = token === undefined ? null : digest(token);
  if (!isLoopback(host)) return { allowedHosts: null, tokenDigest };
  return {
    allowedHosts: new Set(['127.0.0.1', 'localhost', '[::1]', host.includes(':') ? `[${host}]` : host]),
    tokenDigest,
  };
}

/** The name part of a Host header: `[::1]:8080` → `[::1]`, `localhost:8080` → `localhost`. */
function hostName(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  return header.split(':')[0] ?? '';
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export function checkHost(req: IncomingMessage, policy: AccessPolicy): void {
  if (policy.allowedHosts === null) return;
  const host = hostName((req.headers.host ?? '').toLowerCase());
  if (!policy.allowedHosts.has(host)) {
    throw new WebChatRequestError(
      403,
      'host_not_allowed',
      'this server answers only to its loopback address',
    );
  }
}

export function checkToken(req: IncomingMessage, policy: AccessPolicy): void {
  if (policy.tokenDigest === null) return;
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match?.[1] === undefined) {
    throw new WebChatRequestError(401, 'unauthorized', 'this web chat needs Authorization: Bearer <token>');
  }
  if (!timingSafeEqual(digest(match[1]), policy.tokenDigest)) {
    throw new WebChatRequestError(401, 'unauthorized', 'the bearer token is not the one configured');
  }
}

/**
 * Browsers send Origin on every cross-origin POST (and on same-origin fetch POSTs); scripts such
 * as curl send none and are not a CSRF vector. `Sec-Fetch-Site` backs it up where present.
 */
export function checkOrigin(req: IncomingMessage): void {
  const origin = req.headers.origin;
  if (origin !== undefined) {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).host.toLowerCase();
    } catch {
      originHost = undefined;
    }
    if (originHost === undefined || originHost !== (req.headers.host ?? '').toLowerCase()) {
      throw new WebChatRequestError(403, 'cross_origin', 'requests from another origin are refused');
    }
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw new WebChatRequestError(403, 'cross_origin', 'requests from another site are refused');
  }
}
