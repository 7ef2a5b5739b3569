import { createHash, createPrivateKey, type KeyObject, randomUUID, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { SignJWT } from 'jose';
import { TeamsCredentialError } from './errors.js';

/**
 * How the app proves itself to Microsoft Entra when it asks for a token: its client secret, or
 * a certificate registered on the app (many organisations allow no secrets). With a certificate,
 * each token request carries a short JWT signed with its private key (private_key_jwt: PS256,
 * the certificate's SHA-256 thumbprint as `x5t#S256`, the token endpoint as audience, the app as
 * issuer and subject, a fresh `jti`, a few minutes' life), as Entra's certificate credentials
 * describe.
 *
 * The files are read at each token request (one per scope an hour), so a certificate renewed in
 * place (a Secret updated by cert-manager, say) is used from the next token on, without a
 * restart.
 */
export type AppCredentialSettings =
  | { kind: 'secret'; secret: string }
  | { kind: 'certificate'; certificateFile: string; keyFile: string };

export interface AppCredential {
  /** The form fields that authenticate the app at `tokenEndpoint`. */
  form(tokenEndpoint: string): Promise<Record<string, string>>;
}

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Entra takes an assertion for its whole life; a short one limits what a copy is worth. */
const ASSERTION_LIFETIME_S = 5 * 60;

export function appCredential(clientId: string, settings: AppCredentialSettings): AppCredential {
  if (settings.kind === 'secret') return { form: async () => ({ client_secret: settings.secret }) };
  return {
    async form(tokenEndpoint) {
      const { key, thumbprint } = await readCertificate(settings.certificateFile, settings.keyFile);
      const now = Math.floor(Date.now() / 1000);
      const assertion = await new SignJWT({ jti: randomUUID() })
        .setProtectedHeader({ alg: 'PS256', typ: 'JWT', 'x5t#S256': thumbprint })
        .setIssuer(clientId)
        .setSubject(clientId)
        .setAudience(tokenEndpoint)
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(now + ASSERTION_LIFETIME_S)
        .sign(key);
      return { client_assertion_type: ASSERTION_TYPE, client_assertion: assertion };
    },
  };
}

/**
 * The certificate's private key and SHA-256 thumbprint (of its DER encoding, base64url), after
 * checking that the key is the certificate's. The certificate file may hold a chain: the first
 * certificate is the app's.
 */
export async function readCertificate(
  certificateFile: string,
  keyFile: string,
): Promise<{ key: KeyObject; thumbprint: string; notAfter: Date }> {
  let certificate: X509Certificate;
  let key: KeyObject;
  try {
    certificate = new X509Certificate(await readFile(certificateFile));
  } catch (error) {
    throw new TeamsCredentialError(
      `the certificate file cannot be read as a PEM certificate (${reason(error)})`,
    );
  }
  try {
    key = createPrivateKey(await readFile(keyFile));
  } catch (error) {
    throw new TeamsCredentialError(`the key file cannot be read as a PEM private key (${reason(error)})`);
  }
  if (key.asymmetricKeyType !== 'rsa')
    throw new TeamsCredentialError(
      `the key is ${key.asymmetricKeyType ?? 'unknown'}: Entra takes RSA certificates`,
    );
  if (!certificate.checkPrivateKey(key))
    throw new TeamsCredentialError('the key file holds another key than the certificate’s');
  const thumbprint = createHash('sha256').update(certificate.raw).digest('base64url');
  return { key, thumbprint, notAfter: new Date(certificate.validTo) };
}

/** What went wrong, without the file's content (a key must never reach a log). */
function reason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown';
}
