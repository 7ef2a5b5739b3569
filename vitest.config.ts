import { defineConfig } from 'vitest/config';

// Unit tests live beside the code; they start only in-process servers on port 0.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/integration/**', 'test/faults/**', 'node_modules/**'],
    testTimeout: 20_000,
  },
});
