import { defineConfig } from 'vitest/config';
import { integration, maxWorkers } from './vitest.config.ts';

// `npm run test:live-mysql`: `npm test`'s integration project against a live MySQL 8.0.31
// (lib/local/mysql.ts) instead of MariaDB, plus test/live-mysql/; the global setup starts that
// stack under .sluice/test-mysql. The unit project reads no server: `npm test` runs it once. What
// only MariaDB has is left out below, each with why.
process.env.SLUICE_TEST_SERVER = 'mysql';

const MARIADB_ONLY = [
  // Its corpus is MariaDB DDL (INET4/INET6/UUID, PERSISTENT, IF [NOT] EXISTS in ALTER, MariaDB's executable comments and key lengths).
  'test/integration/ddl-schema.test.ts',
  // YEAR(2) keys: MySQL 8.0 has no YEAR(2).
  'test/integration/year2-key.test.ts',
  // MariaDB's own cases of following a failover: GTID domains logged in another order, START SLAVE
  // UNTIL, its messages (gtidPos, `d-s-n` ranges). What reads the same on both runs in
  // history-endpoint.test.ts; MySQL's own cases are test/live-mysql/history-follow.test.ts.
  'test/integration/history-follow.test.ts',
  // MariaDB's manual corpus: COMPRESSED, sequences and its other DDL, which MySQL refuses.
  'test/integration/ddl-manual-corpus.test.ts',
  // WITH SYSTEM VERSIONING: MariaDB's temporal tables; MySQL has none.
  'test/integration/system-versioning.test.ts',
  // Its unclassifiable DDL is written under sql_mode=ORACLE, which only MariaDB has.
  'test/integration/unclassified-ddl.test.ts',
];

export default defineConfig({
  test: {
    ...integration,
    exclude: [...integration.exclude.filter((pattern) => pattern !== 'test/live-mysql/**'), ...MARIADB_ONLY],
    maxWorkers,
  },
});
