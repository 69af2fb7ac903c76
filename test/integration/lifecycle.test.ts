import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config/config.ts';
import { ErrorCode, type SluiceError } from '../../lib/errors.ts';
import { silentLog } from '../../lib/log.ts';
import { materialize } from '../../lib/materialize/write.ts';
import { requestSnapshot } from '../../lib/snapshot/plan.ts';
import { runSnapshotWorker } from '../../lib/snapshot/worker.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { verify } from '../../lib/verify/verify.ts';
import { fold, loadHistory, mysqlRows } from '../support/fold.ts';
import { type TestSource, testSource } from '../support/source.ts';

/*
 * Table lifecycle against the real stack: each scenario's statements run once with a capture after
 * every step (caught up) and once all before one capture (lagging: the DDL sits between events not
 * yet read, and information_schema is already newer). Either way, the output materialized by the
 * format's rule (test/support/fold.ts, written from docs/FORMAT.md) must equal MariaDB's table.
 */

/** The table's rows by the format's rule next to MySQL's, both as sluice encodes them. */
async function compare(source: TestSource, table: string, db = source.db) {
  const events = (await source.events()).filter((e) => e.db === db && e.table === table);
  const history = await loadHistory(source.clients.s3, source.config.bucket, source.config.prefix, source.config.sourceId, db, table);
  return { output: history.size ? fold(events, history) : [], mysql: await mysqlRows(await mysqlTarget(source.config), db, table), events };
}

/** The table's rows as lib/materialize gives them (`sluice materialize`), normalized like mysqlRows. */
async function materialized(source: TestSource, table: string, db = source.db, config: Config = source.config): Promise<{ rows: string[]; gone: boolean }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-lifecycle-'));
  try {
    const result = await materialize({ config, s3: source.clients.s3 }, { db, table }, { out: join(dir, 'rows.jsonl') });
    const rows = readFileSync(join(dir, 'rows.jsonl'), 'utf8').split('\n').filter(Boolean);
    return { rows: rows.map((r) => JSON.stringify(JSON.parse(r))).sort(), gone: result.gone };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `sluice verify` over the source's tables finds no difference (the output is caught up). */
async function expectVerified(source: TestSource, config: Config = source.config) {
  const verdict = await verify({ config, s3: source.clients.s3, store: source.clients.store, snapshots: source.clients.snapshots });
  expect(verdict.tables.filter((t) => t.status !== 'compared')).toEqual([]);
  expect(verdict, JSON.stringify(verdict.tables.map((t) => ({ t: t.table, m: t.examples, c: [t.missingColumns, t.extraColumns] })))).toMatchObject({
    ok: true,
    orphans: [],
  });
}

/** The first run with `initial` startup: streaming from now, and the tables' existing rows copied. */
async function start(source: TestSource, config = source.config): Promise<string> {
  await source.capture({ config });
  const { job, complete } = await source.snapshot({ config });
  expect(complete).toBe(true);
  return job.id;
}

/** Runs the steps caught up (a capture after each) or lagging (one capture after all). */
async function play(source: TestSource, steps: string[], lagging: boolean) {
  for (const step of steps) {
    await source.sql(step);
    if (!lagging) await source.capture();
  }
  await source.capture();
}

/** Captures, then copies what DDL asked to be copied again, then captures what changed meanwhile. */
async function settle(source: TestSource) {
  await source.capture();
  const job = await source.clients.snapshots.latestJob(source.config.sourceId);
  if (job && job.status !== 'done') expect((await source.snapshot()).complete).toBe(true);
  await source.capture();
}

async function expectEqual(source: TestSource, tables: string[]) {
  for (const table of tables) {
    const { output, mysql } = await compare(source, table);
    expect(output, `${table}: the output by the rule`).toEqual(mysql);
    expect((await materialized(source, table)).rows, `${table}: sluice materialize`).toEqual(mysql);
  }
  await expectVerified(source);
}

const SETUP = "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10), d DECIMAL(10,2)); INSERT INTO a VALUES (1,'one',1.5),(2,'two',2.25),(3,'three',3)";

describe.each([false, true])('table lifecycle, lagging=%s (real stack)', (lagging) => {
  it('TRUNCATE retracts every earlier row; rows written after it stay', async () => {
    await using source = await testSource('trunc', { SLUICE_STARTUP: 'initial' });
    await source.sql(SETUP);
    await start(source);
    await play(source, ["INSERT INTO a VALUES (4,'four',4)", 'TRUNCATE TABLE a', "INSERT INTO a VALUES (5,'five',5)"], lagging);
    await expectEqual(source, ['a']);
    const { events } = await compare(source, 'a');
    expect(events.filter((e) => e.op === 't').map((e) => e.ddl?.kind)).toEqual(['truncate']);
  });

  it('DROP TABLE IF EXISTS of a table that never existed writes nothing and capture goes on', async () => {
    await using source = await testSource('dropnone', { SLUICE_STARTUP: 'initial' });
    await source.sql(SETUP);
    await start(source);
    await play(source, ['DROP TABLE IF EXISTS never_made', "INSERT INTO a VALUES (4,'four',4)"], lagging);
    await expectEqual(source, ['a']);
    expect((await source.events()).filter((e) => e.op === 't')).toEqual([]);
  });

  it('DROP then CREATE with other columns: the old rows are gone, the new table is exact', async () => {
    await using source = await testSource('dropcreate', { SLUICE_STARTUP: 'initial' });
    await source.sql(SETUP);
    await start(source);
    await play(
      source,
      [
        'DROP TABLE a',
        "CREATE TABLE a (k VARCHAR(5) PRIMARY KEY, n INT NOT NULL); INSERT INTO a VALUES ('x', 1), ('y', 2)",
        "UPDATE a SET n = 7 WHERE k = 'x'",
      ],
      lagging,
    );
    await expectEqual(source, ['a']);
    const { events } = await compare(source, 'a');
    expect(events.filter((e) => e.op === 't').map((e) => e.ddl?.kind)).toEqual(['drop', 'create']);
  });

  it('ADD COLUMN with a default, DROP COLUMN, RENAME COLUMN and a DECIMAL widening are derived, not copied', async () => {
    await using source = await testSource('alter', { SLUICE_STARTUP: 'initial' });
    await source.sql(SETUP);
    const initial = await start(source);
    await play(
      source,
      [
        "ALTER TABLE a ADD COLUMN w VARCHAR(5) DEFAULT 'x'",
        "INSERT INTO a VALUES (4,'four',4,'w4')",
        'ALTER TABLE a ADD COLUMN n INT NOT NULL',
        'ALTER TABLE a DROP COLUMN v',
        'ALTER TABLE a MODIFY d DECIMAL(12,4)',
        'ALTER TABLE a RENAME COLUMN w TO w2',
        "UPDATE a SET w2 = 'upd' WHERE id = 2",
      ],
      lagging,
    );
    await expectEqual(source, ['a']);
    // Derived: no snapshot besides the initial one was requested, so no row was copied again.
    expect((await source.clients.snapshots.latestJob(source.config.sourceId))?.id).toBe(initial);
    expect((await source.events()).filter((e) => e.op === 'r')).toHaveLength(3);
  });

  it('a primary-key change re-keys the rows: old keys are retracted, no row twice', async () => {
    await using source = await testSource('pk', { SLUICE_STARTUP: 'initial' });
    await source.sql("CREATE TABLE a (id INT PRIMARY KEY, code VARCHAR(5) NOT NULL, v INT); INSERT INTO a VALUES (1,'a',1),(2,'b',2),(3,'c',3)");
    await start(source);
    await play(
      source,
      [
        "UPDATE a SET code = 'z' WHERE id = 3",
        'ALTER TABLE a DROP PRIMARY KEY, ADD PRIMARY KEY (code)',
        "UPDATE a SET v = 20 WHERE code = 'b'",
        "DELETE FROM a WHERE code = 'a'",
      ],
      lagging,
    );
    await expectEqual(source, ['a']);
  });

  it('a table without a key is a multiset: a delete or update touches one copy of identical rows', async () => {
    await using source = await testSource('keyless', { SLUICE_STARTUP: 'initial' });
    await source.sql("CREATE TABLE k (v VARCHAR(5), n INT); INSERT INTO k VALUES ('x',1),('x',1),('x',1),('y',2)");
    await start(source);
    await play(source, ["DELETE FROM k WHERE v = 'x' LIMIT 1", "UPDATE k SET n = 5 WHERE v = 'x' LIMIT 1", "INSERT INTO k VALUES ('y',2)"], lagging);
    await expectEqual(source, ['k']);
  });

  it('a table keyed only by a UNIQUE NOT NULL key is paged by it, and its snapshot rows carry the key its binlog events do', async () => {
    await using source = await testSource('unique-key', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_CHUNK_ROWS: '2', SLUICE_SNAPSHOT_PAGE_ROWS: '2' });
    // `maybe` is unique but nullable, so it cannot identify a row; `code` can.
    await source.sql(
      "CREATE TABLE u (maybe INT NULL UNIQUE, code VARCHAR(8) NOT NULL, n INT, UNIQUE KEY by_code (code)); INSERT INTO u VALUES (NULL,'c1',1),(NULL,'c2',2),(3,'c3',3),(4,'c4',4),(5,'c5',5)",
    );
    const id = await start(source);
    const job = await source.clients.snapshots.job(source.config.sourceId, id);
    expect(job?.tables?.map((t) => [t.key, t.chunks > 1])).toEqual([[['code'], true]]);
    await play(source, ["UPDATE u SET n = 20 WHERE code = 'c2'", "DELETE FROM u WHERE code = 'c4'", "UPDATE u SET code = 'c9' WHERE code = 'c5'"], lagging);
    await expectEqual(source, ['u']);
    const { events } = await compare(source, 'u');
    const keys = (op: string) => events.filter((e) => e.op === op).map((e) => e.key);
    expect(keys('r')).toContainEqual({ code: 'c1' });
    expect(keys('u')).toEqual([{ code: 'c2' }]);
    expect(keys('d')).toContainEqual({ code: 'c4' });
  });

  it('CREATE TABLE … SELECT: its rows arrive with it', async () => {
    await using source = await testSource('ctas', { SLUICE_STARTUP: 'initial' });
    await source.sql(SETUP);
    await start(source);
    await play(source, ['CREATE TABLE b AS SELECT id, v FROM a WHERE id < 3', "INSERT INTO b VALUES (9, 'nine')"], lagging);
    await expectEqual(source, ['a', 'b']);
    // docs/FORMAT.md: `t create`, then the rows as `c` events (MySQL 8.0.21+ logs them in the DDL's transaction).
    const { events } = await compare(source, 'b');
    expect(events.map((e) => (e.op === 't' ? `t ${e.ddl?.kind}` : e.op))).toEqual(['t create', 'c', 'c', 'c']);
  });

  it('CREATE TABLE … SELECT of a table the filters leave out: the captured tables stream on', async () => {
    await using source = await testSource('ctas-out', { SLUICE_STARTUP: 'initial' });
    const config = source.configWith({ SLUICE_INCLUDE: `${source.db}\\.a` });
    await source.sql(SETUP);
    await start(source, config);
    for (const step of ['CREATE TABLE b AS SELECT id, v FROM a', "INSERT INTO a VALUES (7,'sev',7)"]) {
      await source.sql(step);
      if (!lagging) await source.capture({ config });
    }
    await source.capture({ config });
    const { output, mysql, events } = await compare(source, 'a');
    expect(output).toEqual(mysql);
    expect(events.some((e) => e.op === 'c')).toBe(true);
    expect((await compare(source, 'b')).events).toEqual([]);
  });

  it('a change the binlog cannot carry (narrowing, charset) resets the table and copies it again', async () => {
    await using source = await testSource('lossy', { SLUICE_STARTUP: 'initial' });
    await source.sql(SETUP);
    await start(source);
    await play(
      source,
      [
        "SET SESSION sql_mode = ''; ALTER TABLE a MODIFY v VARCHAR(3); SET SESSION sql_mode = DEFAULT",
        "INSERT INTO a VALUES (7,'sev',7)",
        'ALTER TABLE a CONVERT TO CHARACTER SET latin1',
      ],
      lagging,
    );
    await settle(source);
    await expectEqual(source, ['a']);
    const { events } = await compare(source, 'a');
    expect(events.filter((e) => e.op === 't').map((e) => e.ddl?.kind)).toContain('resnapshot');
  });

  it('RENAME out of the captured set retracts; RENAME into it copies the table', async () => {
    await using source = await testSource('rename', { SLUICE_STARTUP: 'initial' });
    const db = source.db;
    const config = source.configWith({ SLUICE_INCLUDE: `${db}\\.(a|b|c)` });
    await source.sql(`${SETUP}; CREATE TABLE outside (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO outside VALUES (1,'o1'),(2,'o2')`);
    await start(source, config);
    const steps = ['RENAME TABLE a TO gone', 'RENAME TABLE outside TO b', "INSERT INTO b VALUES (3,'o3')", 'CREATE TABLE c LIKE b'];
    for (const step of steps) {
      await source.sql(step);
      if (!lagging) await source.capture({ config });
    }
    await source.capture({ config });
    const job = await source.clients.snapshots.latestJob(source.config.sourceId);
    if (job && job.status !== 'done') await source.snapshot({ config });
    await source.capture({ config });
    for (const table of ['a', 'b', 'c']) {
      const { output, mysql } = await compare(source, table);
      expect(output, table).toEqual(mysql);
      expect((await materialized(source, table, db, config)).rows, `${table}: sluice materialize`).toEqual(mysql);
    }
    expect((await materialized(source, 'a', db, config)).gone).toBe(true);
    await expectVerified(source, config);
  });

  it('DROP DATABASE retracts every table of it', async () => {
    await using source = await testSource('dropdb', { SLUICE_STARTUP: 'initial' });
    const other = await source.database('other');
    await source.sql(`CREATE TABLE \`${other}\`.t (id INT PRIMARY KEY); INSERT INTO \`${other}\`.t VALUES (1),(2)`);
    await start(source);
    await play(source, [`INSERT INTO \`${other}\`.t VALUES (3)`, `DROP DATABASE \`${other}\``], lagging);
    const { output } = await compare(source, 't', other);
    expect(output).toEqual([]);
    expect(await materialized(source, 't', other)).toEqual({ rows: [], gone: true });
    await expectVerified(source);
  });
});

describe('DDL sluice cannot classify, and DML logged as a statement (real stack)', () => {
  it('stops before DML logged as a statement on a captured table; ignores it on other tables', async () => {
    await using source = await testSource('stmt', { SLUICE_STARTUP: 'initial' });
    await source.sql(`${SETUP}; CREATE TABLE other (id INT PRIMARY KEY)`);
    const config = source.configWith({ SLUICE_INCLUDE: `${source.db}\\.a` });
    await start(source, config);
    await source.sql("SET SESSION binlog_format = 'STATEMENT'; INSERT INTO other VALUES (1); SET SESSION binlog_format = 'ROW'");
    await source.capture({ config });
    expect((await source.state())?.error).toBeUndefined();
    const before = (await source.state())?.position;
    await source.sql("SET SESSION binlog_format = 'STATEMENT'; UPDATE a SET v = 'stmt' WHERE id = 1; SET SESSION binlog_format = 'ROW'");
    const error = await source.capture({ config }).catch((e: unknown) => e);
    expect((error as SluiceError).code).toBe(ErrorCode.STATEMENT_DML);
    expect((error as Error).message).toMatch(/binlog_format=STATEMENT or MIXED/);
    expect((await source.state())?.position).toEqual(before);
  });
});

describe('DDL while a table is snapshotted (real stack)', () => {
  it('pages read after a DDL are read under the new structure; a key change copies the table again by the new key', async () => {
    await using source = await testSource('ddl-mid-snapshot', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_PAGE_ROWS: '4', SLUICE_SNAPSHOT_CHUNK_ROWS: '8' });
    await source.sql(
      "CREATE TABLE a (id INT PRIMARY KEY, code VARCHAR(8) NOT NULL, v INT); INSERT INTO a SELECT seq, CONCAT('c', 40 - seq), seq FROM seq_1_to_30",
    );
    await source.capture();
    // DDL lands between the worker's page commits: the worker has read the table's columns and key before.
    const ddl = ['ALTER TABLE a ADD COLUMN w INT NOT NULL DEFAULT 7', 'ALTER TABLE a DROP PRIMARY KEY, ADD PRIMARY KEY (code)', 'ALTER TABLE a DROP COLUMN v'];
    let commits = 0;
    const snapshot = await source.snapshot({
      faults: {
        async hit(point) {
          if (point !== 'after-commit') return;
          commits++;
          if (commits % 2 === 0 && ddl.length) await source.sql(ddl.shift() as string);
        },
      },
    });
    expect(snapshot.complete).toBe(true);
    expect(ddl).toEqual([]);
    await settle(source);
    await expectEqual(source, ['a']);
  });

  it('a table dropped or renamed away while it is snapshotted ends its part of the job; the renamed table is copied under its new name', async () => {
    await using source = await testSource('gone-mid-snapshot', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_PAGE_ROWS: '4', SLUICE_SNAPSHOT_CHUNK_ROWS: '8' });
    await source.sql(
      'CREATE TABLE a (id INT PRIMARY KEY, v INT); INSERT INTO a SELECT seq, seq FROM seq_1_to_20; CREATE TABLE c (id INT PRIMARY KEY); INSERT INTO c SELECT seq FROM seq_1_to_20',
    );
    await source.capture();
    const ddl = ['RENAME TABLE a TO b', 'DROP TABLE c'];
    let commits = 0;
    const first = await source.snapshot({
      faults: {
        async hit(point) {
          if (point === 'after-commit' && ++commits === 1) for (const statement of ddl.splice(0)) await source.sql(statement);
        },
      },
    });
    expect(first.complete).toBe(true);
    await settle(source);
    await expectEqual(source, ['b']);
    expect((await materialized(source, 'a')).gone).toBe(true);
    expect((await materialized(source, 'c')).gone).toBe(true);
  });

  it('a table renamed away between the snapshot request and its plan is left out; a request naming no table is refused', async () => {
    await using source = await testSource('gone-before-plan', { SLUICE_STARTUP: 'initial' });
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v INT); INSERT INTO a SELECT seq, seq FROM seq_1_to_5');
    await start(source);
    await expect(source.snapshot({ tables: [{ db: source.db, table: 'nope' }] })).rejects.toMatchObject({
      code: ErrorCode.TABLE_NOT_FOUND,
      message: expect.stringContaining('nope'),
    });
    await source.sql('CREATE VIEW v AS SELECT * FROM a');
    await expect(source.snapshot({ tables: [{ db: source.db, table: 'v' }] })).rejects.toMatchObject({
      message: expect.stringContaining('a view (information_schema TABLE_TYPE), not a base table'),
    });
    const job = await requestSnapshot({ ...source.clients, config: source.config, log: silentLog }, [{ db: source.db, table: 'a' }]);
    await source.sql('RENAME TABLE a TO b; INSERT INTO b VALUES (6, 6)');
    const result = await runSnapshotWorker({ ...source.clients, config: source.config, log: silentLog }, { budgetMs: 30_000, snapshotId: job.id });
    expect(result.complete).toBe(true);
    expect((await source.clients.snapshots.job(source.config.sourceId, job.id))?.tables).toEqual([]);
    await settle(source);
    await expectEqual(source, ['b']);
    expect((await materialized(source, 'a')).gone).toBe(true);
  });
});
