import { configDefaults, defineConfig } from 'vitest/config';

// A passing run prints the runner's list and summary only. The AWS SDK warns once per process that
// Node 20 support ends (Lambda runs Node 22); set here, the variable reaches the workers and every
// `sluice` process the tests spawn.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The MySQL replay suite has its own run: npm run test:mysql (vitest.mysql.config.ts); so have
    // the Iceberg engines: npm run test:engines (vitest.engines.config.ts); the deploy into an AWS
    // emulator: npm run test:deploy (vitest.deploy.config.ts); the checks of the stack's live MySQL,
    // which run with this suite against it: npm run test:live-mysql (vitest.live-mysql.config.ts);
    // and the tests reading other projects' data from ../shared: npm run test:peer (vitest.peer.config.ts).
    exclude: [...configDefaults.exclude, 'test/mysql/**', 'test/engines/**', 'test/deploy/**', 'test/live-mysql/**', 'test/peer/**'],
    // The real local stack (MariaDB, DynamoDB Local, S3 emulator) is started once for all files.
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/env.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: two workers keep MariaDB and the JVM from starving each other.
    maxWorkers: 2,
  },
});
