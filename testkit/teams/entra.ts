/**
 * A stand-in for Microsoft Entra ID on loopback, the authority both sides of a Teams bot trust:
 * - its signing keys at `/<tenant>/discovery/v2.0/keys` (where the Agents SDK reads them for an
 *   issuer that is not Bot Framework's own, as for a sovereign cloud) and its OpenID metadata;
 * - its token endpoint `/<tenant>/oauth2/v2.0/token`, client credentials only, for registered
 *   apps and the scopes they may ask (the Bot Connector's, Graph's);
 * - tokens minted for the tests: the channel's token on an inbound activity (`channelToken`),
 *   and a token of a stranger's keys or for another audience, which the bot must refuse.
 *
 * An app proves itself with its secret or, as Entra's certificate credentials, with a client
 * assertion (a JWT signed by a certificate registered on the app: PS256 or RS256, named by its
 * `x5t#S256` or `x5t` thumbprint; audience the token endpoint; issuer and subject the app; a
 * `jti` used once; at most ten minutes old).
 *
 * Issued tokens are RS256 JWTs with `iss = <url>/<tenant>/v2.0`, `tid`, `aud`, and for app
 * tokens `appid`; lifetimes are an hour, as Entra's are. What Entra answers to a bad request
 * (400 `invalid_request`, 401 `invalid_client`, 400 `invalid_scope`) follows its OAuth 2.0 error
 * responses (learn.microsoft.com, "Microsoft identity platform and the OAuth 2.0 client
 * credentials flow").
 */
import { createHash, randomUUID, X509Certificate } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, exportJWK, generateKeyPair, type JWK, jwtVerify, SignJWT } from 'jose';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
type PublicKey = Awaited<ReturnType<typeof generateKeyPair>>['publicKey'];

export interface EntraApp {
  clientId: string;
  /** Its client secret, if it has one. */
  secret?: string;
  /** PEM certificates registered on it, whose keys may sign its client assertions. */
  certificates?: string[];
  /** Resources (`https://api.botframework.com`, `https://graph.microsoft.com`) it may ask tokens for. */
  resources: string[];
}

export interface ChannelTokenOptions {
  /** The bot's app id (the token's aud). */
  audience: string;
  /** The service URL the activity names (the token's serviceurl claim). */
  serviceUrl: string;
  /** Signed with keys the authority does not publish. */
  foreignKey?: boolean;
  /** Already expired (beyond the SDK's five minutes of tolerance). */
  expired?: boolean;
}

export interface FakeEntra {
  /** The authority: `<url>`; a tenant's is `<url>/<tenant>`. */
  readonly url: string;
  /** The tenant the apps are registered in (and the tokens' issuer). */
  readonly tenantId: string;
  register(app: EntraApp): void;
  /** A token as the Teams channel sends with an activity to the bot. */
  channelToken(options: ChannelTokenOptions): Promise<string>;
  /** Checks a token this authority issued for `resource`: its claims, or it throws. */
  verify(token: string, resource: string): Promise<Record<string, unknown>>;
  /** Token requests answered (how the app proved itself), and refused. */
  readonly issued: Array<{ clientId: string; resource: string; proof: 'secret' | 'certificate' }>;
  readonly refused: string[];
  close(): Promise<void>;
}

const HOUR_S = 3600;
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export async function startFakeEntra(tenantId = randomUUID()): Promise<FakeEntra> {
  const keys = await generateKeyPair('RS256');
  const foreign = await generateKeyPair('RS256');
  const kid = randomUUID();
  const jwk: JWK = { ...(await exportJWK(keys.publicKey)), kid, use: 'sig', alg: 'RS256' };
  const apps = new Map<string, EntraApp>();
  const issued: FakeEntra['issued'] = [];
  const refused: string[] = [];
  let base = '';
  const issuer = (): string => `${base}/${tenantId}/v2.0`;

  const sign = (claims: Record<string, unknown>, key: PrivateKey, expiresIn: number): Promise<string> => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .setIssuer(issuer())
      .setIssuedAt(now - 5)
      .setNotBefore(now - 5)
      .setExpirationTime(now + expiresIn)
      .setJti(randomUUID())
      .sign(key);
  };

  const server: Server = createServer((req, res) => {
    void route(req, res).catch(() => {
      if (!res.headersSent) json(res, 500, { error: 'server_error' });
    });
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://entra').pathname;
    const prefix = `/${tenantId}`;
    if (!path.startsWith(prefix)) return json(res, 400, { error: 'invalid_tenant' });
    const rest = path.slice(prefix.length);
    if (req.method === 'GET' && rest === '/discovery/v2.0/keys') return json(res, 200, { keys: [jwk] });
    if (req.method === 'GET' && rest === '/v2.0/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer: issuer(),
        token_endpoint: `${base}/${tenantId}/oauth2/v2.0/token`,
        jwks_uri: `${base}/${tenantId}/discovery/v2.0/keys`,
        id_token_signing_alg_values_supported: ['RS256'],
      });
    }
    if (req.method === 'POST' && rest === '/oauth2/v2.0/token') return token(req, res);
    return json(res, 404, { error: 'not_found' });
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = new URLSearchParams(await body(req));
    const refuse = (status: number, error: string): void => {
      refused.push(error);
      json(res, status, { error, error_description: `${error} (fake Entra)` });
    };
    if (form.get('grant_type') !== 'client_credentials') return refuse(400, 'unsupported_grant_type');
    const app = apps.get(form.get('client_id') ?? '');
    if (app === undefined) return refuse(401, 'invalid_client');
    const assertion = form.get('client_assertion');
    let proof: 'secret' | 'certificate';
    if (assertion !== null) {
      if (form.get('client_assertion_type') !== ASSERTION_TYPE) return refuse(400, 'invalid_request');
      const endpoint = `${base}/${tenantId}/oauth2/v2.0/token`;
      if (!(await assertionValid(app, assertion, endpoint))) return refuse(401, 'invalid_client');
      proof = 'certificate';
    } else {
      if (app.secret === undefined || form.get('client_secret') !== app.secret)
        return refuse(401, 'invalid_client');
      proof = 'secret';
    }
    const scope = form.get('scope') ?? '';
    if (!scope.endsWith('/.default')) return refuse(400, 'invalid_scope');
    const resource = scope.slice(0, -'/.default'.length);
    if (!app.resources.includes(resource)) return refuse(400, 'invalid_scope');
    const accessToken = await sign(
      { aud: resource, appid: app.clientId, azp: app.clientId, tid: tenantId, roles: [] },
      keys.privateKey,
      HOUR_S,
    );
    issued.push({ clientId: app.clientId, resource, proof });
    json(res, 200, {
      token_type: 'Bearer',
      expires_in: HOUR_S,
      ext_expires_in: HOUR_S,
      access_token: accessToken,
    });
  }

  const usedJtis = new Set<string>();
  /** A client assertion signed by one of the app's certificates, for this endpoint, fresh and new. */
  async function assertionValid(app: EntraApp, assertion: string, endpoint: string): Promise<boolean> {
    try {
      const header = decodeProtectedHeader(assertion);
      const certificate = (app.certificates ?? [])
        .map((pem) => new X509Certificate(pem))
        .find((c) =>
          header.alg === 'PS256'
            ? header['x5t#S256'] === createHash('sha256').update(c.raw).digest('base64url')
            : header.alg === 'RS256' && header.x5t === createHash('sha1').update(c.raw).digest('base64url'),
        );
      if (certificate === undefined) return false;
      const { payload } = await jwtVerify(assertion, certificate.publicKey, {
        algorithms: ['PS256', 'RS256'],
        audience: endpoint,
        issuer: app.clientId,
        subject: app.clientId,
        maxTokenAge: '10m',
        requiredClaims: ['jti', 'exp', 'nbf', 'iat'],
      });
      if (typeof payload.jti !== 'string' || usedJtis.has(payload.jti)) return false;
      usedJtis.add(payload.jti);
      return true;
    } catch {
      return false;
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const verifyWith = async (token: string, resource: string, key: PublicKey) => {
    const { payload } = await jwtVerify(token, key, {
      issuer: issuer(),
      audience: resource,
      algorithms: ['RS256'],
    });
    return payload as Record<string, unknown>;
  };

  return {
    url: base,
    tenantId,
    issued,
    refused,
    register: (app) => {
      apps.set(app.clientId, app);
    },
    channelToken: (o) =>
      // As the channel's tokens: no appid or azp (the SDK then asks the Bot Connector's scope).
      sign(
        { aud: o.audience, serviceurl: o.serviceUrl, tid: tenantId },
        o.foreignKey === true ? foreign.privateKey : keys.privateKey,
        o.expired === true ? -600 : HOUR_S,
      ),
    verify: (token, resource) => verifyWith(token, resource, keys.publicKey),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

const MAX_BODY = 64 * 1024;

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > MAX_BODY) req.destroy(new Error('body too large'));
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
