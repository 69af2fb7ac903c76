import { defineConfig } from 'vitest/config';
import { integration, maxWorkers } from './vitest.config.ts';

// `npm run test:peer`: the tests that read other projects' data in place from ../shared (Debezium's
// MySQL-connector test scripts, ../shared/peer-data/debezium, or SLUICE_DEBEZIUM_SCRIPTS), so that
// `npm test` needs nothing beside the repository. The script runs it against MariaDB, then against
// a live MySQL 8.0.31 (SLUICE_TEST_SERVER=mysql, as `npm run test:live-mysql` does).
export default defineConfig({
  test: {
    ...integration,
    include: ['test/peer/**/*.test.ts'],
    exclude: integration.exclude.filter((pattern) => pattern !== 'test/peer/**'),
    maxWorkers,
  },
});
