import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AssertionSigner } from './assertions.js';

/**
 * The broker's public keys, for agents that verify its assertions with a standard library:
 * GET /.well-known/openid-configuration (the issuer and jwks_uri) and GET
 * /.well-known/jwks.json. Public on purpose (keys only, never a private part), cacheable for a
 * few minutes: a key is published well before it signs (keys.ts), and an agent that meets an
 * unknown key id fetches the set again.
 */

export const DISCOVERY_PATH = '/.well-known/openid-configuration';
export const JWKS_PATH = '/.well-known/jwks.json';

export function wellKnownRoutes(
  signer: AssertionSigner,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const path = (req.url ?? '/').split('?')[0];
    let body: unknown;
    if (path === DISCOVERY_PATH) body = signer.discovery();
    else if (path === JWKS_PATH) body = signer.jwks();
    else return false;
    const text = `${JSON.stringify(body)}\n`;
    res.writeHead(200, {
      'content-type': path === JWKS_PATH ? 'application/jwk-set+json' : 'application/json',
      'cache-control': 'public, max-age=300',
      'content-length': Buffer.byteLength(text),
    });
    res.end(req.method === 'HEAD' ? undefined : text);
    return true;
  };
}
