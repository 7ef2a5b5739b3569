import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/**
 * The tests' OpenID provider: zitadel/oidc's example provider built from its Go module
 * (tools/oidc-peer, cached outside the clone by scripts/go-tool-bin.sh), trusting the broker's
 * assertions for token exchange. One process per peer; `stop()` and `start()` again on the same
 * port stand for an identity provider that goes down and comes back.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface OidcPeerOptions {
  /** The broker's client at the provider. */
  clientId: string;
  clientSecret: string;
  /** The broker's issuer: its JWKS is read from <issuer>/.well-known/jwks.json. */
  trustIssuer: string;
  /** The aud the broker's assertions must carry. */
  trustAudience: string;
  /** Subjects whose exchange the provider refuses (invalid_grant). */
  deny?: string[];
  /** The broker's redirect URIs (the code flow). */
  redirect?: string[];
}

/** One line the provider printed per exchange it answered. */
export interface ExchangeLine {
  exchange: 'ok' | 'refused';
  subject?: string;
  audience?: string[];
  why?: string;
}

export interface OidcPeer {
  /** Its issuer, with the trailing slash it uses. */
  issuer: string;
  tokenUrl: string;
  jwksUrl: string;
  exchanges: ExchangeLine[];
  /** Stops the process (the provider is down). */
  stop(): Promise<void>;
  /** Starts it again on the same port (up again; it has forgotten every token it issued). */
  start(): Promise<void>;
}

/** The provider's binary, built once (a cached build does not touch Go). */
export function oidcPeerBinary(): string {
  const built = spawnSync('bash', ['scripts/go-tool-bin.sh', 'tools/oidc-peer', '.', 'oidc-peer'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (built.status !== 0) throw new Error(`building tools/oidc-peer failed (exit ${built.status})`);
  return built.stdout.trim().split('\n').at(-1) ?? '';
}

export async function startOidcPeer(options: OidcPeerOptions): Promise<OidcPeer> {
  const binary = oidcPeerBinary();
  const exchanges: ExchangeLine[] = [];
  let child: ChildProcess | undefined;
  let port = '0';

  const launch = async (): Promise<string> => {
    const proc = spawn(binary, [], {
      env: {
        PATH: process.env.PATH ?? '',
        OIDC_PEER_PORT: port,
        OIDC_PEER_CLIENT: `${options.clientId}:${options.clientSecret}`,
        OIDC_PEER_TRUST_ISSUER: options.trustIssuer,
        OIDC_PEER_TRUST_AUDIENCE: options.trustAudience,
        OIDC_PEER_DENY: (options.deny ?? []).join(','),
        OIDC_PEER_REDIRECT: (options.redirect ?? []).join(','),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the OIDC peer did not start: ${stderr}`)), 20_000);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the OIDC peer exited (${code}): ${stderr}`));
      });
      lines.on('line', (line) => {
        if (line.startsWith('listening ')) {
          clearTimeout(timer);
          resolve(line.slice('listening '.length).trim());
        } else if (line.startsWith('{')) {
          exchanges.push(JSON.parse(line) as ExchangeLine);
        }
      });
    });
  };

  const issuer = await launch();
  port = new URL(issuer).port;
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  };
  return {
    issuer,
    tokenUrl: `${issuer}oauth/token`,
    jwksUrl: `${issuer}keys`,
    exchanges,
    stop,
    start: async () => {
      await launch();
    },
  };
}
