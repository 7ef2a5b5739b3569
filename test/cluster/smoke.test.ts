import { afterAll, describe, expect, it } from 'vitest';
import { ClusterClient, clusterInfo } from './harness.js';

const { info, skip } = clusterInfo();

describe.skipIf(info === undefined)(`smoke${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  const k = new ClusterClient(info as NonNullable<typeof info>);
  afterAll(() => k.cleanup());
  it('runs the image as a pod', async () => {
    const ns = await k.namespace('smoke');
    await k.kubectlOk([
      '-n',
      ns,
      'run',
      'ak',
      `--image=ghcr.io/agentkourier/agentkourier:${k.info.appVersion}`,
      '--',
      'demo-agent',
      '--host',
      '0.0.0.0',
      '--port',
      '8080',
    ]);
    const pod = await k.readyPod(ns, 'run=ak');
    expect(pod.status.phase).toBe('Running');
  });
});
