import { defineConfig } from 'vitest/config';
import { dropSdkServerNoise } from './test/helpers/sdk-server-noise.js';

// The cluster tests (test/cluster/): the project's image as a real pod on a real single-node
// cluster that test/cluster/setup.ts builds and starts once for every file (each test works in
// namespaces of its own). One file at a time: they share the node, and some of them restart pods.
export default defineConfig({
  test: {
    onConsoleLog: dropSdkServerNoise,
    include: ['test/cluster/**/*.test.ts'],
    globalSetup: ['test/cluster/setup.ts'],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 900_000,
  },
});
