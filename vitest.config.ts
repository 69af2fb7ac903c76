import { configDefaults, defineConfig, type TestUserConfig } from 'vitest/config';

// A passing run prints the runner's list and summary only. The AWS SDK warns once per process that
// Node 20 support ends (Lambda runs Node 22); set here, the variable reaches the workers and every
// `sluice` process the tests spawn.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/**
 * The tests of pure logic (test/unit/): no server, DynamoDB Local or S3 emulator is started and
 * `dist/` is not built, so `npm run test:unit` (`vitest run --project unit`) runs in seconds.
 */
export const unit = {
  name: 'unit',
  include: ['test/unit/**/*.test.ts'],
  // The limit `npm test` gave them before the projects: the DuckDB and random-workload tests take
  // 15-20 s on a loaded two-core machine.
  testTimeout: 60_000,
} satisfies TestUserConfig;

/**
 * The tests against the real local stack (MariaDB, DynamoDB Local, S3 emulator), which the global
 * setup starts once for all of its files. vitest.live-mysql.config.ts and vitest.peer.config.ts
 * run this project's settings on other files or another server.
 */
export const integration = {
  name: 'integration',
  include: ['test/**/*.test.ts'],
  // The unit project runs test/unit/. The MySQL replay suite has its own run: npm run test:mysql
  // (vitest.mysql.config.ts); so have the Iceberg engines: npm run test:engines
  // (vitest.engines.config.ts); the deploy into an AWS emulator: npm run test:deploy
  // (vitest.deploy.config.ts); the checks of the stack's live MySQL, which run with this project
  // against it: npm run test:live-mysql (vitest.live-mysql.config.ts); and the tests reading other
  // projects' data from ../shared: npm run test:peer (vitest.peer.config.ts).
  exclude: [...configDefaults.exclude, 'test/unit/**', 'test/mysql/**', 'test/engines/**', 'test/deploy/**', 'test/live-mysql/**', 'test/peer/**'],
  globalSetup: ['test/support/global-setup.ts'],
  setupFiles: ['test/support/env.ts'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
} satisfies TestUserConfig;

/** Two cores: two workers keep MariaDB and the JVM from starving each other. */
export const maxWorkers = 2;

export default defineConfig({
  test: {
    projects: [{ test: unit }, { test: integration }],
    maxWorkers,
  },
});
