import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadTeamsConfig } from '../../../src/config/teams.js';
import { LiveRegistry } from '../../../src/core/registry.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { appCredential, readCertificate } from '../../../src/surfaces/teams/app-credential.js';
import { AppTokens } from '../../../src/surfaces/teams/app-token.js';
import { TeamsCredentialError, TeamsTokenError } from '../../../src/surfaces/teams/errors.js';
import { TeamsConnection } from '../../../src/surfaces/teams/index.js';
import { type FakeEntra, startFakeEntra } from '../../../testkit/teams/entra.js';
import { answer } from '../../peers/contract-agent/contract-agent.js';
import { startTeamsHarness, type TeamsHarness } from './harness.js';

const APP_ID = '11111111-2222-4333-8444-555555555555';
const CONNECTOR = 'https://api.botframework.com';
const GRAPH = 'https://graph.microsoft.com';

interface Made {
  certificateFile: string;
  keyFile: string;
  pem: string;
  /** openssl's own SHA-256 fingerprint, base64url: what x5t#S256 must be. */
  thumbprint: string;
}

/** An RSA certificate and key made by openssl (not by the code under test), with its fingerprint. */
function makeCertificate(dir: string, name: string, keyAlgorithm = 'rsa:2048'): Made {
  const certificateFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const newkey =
    keyAlgorithm === 'ec'
      ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256']
      : ['-newkey', keyAlgorithm];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      ...newkey,
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certificateFile,
      '-days',
      '30',
      '-subj',
      `/CN=kourier-teams-${name}`,
    ],
    { stdio: 'pipe' },
  );
  const fingerprint = execFileSync('openssl', [
    'x509',
    '-in',
    certificateFile,
    '-noout',
    '-fingerprint',
    '-sha256',
  ])
    .toString()
    .trim()
    .split('=')[1] as string;
  const thumbprint = Buffer.from(fingerprint.replaceAll(':', ''), 'hex').toString('base64url');
  return { certificateFile, keyFile, pem: execFileSync('cat', [certificateFile]).toString(), thumbprint };
}

describe('the Teams app authenticates with a certificate', () => {
  let dir: string | undefined;
  let entra: FakeEntra | undefined;
  let harness: TeamsHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    await entra?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    entra = undefined;
    dir = undefined;
  });

  async function setUp() {
    dir = await mkdtemp(join(tmpdir(), 'ak-teams-cert-'));
    entra = await startFakeEntra();
    return { dir, entra };
  }

  it('gets its tokens with a PS256 client assertion naming the certificate by its SHA-256 thumbprint', async () => {
    const { dir, entra } = await setUp();
    const made = makeCertificate(dir, 'app');
    entra.register({ clientId: APP_ID, certificates: [made.pem], resources: [CONNECTOR, GRAPH] });
    const forms: URLSearchParams[] = [];
    const tokens = new AppTokens({
      clientId: APP_ID,
      credential: appCredential(APP_ID, { kind: 'certificate', ...made }),
      tenantId: entra.tenantId,
      authority: entra.url,
      fetch: (url, init) => {
        forms.push(new URLSearchParams(String(init?.body)));
        return fetch(url, init);
      },
    });
    const token = await tokens.getAccessToken(CONNECTOR);
    expect(await entra.verify(token, CONNECTOR)).toMatchObject({ appid: APP_ID });
    expect(entra.issued).toEqual([{ clientId: APP_ID, resource: CONNECTOR, proof: 'certificate' }]);

    const form = forms[0] as URLSearchParams;
    expect(form.get('client_secret')).toBeNull();
    expect(form.get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    const assertion = form.get('client_assertion') ?? '';
    expect(decodeProtectedHeader(assertion)).toEqual({
      alg: 'PS256',
      typ: 'JWT',
      'x5t#S256': made.thumbprint,
    });
    const claims = decodeJwt(assertion);
    expect(claims).toMatchObject({
      aud: `${entra.url}/${entra.tenantId}/oauth2/v2.0/token`,
      iss: APP_ID,
      sub: APP_ID,
    });
    expect((claims.exp ?? 0) - (claims.nbf ?? 0)).toBeLessThanOrEqual(600);
    expect(typeof claims.jti).toBe('string');

    // Each request signs anew: a second scope's assertion has its own jti.
    await tokens.getAccessToken(GRAPH);
    expect(decodeJwt(forms[1]?.get('client_assertion') ?? '').jti).not.toBe(claims.jti);
  });

  it('a broker whose app has only a certificate answers in a personal chat (its sends carry tokens got with it)', async () => {
    const { dir, entra } = await setUp();
    const made = makeCertificate(dir, 'broker');
    harness = await startTeamsHarness({ entra, certificate: made });
    const h = harness;
    h.agent.enqueueFor('SendStreamingMessage', answer({ chunks: ['Signed', ' in.'] }));
    const hello = h.connector.message({ conversation: h.personal, from: h.ada, text: 'hello' });
    expect((await h.connector.deliver(h.endpoint, hello)).status).toBe(200);
    await h.settled(1);
    await h.waitFor('the answer', () =>
      h.connector.messages(h.personal.id).some((m) => m.from === 'bot' && m.text === 'Signed in.'),
    );
    expect(entra.issued.length).toBeGreaterThan(0);
    expect(entra.issued.every((i) => i.proof === 'certificate')).toBe(true);
    expect(h.logs.some((l) => l.msg === 'Teams app authenticates with its certificate')).toBe(true);
    expect(JSON.stringify(h.logs)).not.toContain('PRIVATE KEY');
  });

  it('uses a certificate renewed in place from the next token on, without a restart', async () => {
    const { dir, entra } = await setUp();
    const first = makeCertificate(dir, 'first');
    const renewed = makeCertificate(dir, 'renewed');
    entra.register({ clientId: APP_ID, certificates: [first.pem], resources: [CONNECTOR, GRAPH] });
    const files = { certificateFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    await rename(first.certificateFile, files.certificateFile);
    await rename(first.keyFile, files.keyFile);
    const tokens = new AppTokens({
      clientId: APP_ID,
      credential: appCredential(APP_ID, { kind: 'certificate', ...files }),
      tenantId: entra.tenantId,
      authority: entra.url,
    });
    await tokens.getAccessToken(CONNECTOR);
    // The old certificate is retired at Entra and the files replaced, as a renewed Secret is.
    entra.register({ clientId: APP_ID, certificates: [renewed.pem], resources: [CONNECTOR, GRAPH] });
    await rename(renewed.certificateFile, files.certificateFile);
    await rename(renewed.keyFile, files.keyFile);
    await tokens.getAccessToken(GRAPH);
    expect(entra.issued.map((i) => [i.resource, i.proof])).toEqual([
      [CONNECTOR, 'certificate'],
      [GRAPH, 'certificate'],
    ]);
  });

  it('is refused by Entra with a certificate not registered on the app, and says so without the assertion', async () => {
    const { dir, entra } = await setUp();
    const registered = makeCertificate(dir, 'registered');
    const other = makeCertificate(dir, 'other');
    entra.register({ clientId: APP_ID, certificates: [registered.pem], resources: [CONNECTOR] });
    const tokens = new AppTokens({
      clientId: APP_ID,
      credential: appCredential(APP_ID, { kind: 'certificate', ...other }),
      tenantId: entra.tenantId,
      authority: entra.url,
    });
    const error = await tokens.getAccessToken(CONNECTOR).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TeamsTokenError);
    expect((error as TeamsTokenError).entraError).toBe('invalid_client');
    expect(entra.refused).toEqual(['invalid_client']);
  });

  it('refuses, before any request, a key that is not the certificate’s, one that is not RSA, and a file that is no certificate', async () => {
    const { dir } = await setUp();
    const a = makeCertificate(dir, 'a');
    const b = makeCertificate(dir, 'b');
    const ec = makeCertificate(dir, 'ec', 'ec');
    await expect(readCertificate(a.certificateFile, b.keyFile)).rejects.toThrow(
      new TeamsCredentialError('the key file holds another key than the certificate’s'),
    );
    await expect(readCertificate(ec.certificateFile, ec.keyFile)).rejects.toThrow(/is ec: Entra takes RSA/);
    await expect(readCertificate(a.keyFile, a.keyFile)).rejects.toThrow(
      /cannot be read as a PEM certificate/,
    );
    await expect(readCertificate(join(dir, 'missing.crt'), a.keyFile)).rejects.toThrow(/\(ENOENT\)/);
    // The key's content never reaches the message.
    const keyText = await readFile(a.keyFile, 'utf8');
    const message = await readCertificate(a.keyFile, a.keyFile).catch((e: Error) => e.message);
    expect(message).not.toContain(keyText.split('\n')[1]);
  });

  it('a broker whose credentials Entra refuses does not start, saying so; one that cannot reach Entra starts and says that', async () => {
    const { entra } = await setUp();
    entra.register({ clientId: APP_ID, secret: 'the-right-one', resources: [CONNECTOR] });
    const store = new SqliteStore(':memory:');
    await store.migrate();
    const logs: string[] = [];
    const connection = (authority: string) =>
      new TeamsConnection({
        config: loadTeamsConfig({
          TEAMS_APP_ID: APP_ID,
          TEAMS_APP_SECRET: 'a-wrong-one',
          TEAMS_APP_TENANT_ID: entra.tenantId,
          TEAMS_TENANTS: entra.tenantId,
          TEAMS_AUTHORITY: authority,
          TEAMS_HOST: '127.0.0.1',
          TEAMS_PORT: '0',
        }),
        logger: pino({ level: 'info' }, { write: (line: string) => logs.push(line) }),
        bindings: new LiveRegistry(),
        addresses: store.addresses(),
      });
    const engine = { receive: async () => undefined } as unknown as Parameters<
      TeamsConnection['listen']
    >[0]['inbound'];
    const refused = connection(entra.url);
    const error = await refused.listen({ inbound: engine }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TeamsTokenError);
    expect((error as Error).message).toBe('Microsoft Entra did not issue the app a token: invalid_client');
    expect(refused.url).toBeUndefined();
    expect(logs.join('\n')).not.toContain('a-wrong-one');

    // Nothing listens at this authority: the broker starts, and asks again when it must send.
    const closed = await startFakeEntra();
    const nowhere = closed.url;
    await closed.close();
    const started = connection(nowhere);
    await started.listen({ inbound: engine });
    expect(started.url).toMatch(/^http:/);
    expect(logs.some((l) => l.includes('Microsoft Entra did not answer at start'))).toBe(true);
    await started.stop();
    await store.close();
  });

  it('takes a secret or a certificate from the environment, not both and not half of one', () => {
    const base = {
      TEAMS_APP_ID: APP_ID,
      TEAMS_APP_TENANT_ID: '22222222-2222-4222-8222-222222222222',
      TEAMS_TENANTS: '22222222-2222-4222-8222-222222222222',
    };
    expect(loadTeamsConfig({ ...base, TEAMS_APP_SECRET: 's' }).credential).toEqual({
      kind: 'secret',
      secret: 's',
    });
    expect(
      loadTeamsConfig({ ...base, TEAMS_APP_CERTIFICATE_FILE: '/c/tls.crt', TEAMS_APP_KEY_FILE: '/c/tls.key' })
        .credential,
    ).toEqual({ kind: 'certificate', certificateFile: '/c/tls.crt', keyFile: '/c/tls.key' });
    expect(() => loadTeamsConfig(base)).toThrow(/needs the app’s credential/);
    expect(() =>
      loadTeamsConfig({ ...base, TEAMS_APP_SECRET: 's', TEAMS_APP_CERTIFICATE_FILE: '/c/tls.crt' }),
    ).toThrow(/set one/);
    expect(() => loadTeamsConfig({ ...base, TEAMS_APP_CERTIFICATE_FILE: '/c/tls.crt' })).toThrow(
      /go together/,
    );
  });
});
