import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real local stack (MariaDB, DynamoDB Local, S3 emulator) is started once for all files.
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/env.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: two workers keep MariaDB and the JVM from starving each other.
    maxWorkers: 2,
  },
});
