import { Writable } from 'node:stream';
import { KubeConfig, type KubernetesListObject, type V1Secret } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KubeApiError } from './kube-api.js';
import { forbiddenSecretsMessage, secretReaderBindingCommand } from './secret-access.js';
import { SecretWatch } from './secret-watch.js';

/** A kubeconfig pointing nowhere: these tests never get past the (fake) list to a watch. */
function nowhere(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:9', skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

function logLines(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

const GRANT = {
  serviceAccount: { namespace: 'agentkourier', name: 'ak-agentkourier' },
  secretReaderRole: 'ak-agentkourier-secret-reader',
};

describe('what a refused Secret list tells a person', () => {
  it('names the namespace, the chart value and the RoleBinding command', () => {
    expect(secretReaderBindingCommand('team-c', GRANT)).toBe(
      'kubectl create rolebinding ak-agentkourier-secrets -n team-c ' +
        '--clusterrole=ak-agentkourier-secret-reader --serviceaccount=agentkourier:ak-agentkourier',
    );
    const message = forbiddenSecretsMessage('team-c', GRANT);
    expect(message).toContain('may not list Secrets in namespace "team-c"');
    expect(message).toContain('rbac.secretNamespaces (add team-c)');
    expect(message).toContain(secretReaderBindingCommand('team-c', GRANT));
  });

  it('says what to grant in plain words when it was not installed by the chart', () => {
    const noRole = forbiddenSecretsMessage('team-c', { ...GRANT, secretReaderRole: undefined });
    expect(noRole).toContain(
      'grant service account agentkourier/ak-agentkourier list and watch on secrets in team-c',
    );
    expect(noRole).not.toContain('kubectl');
    const nobody = forbiddenSecretsMessage('team-c', {
      serviceAccount: undefined,
      secretReaderRole: undefined,
    });
    expect(nobody).toContain("grant the controller's identity list and watch on secrets in team-c");
  });
});

describe('SecretWatch, when the API server refuses the list (403)', () => {
  let watch: SecretWatch | undefined;
  afterEach(async () => {
    await watch?.stop();
  });

  it('shows the Secret as forbidden with what to grant, logs it once, and reads it once granted', async () => {
    const { logger, lines } = logLines();
    let granted = false;
    let lists = 0;
    const changes: string[] = [];
    watch = new SecretWatch({
      kubeConfig: nowhere(),
      api: {
        listSecret: async (): Promise<KubernetesListObject<V1Secret>> => {
          lists++;
          if (!granted) throw new KubeApiError(403, 'reading Secret team-c/agent-token failed (HTTP 403)');
          return {
            metadata: { resourceVersion: '1' },
            items: [
              {
                metadata: { name: 'agent-token', namespace: 'team-c', resourceVersion: '1' },
                data: { token: Buffer.from('secret-value').toString('base64') },
              },
            ],
          };
        },
      },
      logger,
      onChange: (namespace, name) => changes.push(`${namespace}/${name}`),
      forbidden: (namespace) => forbiddenSecretsMessage(namespace, GRANT),
      restartBaseMs: 5,
      restartMaxMs: 10,
    });
    await watch.follow(['team-c/agent-token']);
    expect(watch.view('team-c', 'agent-token')).toEqual({
      kind: 'forbidden',
      message: forbiddenSecretsMessage('team-c', GRANT),
    });
    // Retried with backoff meanwhile; each refusal after the first is logged at debug only.
    await vi.waitFor(() => expect(lists).toBeGreaterThanOrEqual(4), { timeout: 5_000, interval: 5 });
    const refusals = lines.filter((l) => l.status === 403 && (l.level as number) >= 40);
    expect(refusals).toEqual([
      expect.objectContaining({ namespace: 'team-c', msg: forbiddenSecretsMessage('team-c', GRANT) }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret-value');

    granted = true;
    await vi.waitFor(() => expect(watch?.view('team-c', 'agent-token').kind).toBe('found'), {
      timeout: 5_000,
      interval: 5,
    });
    expect(changes).toContain('team-c/agent-token');
    const view = watch.view('team-c', 'agent-token');
    expect(view.kind === 'found' ? view.data.get('token') : undefined).toBe('secret-value');
  });

  it('keeps "not read yet" for a list that failed otherwise (the API server away)', async () => {
    const { logger } = logLines();
    watch = new SecretWatch({
      kubeConfig: nowhere(),
      api: {
        listSecret: async () => {
          throw new KubeApiError(undefined, 'reading Secret team-c/agent-token failed (ECONNREFUSED)');
        },
      },
      logger,
      onChange: () => undefined,
      forbidden: (namespace) => forbiddenSecretsMessage(namespace, GRANT),
      restartBaseMs: 1_000,
    });
    await watch.follow(['team-c/agent-token']);
    expect(watch.view('team-c', 'agent-token')).toEqual({
      kind: 'unreadable',
      message: 'not read yet (the API server did not answer the list)',
    });
  });
});
