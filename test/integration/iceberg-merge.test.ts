import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, inject, it } from 'vitest';
import { crashAt, type FaultPoint, InjectedFault } from '../../lib/commit/faults.ts';
import { LeaseLostError } from '../../lib/errors.ts';
import { runIcebergMerge } from '../../lib/iceberg/merge/merge.ts';
import { icebergLocation } from '../../lib/iceberg/merge/spec.ts';
import { metadataKey, versionHintKey } from '../../lib/iceberg/table/table.ts';
import { silentLog } from '../../lib/log.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { committedVersion, icebergRows, icebirdRows, merge, mysqlText } from '../support/iceberg-merge.ts';
import { type TestSource, testSource } from '../support/source.ts';

/*
 * The Iceberg merge against the real stack: a MariaDB workload captured by sluice (snapshot pages
 * and binlog commits), merged into Iceberg tables, read back by DuckDB over the Parquet files the
 * current snapshot lists and by icebird (an independent Iceberg reader): equal to SELECT * from
 * MariaDB after every merge. Then a crash at each step of the merge's commit.
 */

const SETUP = [
  `CREATE TABLE t (id BIGINT UNSIGNED PRIMARY KEY, amount DECIMAL(30,4), at DATETIME(6), doc JSON, b BLOB, name VARCHAR(20))`,
  `INSERT INTO t VALUES (18446744073709551615, 12345678901234567890.1234, '2024-02-29 23:59:59.123456', '{"a": [1, 2.50]}', X'DEADBEEF', 'max'),
    (1, -0.0001, '1000-01-01 00:00:00.000000', '[]', X'', 'one'), (2, NULL, NULL, NULL, NULL, NULL), (3, 3, '2030-01-01 00:00:00', 'null', X'00', 'three')`,
  'CREATE TABLE log (msg VARCHAR(20), n INT)',
  "INSERT INTO log VALUES ('a', 1), ('a', 1), ('b', 2)",
  'CREATE TABLE tr (id INT PRIMARY KEY, v VARCHAR(10))',
  "INSERT INTO tr VALUES (1, 'x'), (2, 'y')",
];

async function expectEqual(source: TestSource, tables: string[]) {
  for (const table of tables) expect(await icebergRows(source, table), `${table}: Iceberg (DuckDB) vs MariaDB`).toEqual(await mysqlText(source, table));
}

/** icebird's rows, by a column it decodes exactly (text), against MariaDB's. */
async function expectIcebird(source: TestSource, table: string, column: string) {
  const rows = await icebirdRows(source, table);
  const mysql = await source.sql(`SELECT \`${column}\` AS c FROM \`${table}\``);
  expect(rows.map((r) => r[column] ?? null).sort(), `${table}: icebird`).toEqual(mysql.map((r) => r.c ?? null).sort());
}

describe('Iceberg merge (real stack)', () => {
  it('keeps Iceberg tables equal to MariaDB through snapshot, DML, ADD COLUMN, TRUNCATE and a keyless table', async () => {
    await using source = await testSource('icemerge', { SLUICE_STARTUP: 'initial' });
    await source.sql(`USE \`${source.db}\`; ${SETUP.join('; ')}`);
    await source.capture();
    // The initial copy is running: every table is held back, nothing is written.
    const held = await merge(source);
    expect(held.tables.map((t) => t.status)).toEqual(['held-back', 'held-back', 'held-back']);
    expect((await source.snapshot()).complete).toBe(true);
    await source.capture();

    const first = await merge(source);
    expect(first.tables.map((t) => [t.table.table, t.status, t.mode]).sort()).toEqual([
      ['log', 'merged', 'rewrite'],
      ['t', 'merged', 'rewrite'],
      ['tr', 'merged', 'rewrite'],
    ]);
    await expectEqual(source, ['t', 'log', 'tr']);
    await expectIcebird(source, 't', 'name');

    await source.sql(
      `USE \`${source.db}\`; UPDATE t SET name = 'uno', amount = 1.5 WHERE id = 1; DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (4, 4.0001, '2024-01-01 00:00:00.5', '{}', X'0102', 'four');
       UPDATE t SET id = 5 WHERE id = 3; DELETE FROM log WHERE msg = 'a' LIMIT 1; INSERT INTO log VALUES ('c', 3), ('b', 2); UPDATE log SET n = 20 WHERE msg = 'b' LIMIT 1`,
    );
    await source.capture();
    const second = await merge(source);
    expect(second.tables.find((t) => t.table.table === 't')).toMatchObject({ status: 'merged', mode: 'incremental', rowsWritten: 3, deletes: 2 });
    expect(second.tables.find((t) => t.table.table === 'tr')).toMatchObject({ status: 'up-to-date' });
    await expectEqual(source, ['t', 'log', 'tr']);
    await expectIcebird(source, 't', 'name');
    await expectIcebird(source, 'log', 'msg');

    // A column added (NULL for existing rows: a schema change only), a truncate, rows after both.
    await source.sql(
      `USE \`${source.db}\`; ALTER TABLE t ADD COLUMN note VARCHAR(10); UPDATE t SET note = 'n' WHERE id = 4; INSERT INTO t (id, name) VALUES (6, 'six');
       TRUNCATE TABLE tr; INSERT INTO tr VALUES (3, 'z')`,
    );
    await source.capture();
    const third = await merge(source);
    expect(third.tables.find((t) => t.table.table === 't')).toMatchObject({ status: 'merged', mode: 'incremental' });
    expect(third.tables.find((t) => t.table.table === 'tr')).toMatchObject({ status: 'merged', mode: 'rewrite' });
    await expectEqual(source, ['t', 'log', 'tr']);
    await expectIcebird(source, 't', 'note');
    const t = await committedVersion(source, 't');
    expect(t?.metadata.schemas.at(-1)?.fields.map((f) => [f.name, f.id])).toEqual([
      ['id', 1],
      ['amount', 2],
      ['at', 3],
      ['doc', 4],
      ['b', 5],
      ['name', 6],
      ['note', 7],
    ]);
    // A table truncated with nothing after it reads as empty.
    await source.sql(`TRUNCATE TABLE \`${source.db}\`.tr`);
    await source.capture();
    expect((await merge(source, { tables: ['tr'] })).tables[0]).toMatchObject({ status: 'merged', mode: 'empty' });
    expect(await icebergRows(source, 'tr')).toEqual([]);
    // Nothing new: nothing written.
    const again = await merge(source);
    expect(again.tables.map((r) => r.status)).toEqual(['up-to-date', 'up-to-date', 'up-to-date']);
    // version-hint.text names the committed version.
    const hint = await source.keys(versionHintKey(icebergLocation(source.config.prefix, { db: source.db, table: 't' })));
    expect(hint).toHaveLength(1);
  });

  it('follows DDL: a filled ADD COLUMN, DROP/RENAME COLUMN, a DECIMAL widening and a key change rewrite the table; DROP + CREATE starts it anew', async () => {
    await using source = await testSource('iceddl', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(
      `USE \`${source.db}\`; CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10), d DECIMAL(10,2), u INT NOT NULL); INSERT INTO a VALUES (1,'one',1.5,10),(2,'two',2.25,20),(3,'three',3,30);
       CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO b VALUES (1,'x')`,
    );
    await source.capture();
    await merge(source);
    await expectEqual(source, ['a', 'b']);
    const steps: [string, string][] = [
      ["ALTER TABLE a ADD COLUMN c VARCHAR(5) NOT NULL DEFAULT 'web'; INSERT INTO a (id, v, d, u) VALUES (4, 'four', 4, 40)", 'rewrite'],
      ["ALTER TABLE a DROP COLUMN v; ALTER TABLE a RENAME COLUMN c TO channel; UPDATE a SET channel = 'app' WHERE id = 2", 'incremental'],
      ['ALTER TABLE a MODIFY d DECIMAL(12,4); UPDATE a SET d = 9.1234 WHERE id = 3', 'rewrite'],
      ['ALTER TABLE a DROP PRIMARY KEY, ADD PRIMARY KEY (u); DELETE FROM a WHERE u = 10', 'rewrite'],
    ];
    for (const [ddl, mode] of steps) {
      await source.sql(`USE \`${source.db}\`; ${ddl}`);
      await source.capture();
      const result = await merge(source, { tables: ['a'] });
      expect(result.tables[0], ddl).toMatchObject({ status: 'merged', mode });
      await expectEqual(source, ['a']);
    }
    await expectIcebird(source, 'a', 'channel');
    await source.sql(`USE \`${source.db}\`; DROP TABLE b; CREATE TABLE b (k VARCHAR(5) PRIMARY KEY, n BIGINT); INSERT INTO b VALUES ('p', 1), ('q', 2)`);
    await source.capture();
    expect((await merge(source, { tables: ['b'] })).tables[0]).toMatchObject({ status: 'merged', mode: 'rewrite' });
    await expectEqual(source, ['b']);
    await expectIcebird(source, 'b', 'k');
    await source.sql(`DROP TABLE \`${source.db}\`.b`);
    await source.capture();
    expect((await merge(source, { tables: ['b'] })).tables[0]).toMatchObject({ status: 'merged', mode: 'empty' });
    expect(await icebergRows(source, 'b')).toEqual([]);
  });

  it('maps every column type exactly: integers signed and unsigned, DECIMAL beyond 38 digits, FLOAT, DOUBLE, temporal types, ENUM, SET, BIT, binary', async () => {
    await using source = await testSource('icetypes', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(
      `USE \`${source.db}\`; CREATE TABLE ty (id INT UNSIGNED PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, mi MEDIUMINT, bi BIGINT, bu BIGINT UNSIGNED,
        d65 DECIMAL(65,30), d5 DECIMAL(5,0), f FLOAT, db DOUBLE, dt DATE, ts TIMESTAMP(6) NULL, tm TIME(6), y YEAR, e ENUM('a','b,c'), st SET('x','y'),
        bt BIT(5), bn BINARY(4), vb VARBINARY(8), c CHAR(3), tx TEXT);
       INSERT INTO ty VALUES (4294967295, -128, 255, -8388608, -9223372036854775808, 18446744073709551615, '-12345678901234567890123456789012345.123456789012345678901234567890',
        99999, 3.14159, -2.25, '2024-02-29', '2038-01-19 03:14:07.999999', '-838:59:59.000000', 2155, 'b,c', 'x,y', b'10101', X'01', X'FF00', 'ab', 'long text'),
        (0, 0, 0, 0, 0, 0, 0, 0, 0.5, 1e300, '1000-01-01', '1970-01-01 00:00:01.000000', '00:00:00', 1901, 'a', '', b'0', X'', X'', '', ''),
        (7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
    );
    await source.capture();
    expect((await merge(source)).tables[0]).toMatchObject({ status: 'merged', mode: 'rewrite' });
    await expectEqual(source, ['ty']);
    await source.sql(`USE \`${source.db}\`; UPDATE ty SET f = -1.5, ts = '2000-01-01 00:00:00.5', e = 'a', bu = 1 WHERE id = 0; DELETE FROM ty WHERE id = 7`);
    await source.capture();
    expect((await merge(source)).tables[0]).toMatchObject({ status: 'merged', mode: 'incremental' });
    await expectEqual(source, ['ty']);
    await expectIcebird(source, 'ty', 'tx');
  });

  it('holds a table back while the re-snapshot a DDL asked for copies it, other tables merging on; then merges it whole', async () => {
    await using source = await testSource('iceresnap', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(`USE \`${source.db}\`; ${SETUP.slice(0, 2).join('; ')}; ${SETUP.slice(4).join('; ')}`);
    await source.capture();
    await merge(source);
    await expectEqual(source, ['t', 'tr']);
    // A column whose value for existing rows the binlog does not carry: `t resnapshot` and a snapshot job.
    // (MySQL refuses a nondeterministic default in a logged ALTER: an expression of the row instead.)
    const made = inject('stackServer') === 'mysql' ? "(CONCAT('made-', id))" : '(UUID())';
    await source.sql(
      `USE \`${source.db}\`; ALTER TABLE t ADD COLUMN made VARCHAR(40) DEFAULT ${made}; INSERT INTO t (id, name) VALUES (8, 'eight'); INSERT INTO tr VALUES (9, 'nine')`,
    );
    await source.capture();
    const held = await merge(source);
    expect(held.tables.find((r) => r.table.table === 't')).toMatchObject({ status: 'held-back' });
    expect(held.tables.find((r) => r.table.table === 'tr')).toMatchObject({ status: 'merged' });
    // The Iceberg table keeps its last complete state meanwhile.
    expect((await icebergRows(source, 't')).length).toBe(4);
    expect((await source.snapshot()).complete).toBe(true);
    await source.capture();
    expect((await merge(source)).tables.find((r) => r.table.table === 't')).toMatchObject({ status: 'merged', mode: 'rewrite' });
    await expectEqual(source, ['t', 'tr']);
  });

  it('a finished snapshot with pages past the committed position holds its table back, then merges whole: no early page applied twice', async () => {
    await using source = await testSource('icepages', { SLUICE_STARTUP: 'latest', SLUICE_SNAPSHOT_PAGE_ROWS: '2' });
    await source.capture();
    await source.sql(
      `USE \`${source.db}\`; ${SETUP.slice(4).join('; ')}; INSERT INTO tr VALUES (3, 'z'), (4, 'w'), (5, 'v'); CREATE TABLE other (id INT PRIMARY KEY)`,
    );
    await source.capture();
    await merge(source);
    // After page 1 (ids 1, 2) commits: id 1 changes and the poller commits past it, then the binlog
    // moves on, so pages 2 and 3 are read past the committed position.
    let commits = 0;
    const snapshot = await source.snapshot({
      tables: [{ db: source.db, table: 'tr' }],
      faults: {
        async hit(point) {
          if (point !== 'after-commit' || ++commits !== 1) return;
          await source.sql(`USE \`${source.db}\`; UPDATE tr SET v = 'changed' WHERE id = 1`);
          await source.capture();
          await source.sql(`USE \`${source.db}\`; INSERT INTO other VALUES (1)`);
        },
      },
    });
    expect(snapshot.complete).toBe(true);
    expect((await merge(source, { tables: ['tr'] })).tables[0]).toMatchObject({ status: 'held-back' });
    await source.capture();
    expect((await merge(source, { tables: ['tr'] })).tables[0]).toMatchObject({ status: 'merged' });
    await expectEqual(source, ['tr']);
    // Merged once: a later merge finds the job done and merges nothing again.
    expect((await merge(source, { tables: ['tr'] })).tables[0]).toMatchObject({ status: 'up-to-date' });
    await expectEqual(source, ['tr']);
  });

  it('`sluice iceberg --tables` merges the named tables through the CLI, as the schedule would', async () => {
    await using source = await testSource('icecli', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(`USE \`${source.db}\`; ${SETUP.join('; ')}`);
    await source.capture();
    const run = await sluice(['iceberg', '--tables', `${source.db}.t,${source.db}.log`], cliEnv(source));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^change log committed to commit \d+/);
    expect(lines.slice(1).sort()).toEqual([
      expect.stringMatching(
        new RegExp(
          `^merged  ${source.db}\\.log: rewrite, 3 rows written, 0 deletes → s3://.*/iceberg/${source.db}/log/metadata/00001-[0-9a-f-]+\\.metadata\\.json$`,
        ),
      ),
      expect.stringMatching(new RegExp(`^merged  ${source.db}\\.t: rewrite, 4 rows written, 0 deletes → s3://`)),
    ]);
    await expectEqual(source, ['t', 'log']);
    expect(await committedVersion(source, 'tr')).toBeUndefined();
    const again = await sluice(['iceberg'], cliEnv(source));
    expect(again.stdout).toContain(`ok      ${source.db}.t: up to date`);
    expect(again.stdout).toContain(`merged  ${source.db}.tr: rewrite, 2 rows written`);
  });

  it('a table whose merge was killed (lease still held) is busy for the schedule; `sluice iceberg` waits for the lease and merges it', async () => {
    await using source = await testSource('icelease', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(`USE \`${source.db}\`; ${SETUP.slice(0, 2).join('; ')}`);
    await source.capture();
    // A run that died holding the lease (it would have renewed it while alive).
    await source.clients.merges.acquire(source.config.sourceId, { db: source.db, table: 't' }, 'killed-run', Date.now() + 2000, Date.now());
    expect((await merge(source)).tables[0]).toMatchObject({ status: 'busy' });
    expect(await committedVersion(source, 't')).toBeUndefined();
    const run = await sluice(['iceberg'], cliEnv(source, { SLUICE_ICEBERG_LEASE_SECONDS: '2' }));
    expect(run.stdout).toContain(`merged  ${source.db}.t: rewrite, 4 rows written`);
    await expectEqual(source, ['t']);
  });

  it('compacts a table whose snapshot holds too many files, expires old snapshots and deletes only the files they alone used', async () => {
    await using source = await testSource('icehouse', { SLUICE_STARTUP: 'latest' });
    const config = source.configWith({ SLUICE_ICEBERG_COMPACT_FILES: '4', SLUICE_ICEBERG_RETENTION_HOURS: '1' });
    await source.capture();
    await source.sql(`USE \`${source.db}\`; ${SETUP.slice(0, 2).join('; ')}`);
    await source.capture();
    expect((await merge(source, { config })).tables[0]).toMatchObject({ status: 'merged', compacted: false });
    const compactions: boolean[] = [];
    for (const name of ['p', 'q', 'r']) {
      await source.sql(`UPDATE \`${source.db}\`.t SET name = '${name}' WHERE id = 1`);
      await source.capture();
      compactions.push(Boolean((await merge(source, { config })).tables[0]?.compacted));
      await expectEqual(source, ['t']);
    }
    // 1 bucket file, then a data and an equality-delete file per merge: compacted once the files
    // beyond the table's one bucket exceed 4 (7 files at the third).
    expect(compactions).toEqual([false, false, true]);
    const compacted = await committedVersion(source, 't');
    expect(compacted?.metadata.snapshots.length).toBeGreaterThan(3);
    const location = icebergLocation(source.config.prefix, { db: source.db, table: 't' });
    const files = async () => (await source.keys(`${location}/data/`)).sort();
    const before = await files();

    // Two hours later: every snapshot but the current one is past the retention. A first attempt
    // crashes after staging the expiry (its own run's files: the next attempt deletes them).
    const later = Date.now() + 2 * 3600 * 1000;
    expect((await merge(source, { config, clock: () => later, faults: crashAt('after-staging') })).tables[0]?.status).toBe('failed');
    expect(await source.keys(`${location}/metadata/m`)).toEqual(expect.arrayContaining([expect.stringMatching(/unreferenced/)]));
    const expired = (await merge(source, { config, clock: () => later })).tables[0];
    expect(expired).toMatchObject({ status: 'merged', rowsWritten: 0 });
    expect(expired?.expiredSnapshots).toBe((compacted?.metadata.snapshots.length ?? 0) - 1);
    const current = await committedVersion(source, 't');
    expect(current?.metadata.snapshots).toHaveLength(1);
    const after = await files();
    expect(after.length).toBeLessThan(before.length);
    // What is left is exactly what the current snapshot lists.
    const snapshot = current?.metadata.snapshots[0];
    expect(Number(snapshot?.summary['total-data-files']) + Number(snapshot?.summary['total-delete-files'])).toBe(after.length);
    await expectEqual(source, ['t']);
    await expectIcebird(source, 't', 'name');
    expect(await source.keys(`${location}/metadata/m`)).toEqual(expect.not.arrayContaining([expect.stringMatching(/unreferenced/)]));
  });

  it('a seeded random workload, merged after each capture with crashes at random commit steps, reads back as MariaDB every time', async () => {
    await using source = await testSource('icerand', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(
      `USE \`${source.db}\`; CREATE TABLE k (id INT PRIMARY KEY, v VARCHAR(10), n BIGINT UNSIGNED, d DECIMAL(10,2)); CREATE TABLE l (a INT, b VARCHAR(5))`,
    );
    let seed = 12;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = (n: number) => Math.floor(random() * n);
    const points: FaultPoint[] = ['after-staging', 'after-commit', 'before-clear'];
    let crashes = 0;
    for (let round = 0; round < 8; round++) {
      const statements: string[] = [];
      for (let i = 0; i < 12; i++) {
        const id = pick(30);
        const op = pick(6);
        if (op === 0)
          statements.push(
            `INSERT IGNORE INTO k (id, v, n, d) VALUES (${id}, 'v${pick(100)}', ${pick(2) ? '18446744073709551615' : pick(1000)}, ${pick(10000) / 100})`,
          );
        else if (op === 1) statements.push(`UPDATE k SET v = 'u${round}', d = d + 1 WHERE id = ${id}`);
        else if (op === 2) statements.push(`DELETE FROM k WHERE id = ${id}`);
        else if (op === 3) statements.push(`INSERT INTO l VALUES (${pick(5)}, 'x${pick(3)}')`);
        else if (op === 4) statements.push(`DELETE FROM l WHERE a = ${pick(5)} LIMIT 1`);
        else statements.push(`UPDATE k SET id = ${30 + round * 40 + i} WHERE id = ${id}`);
      }
      if (round === 4) statements.push("ALTER TABLE k ADD COLUMN note VARCHAR(5); UPDATE k SET note = 'n' WHERE id % 2 = 0");
      if (round === 6) statements.push('TRUNCATE TABLE l; INSERT INTO l VALUES (1, NULL), (1, NULL)');
      await source.sql(`USE \`${source.db}\`; ${statements.join('; ')}`);
      await source.capture();
      if (pick(2)) {
        const crashed = await merge(source, { faults: crashAt(points[pick(points.length)] as FaultPoint) });
        crashes += crashed.tables.filter((t) => t.status === 'failed').length;
      }
      const merged = await merge(source);
      expect(merged.tables.filter((t) => t.status !== 'merged' && t.status !== 'up-to-date')).toEqual([]);
      await expectEqual(source, ['k', 'l']);
    }
    expect(crashes).toBeGreaterThan(2);
    await expectIcebird(source, 'k', 'v');
  });

  it('a merge that cannot renew its lease stops before writing anything, and the next run merges the table', async () => {
    await using source = await testSource('icelease', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(`USE \`${source.db}\`; ${SETUP.slice(0, 2).join('; ')}`);
    await source.capture();
    expect((await merge(source)).tables[0]).toMatchObject({ status: 'merged' });
    await source.sql(`USE \`${source.db}\`; UPDATE t SET name = 'late' WHERE id = 1; INSERT INTO t (id, name) VALUES (8, 'eight')`);
    await source.capture();
    const location = icebergLocation(source.config.prefix, { db: source.db, table: 't' });
    const before = await source.keys(`${location}/`);

    // Time runs out right after the lease is taken, and DynamoDB refuses every renewal: the run
    // must not write (another run may hold the lease by then and stage the same merge).
    let skew = 0;
    const { merges } = source.clients;
    const stalled = Object.assign(Object.create(merges) as typeof merges, {
      acquire: async (...args: Parameters<typeof merges.acquire>) => {
        const state = await merges.acquire(...args);
        skew = source.config.iceberg.leaseMs;
        return state;
      },
      renew: async () => {
        throw new Error('DynamoDB unreachable');
      },
    });
    const { clients } = source;
    const lost = await runIcebergMerge(
      {
        config: source.config,
        s3: clients.s3,
        store: clients.store,
        snapshots: clients.snapshots,
        merges: stalled,
        log: silentLog,
        clock: () => Date.now() + skew,
      },
      { tables: [{ db: source.db, table: 't' }], owner: 'stalled-merge' },
    );
    expect(lost.tables[0]?.status).toBe('failed');
    expect(lost.tables[0]?.error).toBeInstanceOf(LeaseLostError);
    expect(await source.keys(`${location}/`)).toEqual(before);

    expect((await merge(source)).tables[0]).toMatchObject({ status: 'merged' });
    await expectEqual(source, ['t']);
  });

  it('a merge that outlasts its lease by far keeps writing while its renewals succeed', async () => {
    await using source = await testSource('icerenew', { SLUICE_STARTUP: 'latest' });
    const config = source.configWith({ SLUICE_ICEBERG_LEASE_SECONDS: '2' });
    await source.capture();
    await source.sql(`USE \`${source.db}\`; ${SETUP.slice(0, 2).join('; ')}`);
    await source.capture();
    // A stall of twice the lease between staging and the commit: the commit and the publish after
    // it happen well past the first lease's writable window, inside the renewed one.
    const stall = { hit: (point: FaultPoint) => (point === 'after-staging' ? new Promise<void>((resolve) => setTimeout(resolve, 4000)) : undefined) };
    expect((await merge(source, { config, faults: stall })).tables[0]).toMatchObject({ status: 'merged' });
    await expectEqual(source, ['t']);
  });

  it('a run that lost its lease cannot land a write on the committed version; a late version-hint.text is put right by the next run', async () => {
    await using source = await testSource('icelate', { SLUICE_STARTUP: 'latest' });
    await source.capture();
    await source.sql(`USE \`${source.db}\`; ${SETUP.slice(0, 2).join('; ')}`);
    await source.capture();
    await merge(source);
    await source.sql(`USE \`${source.db}\`; UPDATE t SET name = 'changed' WHERE id = 1`);
    await source.capture();
    await merge(source);
    const committed = await committedVersion(source, 't');
    const location = icebergLocation(source.config.prefix, { db: source.db, table: 't' });
    // What a run that lost its lease while staging version 2 writes late: its own tag's keys, never
    // the committed one's; and an old hint from a publish of version 1 that was in flight.
    const late = metadataKey(location, committed?.version ?? 0, 'm000000000002_stale');
    expect(committed?.metadataKey).not.toBe(late);
    await source.clients.s3.send(new PutObjectCommand({ Bucket: source.config.bucket, Key: late, Body: 'a stale run' }));
    await source.clients.s3.send(new PutObjectCommand({ Bucket: source.config.bucket, Key: versionHintKey(location), Body: '1' }));
    expect((await committedVersion(source, 't'))?.metadata).toEqual(committed?.metadata);

    expect((await merge(source)).tables[0]?.status).toBe('up-to-date');
    const hint = await source.clients.s3.send(new GetObjectCommand({ Bucket: source.config.bucket, Key: versionHintKey(location) }));
    expect(await hint.Body?.transformToString()).toBe(String(committed?.version));
    await expectEqual(source, ['t']);
    await expectIcebird(source, 't', 'name');
  });

  describe.each<FaultPoint>(['after-staging', 'after-commit', 'before-clear'])('a crash %s', (point) => {
    it('is finished or redone by the next merge: same table, no duplicate, no extra version', async () => {
      await using source = await testSource('icecrash', { SLUICE_STARTUP: 'latest' });
      await source.capture();
      await source.sql(`USE \`${source.db}\`; ${SETUP.slice(0, 2).join('; ')}`);
      await source.capture();
      expect((await merge(source)).tables[0]).toMatchObject({ status: 'merged' });
      const before = await committedVersion(source, 't');
      await source.sql(
        `USE \`${source.db}\`; UPDATE t SET name = 'changed' WHERE id = 1; DELETE FROM t WHERE id = 2; INSERT INTO t (id, name) VALUES (7, 'seven')`,
      );
      await source.capture();

      const crashed = await merge(source, { faults: crashAt(point) });
      expect(crashed.tables[0]?.status).toBe('failed');
      expect(crashed.tables[0]?.error).toBeInstanceOf(InjectedFault);
      const ledger = await source.clients.merges.get(source.config.sourceId, { db: source.db, table: 't' });
      // Before the write the ledger is where it was; after it, it names the new version with a publish pending.
      const location = icebergLocation(source.config.prefix, { db: source.db, table: 't' });
      const planted = [
        `${location}/data/m${String((ledger?.mergeSeq ?? 0) + 1).padStart(12, '0')}_0a1b2c3d-b0007.parquet`,
        `${location}/metadata/v99.metadata.json`,
      ];
      if (point === 'after-staging') {
        expect(ledger).toMatchObject({ metadataKey: before?.metadataKey, pending: undefined });
        // What a crashed attempt of this merge might have staged (its own tag): the redo deletes it.
        for (const key of planted) await source.clients.s3.send(new PutObjectCommand({ Bucket: source.config.bucket, Key: key, Body: 'junk' }));
      } else expect(ledger?.pending).toBeDefined();

      const next = await merge(source);
      expect(next.tables[0]?.status).toBe(point === 'after-staging' ? 'merged' : 'up-to-date');
      await expectEqual(source, ['t']);
      await expectIcebird(source, 't', 'name');
      const after = await committedVersion(source, 't');
      // Exactly one version more: the redo rewrote the crashed run's keys instead of adding a commit.
      expect(after?.version).toBe((before?.version ?? 0) + 1);
      const metadata = (await source.keys(`${icebergLocation(source.config.prefix, { db: source.db, table: 't' })}/metadata/`)).filter((k) =>
        k.endsWith('.metadata.json'),
      );
      // Each version once as the run staged it (<N>-<uuid>) and once as published for file-catalog readers (v<N>).
      const versions = Array.from({ length: after?.version ?? 0 }, (_, i) => i + 1);
      expect(metadata.filter((k) => /\/metadata\/\d{5}-/.test(k)).map((k) => Number(/\/(\d+)-[^/]+$/.exec(k)?.[1]))).toEqual(versions);
      expect(metadata.filter((k) => /\/v\d+\.metadata\.json$/.test(k))).toHaveLength(versions.length);
      for (const key of planted) expect(await source.keys(key)).toEqual([]);
      expect((await source.clients.merges.get(source.config.sourceId, { db: source.db, table: 't' }))?.pending).toBeUndefined();
    });
  });
});
