import mysql from 'mysql2/promise';

/*
 * MariaDB's Sequence engine answers `seq_1_to_N` (a column `seq`) in every database; MySQL has no
 * such tables. On MySQL, a statement's `seq_A_to_B` names a real table of those numbers in
 * `sluice_test_fixtures`, which no test source captures (their include filters name their own
 * databases). Each is made once, under a named lock, so parallel test files never read one half
 * filled.
 */

const SEQUENCE = /\bseq_(\d+)_to_(\d+)\b/g;
const FIXTURES = 'sluice_test_fixtures';
/** The tables made, by server and name. */
const ready = new Set<string>();

/** `query` with its sequence tables made to exist on MySQL and named there; unchanged on MariaDB. */
export async function withSequences(query: string, server: 'mariadb' | 'mysql', adminUrl: string): Promise<string> {
  if (server === 'mariadb') return query;
  const wanted = [...query.matchAll(SEQUENCE)].map(([name, from, to]) => ({ name, from: Number(from), to: Number(to) }));
  if (wanted.length === 0) return query;
  const missing = wanted.filter(({ name }) => !ready.has(`${adminUrl} ${name}`));
  if (missing.length) {
    const conn = await mysql.createConnection({ uri: adminUrl });
    try {
      await conn.query("SELECT GET_LOCK('sluice_test_sequences', 120)");
      await conn.query(`CREATE DATABASE IF NOT EXISTS ${FIXTURES}`);
      for (const { name, from, to } of missing) {
        await conn.query(`CREATE TABLE IF NOT EXISTS ${FIXTURES}.${name} (seq BIGINT UNSIGNED PRIMARY KEY)`);
        const [[{ n }]] = (await conn.query(`SELECT COUNT(*) AS n FROM ${FIXTURES}.${name}`)) as unknown as [[{ n: number }]];
        if (Number(n) !== to - from + 1) {
          await conn.query(`SET SESSION cte_max_recursion_depth = ${to - from + 2}`);
          await conn.query(
            `INSERT IGNORE INTO ${FIXTURES}.${name} WITH RECURSIVE n (seq) AS (SELECT ${from} UNION ALL SELECT seq + 1 FROM n WHERE seq < ${to}) SELECT seq FROM n`,
          );
        }
        ready.add(`${adminUrl} ${name}`);
      }
    } finally {
      await conn.query("SELECT RELEASE_LOCK('sluice_test_sequences')").catch(() => {});
      await conn.end();
    }
  }
  return query.replace(SEQUENCE, (name) => `${FIXTURES}.${name}`);
}
