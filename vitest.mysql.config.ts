import { defineConfig } from 'vitest/config';

// `npm run test:mysql`: recorded MySQL binlogs replayed through test/support/mysql-replay, on the
// same local stack (MariaDB for --schema-from, DynamoDB Local, the S3 emulator) as `npm test`.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    include: ['test/mysql/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/env.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The fixtures' tables live under fixed database names (test, mysql, noria…) in the one
    // MariaDB: files run one at a time.
    fileParallelism: false,
    maxWorkers: 1,
  },
});
