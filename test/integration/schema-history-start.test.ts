import { describe, expect, it } from 'vitest';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { fold, loadHistory, mysqlRows } from '../support/fold.ts';
import { quoted, type TestSource, testSource } from '../support/source.ts';

/*
 * A source that starts at a past binlog position (SLUICE_STARTUP=earliest, position:, timestamp:,
 * gtid:) reads the tables' history from the binlog itself: every table the binlog creates gets its
 * versions from its DDL alone, with the charsets, collations and key columns the server gave it.
 * Nothing may be copied again (a snapshot), and no row may be missing from the output, while the
 * binlog holds the history or a DDL's effect on rows is computable.
 */

const TABLES: Record<string, string> = {
  p1: 'CREATE TABLE p1 (id INT PRIMARY KEY, v VARCHAR(10))',
  p2: 'CREATE TABLE p2 (k VARCHAR(8), n INT, v TEXT, PRIMARY KEY (k, n))',
  p3: 'CREATE TABLE p3 (id INT NOT NULL, code CHAR(4) NOT NULL, UNIQUE KEY (code))',
  p4: 'CREATE TABLE p4 (n INT, d DECIMAL(6,2))',
  p5: "CREATE TABLE p5 (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, c VARCHAR(5) CHARACTER SET latin1, e ENUM('a','b'))",
};

const ROWS = [
  "INSERT INTO p1 VALUES (1,'one'),(2,'two')",
  "INSERT INTO p2 VALUES ('a',1,'x'),('b',2,'y')",
  "INSERT INTO p3 VALUES (1,'c1'),(2,'c2')",
  'INSERT INTO p4 VALUES (1,1.5),(2,NULL)',
  "INSERT INTO p5 (c, e) VALUES ('l1','a'),('l2','b')",
];

/** What the source wrote of each table, by the format's rule, next to the server's rows. */
async function expectTables(source: TestSource, db: string, config = source.config) {
  const events = await source.events();
  for (const table of Object.keys(TABLES)) {
    const history = await loadHistory(source.clients.s3, config.bucket, config.prefix, config.sourceId, db, table);
    const mine = events.filter((e) => e.db === db && e.table === table);
    expect(mine.length, `${table}: events`).toBeGreaterThan(0);
    expect(fold(mine, history), `${table}: the output by the rule`).toEqual(await mysqlRows(await mysqlTarget(config), db, table));
  }
}

/*
 * `position:` just before the test's statements stands for `earliest`: both start through the same
 * path (binlog-scan.ts startupPosition, then run.ts initialCatalog), and `earliest` here would read
 * the whole binlog of the shared test server, which grows with every run (40 s when tried).
 */
describe.each([false, true])('schema history from a past binlog position, lagging=%s (real stack)', (lagging) => {
  it('takes every table from its CREATE TABLE: no version before it, no re-snapshot, no missing row', async () => {
    await using source = await testSource('fromstart');
    // A table that exists before the start and is dropped and created again after it: the server's
    // description now is the second table's, never the first's.
    await source.sql('CREATE TABLE q0 (a INT PRIMARY KEY, b INT); INSERT INTO q0 VALUES (1, 1)');
    const [status] = await source.sql('SHOW MASTER STATUS');
    await source.sql("INSERT INTO q0 VALUES (2, 2); DROP TABLE q0; CREATE TABLE q0 (a INT PRIMARY KEY, c VARCHAR(3)); INSERT INTO q0 VALUES (3, 'c')");
    const config = source.configWith({ SLUICE_STARTUP: `position:${status?.File}:${status?.Position}` });
    // The database's charset without a collation: the charset's default collation (not the server's utf8mb4_unicode_ci).
    const db = await source.database('_h', 'CHARACTER SET utf8mb4');
    await source.sql(`USE ${quoted(db)}; ${Object.values(TABLES).join('; ')}; ${ROWS.join('; ')}`);
    if (!lagging) await source.capture({ config });
    await source.sql(
      `USE ${quoted(db)}; ALTER TABLE p1 ADD COLUMN x VARCHAR(10) DEFAULT 'q'; INSERT INTO p1 VALUES (3,'three','r'); UPDATE p1 SET v = 'uno' WHERE id = 1; ` +
        // Under the default strict sql_mode this would fail on a NULL in n: it changed no value.
        'ALTER TABLE p4 ADD PRIMARY KEY (n); UPDATE p4 SET d = 2.5 WHERE n = 2',
    );
    await source.capture({ config });

    const events = await source.events();
    const resets = events.filter((e) => e.db === db && e.op === 't').map((e) => `${e.table} ${e.ddl?.kind}`);
    expect(resets.sort()).toEqual(Object.keys(TABLES).map((t) => `${t} create`));
    expect(events.filter((e) => e.db === db && e.op === 's').map((e) => `${e.table} ${e.ddl?.kind}`)).toEqual(['p1 alter', 'p4 alter']);
    expect(await source.clients.snapshots.latestJob(config.sourceId)).toBeUndefined();
    const q0 = events.filter((e) => e.db === source.db && e.table === 'q0');
    // The row before the DROP comes with its TABLE_MAP's version: no reset, no snapshot of the second table.
    expect(q0.map((e) => `${e.op} ${e.ddl?.kind ?? JSON.stringify(e.after)}`)).toEqual(['c {"a":2,"b":2}', 't drop', 't create', 'c {"a":3,"c":"c"}']);
    const q0History = await loadHistory(source.clients.s3, config.bucket, config.prefix, config.sourceId, source.db, 'q0');
    expect(fold(q0, q0History)).toEqual(await mysqlRows(await mysqlTarget(config), source.db, 'q0'));
    // Each table's first version is its CREATE TABLE's: none read from the server before the table existed.
    for (const table of Object.keys(TABLES)) {
      const history = await loadHistory(source.clients.s3, config.bucket, config.prefix, config.sourceId, db, table);
      expect([...history.keys()].sort(), table).toEqual(table === 'p1' || table === 'p4' ? [1, 2] : [1]);
    }
    await expectTables(source, db, config);
  });
});
