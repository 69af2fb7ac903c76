import { defineConfig } from 'vitest/config';

// `npm run test:engines`: the Iceberg tables a seeded workload leaves, read by Spark (Iceberg's Java
// library), PyIceberg, DuckDB's iceberg extension and Trino, each cell compared with MariaDB. The
// engines are installed on first use into .tools/engines (test/engines/tools.ts).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    include: ['test/engines/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/env.ts'],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    fileParallelism: false,
    maxWorkers: 1,
  },
});
