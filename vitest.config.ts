import { defineConfig } from 'vitest/config';
import { dropSdkServerNoise } from './test/helpers/sdk-server-noise.js';

// Unit tests live beside the code; they start only in-process servers on port 0.
export default defineConfig({
  test: {
    onConsoleLog: dropSdkServerNoise,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/integration/**', 'test/faults/**', 'test/cluster/**', 'node_modules/**'],
    testTimeout: 20_000,
  },
});
