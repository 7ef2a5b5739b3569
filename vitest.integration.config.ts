import { defineConfig } from 'vitest/config';
import { dropSdkServerNoise } from './test/helpers/sdk-server-noise.js';

// Integration tests start real peers in other processes (the Python A2A SDK, later a
// kube-apiserver and PostgreSQL), so they run one file at a time.
export default defineConfig({
  test: {
    onConsoleLog: dropSdkServerNoise,
    include: ['test/integration/**/*.test.ts'],
    globalSetup: [
      'test/integration/setup-python-peers.ts',
      'test/integration/setup-kube-bins.ts',
      'test/integration/setup-helm-bin.ts',
      'test/integration/setup-oidc-peer.ts',
    ],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
