import { defineConfig } from 'vitest/config';
import { dropSdkServerNoise } from './test/helpers/sdk-server-noise.js';

// The fault matrix (test/faults/, table in docs/reliability.md): real peers and processes that
// misbehave on purpose, one file at a time. FAULT_SEEDS picks the seeds of the randomised rows
// (default a few, so CI runs the whole matrix in minutes).
export default defineConfig({
  test: {
    onConsoleLog: dropSdkServerNoise,
    include: ['test/faults/**/*.test.ts'],
    // kube-apiserver for the broker-start row (cached; skipped, saying so, without Go).
    globalSetup: ['test/integration/setup-kube-bins.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
