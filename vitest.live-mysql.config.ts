import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:live-mysql`: `npm test` against a live MySQL 8.0.31 (lib/local/mysql.ts) instead of
// MariaDB, plus test/live-mysql/; the global setup starts that stack under .sluice/test-mysql. What
// only MariaDB has is left out below, each with why.
process.env.SLUICE_TEST_SERVER = 'mysql';

const MARIADB_ONLY: string[] = [];

export default defineConfig({
  test: {
    ...base.test,
    exclude: [...(base.test?.exclude ?? []).filter((pattern) => pattern !== 'test/live-mysql/**'), ...MARIADB_ONLY],
  },
});
