import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Certificates for a test control plane, made with openssl in a directory of the run: one CA
 * signs every serving and client certificate; the service-account signing key is a separate RSA
 * key. A client certificate's subject is its Kubernetes identity (CN the user, O the groups).
 */

export interface CertPair {
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
}

export class TestPki {
  readonly dir: string;
  readonly caCertPath: string;
  readonly caKeyPath: string;
  readonly caCert: string;

  constructor(parent: string) {
    this.dir = join(parent, 'pki');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.#ecKey('ca.key');
    writeFileSync(
      this.#path('ca.cnf'),
      [
        '[req]',
        'distinguished_name = dn',
        'prompt = no',
        '[dn]',
        'CN = unused',
        '[ca]',
        'basicConstraints = critical, CA:TRUE',
        'keyUsage = critical, keyCertSign, cRLSign, digitalSignature',
        'subjectKeyIdentifier = hash',
        '',
      ].join('\n'),
    );
    this.#openssl([
      'req',
      '-x509',
      '-new',
      '-config',
      'ca.cnf',
      '-extensions',
      'ca',
      '-key',
      'ca.key',
      '-subj',
      '/CN=agentkourier-test-ca',
      '-days',
      '3650',
      '-sha256',
      '-out',
      'ca.crt',
    ]);
    this.caCertPath = this.#path('ca.crt');
    this.caKeyPath = this.#path('ca.key');
    this.caCert = readFileSync(this.caCertPath, 'utf8');
  }

  /** A server certificate for these names: `IP:…` and `DNS:…` entries. */
  serving(name: string, subjectAltNames: string[]): CertPair {
    return this.#leaf(name, `/CN=${name}`, [
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = serverAuth',
      `subjectAltName = ${subjectAltNames.join(', ')}`,
    ]);
  }

  /** A client certificate: `user` as CN, each group as an O. */
  client(name: string, user: string, groups: string[] = []): CertPair {
    const subject = `${groups.map((g) => `/O=${g}`).join('')}/CN=${user}`;
    return this.#leaf(name, subject, [
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = clientAuth',
    ]);
  }

  /** The service-account token signing key pair. */
  serviceAccountKeys(): { publicKeyPath: string; privateKeyPath: string } {
    const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(this.#path('sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(this.#path('sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), {
      mode: 0o600,
    });
    return { publicKeyPath: this.#path('sa.pub'), privateKeyPath: this.#path('sa.key') };
  }

  #leaf(name: string, subject: string, extensions: string[]): CertPair {
    this.#ecKey(`${name}.key`);
    writeFileSync(
      this.#path(`${name}.ext`),
      ['basicConstraints = critical, CA:FALSE', 'authorityKeyIdentifier = keyid', ...extensions, ''].join(
        '\n',
      ),
    );
    this.#openssl([
      'req',
      '-new',
      '-config',
      'ca.cnf',
      '-key',
      `${name}.key`,
      '-subj',
      subject,
      '-out',
      `${name}.csr`,
    ]);
    this.#openssl([
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-set_serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-days',
      '3650',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ]);
    const certPath = this.#path(`${name}.crt`);
    const keyPath = this.#path(`${name}.key`);
    return { certPath, keyPath, cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
  }

  #path(name: string): string {
    return join(this.dir, name);
  }

  #ecKey(name: string): void {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(this.#path(name), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  }

  #openssl(args: string[]): void {
    try {
      execFileSync('openssl', args, { cwd: this.dir, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
      throw new Error(`openssl ${args.join(' ')} failed: ${String(error)}\n${stderr}`, { cause: error });
    }
  }
}

/** A kubeconfig (data inline) for one client certificate. */
export function kubeconfigFor(
  server: string,
  caCert: string,
  client: CertPair,
  name = 'kourier-test',
): object {
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server, 'certificate-authority-data': b64(caCert) } }],
    users: [
      {
        name: 'user',
        user: { 'client-certificate-data': b64(client.cert), 'client-key-data': b64(client.key) },
      },
    ],
    contexts: [{ name, context: { cluster: name, user: 'user' } }],
    'current-context': name,
  };
}
