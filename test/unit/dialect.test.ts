import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../lib/source/mysql/dialect/dialect.ts';
import { mysqlExecutedAt } from '../../lib/source/mysql/dialect/mysql.ts';
import { masterPosition } from '../../lib/source/mysql/server.ts';
import { readAtKnownPosition } from '../../lib/verify/mysql-read.ts';
import { FakeServer } from '../support/fake-mysql.ts';

/** The servers sluice is said to support, each as its manual documents it (test/support/fake-mysql.ts). */
const SERVERS = [
  { version: '8.0.46', comment: 'MySQL Community Server - GPL', status: 'SHOW MASTER STATUS', reset: 'RESET MASTER' },
  { version: '8.0.39', comment: 'Source distribution', status: 'SHOW MASTER STATUS', reset: 'RESET MASTER' }, // Aurora MySQL 3 reports its MySQL version
  { version: '8.2.0', comment: 'MySQL Community Server - GPL', status: 'SHOW BINARY LOG STATUS', reset: 'RESET BINARY LOGS AND GTIDS' },
  { version: '8.4.7', comment: 'MySQL Community Server - GPL', status: 'SHOW BINARY LOG STATUS', reset: 'RESET BINARY LOGS AND GTIDS' },
  { version: '9.6.0', comment: 'MySQL Community Server - GPL', status: 'SHOW BINARY LOG STATUS', reset: 'RESET BINARY LOGS AND GTIDS' },
  { version: '10.11.19-MariaDB-0+deb12u1', comment: 'Debian 12', status: 'SHOW MASTER STATUS', reset: 'RESET MASTER' },
  { version: '11.4.5-MariaDB', comment: 'mariadb.org binary distribution', status: 'SHOW MASTER STATUS', reset: 'RESET MASTER' },
];

describe('the dialect, chosen once per connection from the server version', () => {
  it.each(SERVERS)('$version: the binlog end is read with $status', async ({ version, comment, status, reset }) => {
    const server = new FakeServer({ version, comment, files: [{ name: 'binlog.000007', size: 1307 }] });
    expect(await masterPosition(server)).toEqual({ file: 'binlog.000007', pos: 1307 });
    expect(await masterPosition(server)).toEqual({ file: 'binlog.000007', pos: 1307 });
    // The flavor was asked once for both reads; no statement was tried and refused.
    expect(server.statements).toEqual(['SELECT VERSION() AS version, @@version_comment AS comment', status, status]);
    expect((await dialectOf(server)).resetStatement).toBe(reset);
  });

  it('the fake refuses the statement of the other versions, as the servers do (so a wrong choice fails above)', async () => {
    await expect(new FakeServer({ version: '8.4.7' }).query('SHOW MASTER STATUS')).rejects.toMatchObject({ errno: 1064 });
    await expect(new FakeServer({ version: '9.6.0' }).query('SHOW MASTER STATUS')).rejects.toMatchObject({ errno: 1064 });
    await expect(new FakeServer({ version: '8.0.46' }).query('SHOW BINARY LOG STATUS')).rejects.toMatchObject({ errno: 1064 });
  });

  it.each(SERVERS)('$version: binlog retention is read from the variables that version has', async ({ version, comment }) => {
    const server = new FakeServer({ version, comment });
    expect(await (await dialectOf(server)).retentionSeconds(server)).toBe(86_400);
  });

  it('binlog off is PREFLIGHT_LOG_BIN on every flavor', async () => {
    for (const version of ['8.4.7', '10.11.19-MariaDB']) {
      const server = new FakeServer({ version });
      server.query = async (sql) => (sql.startsWith('SELECT VERSION()') ? [[{ version, comment: '' }], []] : [[], []]);
      await expect(masterPosition(server)).rejects.toMatchObject({ code: 'PREFLIGHT_LOG_BIN' });
    }
  });

  it('GTIDs before a file: MySQL reads its Previous_gtids, MariaDB asks BINLOG_GTID_POS', async () => {
    const uuid = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
    const mysql = new FakeServer({ version: '8.4.7', files: [{ name: 'binlog.000002', size: 500, before: `${uuid}:1-5` }] });
    expect(await (await dialectOf(mysql)).gtidsBefore(mysql, 'binlog.000002')).toBe(`${uuid}:1-5`);
    const mariadb = new FakeServer({ version: '10.11.19-MariaDB', files: [{ name: 'binlog.000002', size: 500, before: '0-1-42' }] });
    expect(await (await dialectOf(mariadb)).gtidsBefore(mariadb, 'binlog.000002')).toBe('0-1-42');
    expect(await (await dialectOf(mariadb)).gtidState(mariadb)).toBeUndefined();
    const state = await (await dialectOf(mysql)).gtidState(new FakeServer({ version: '8.4.7', gtidExecuted: `${uuid}:1-9`, gtidPurged: `${uuid}:1-2` }));
    expect(state && { on: state.on, executed: String(state.executed), purged: String(state.purged) }).toEqual({
      on: true,
      executed: `${uuid}:1-9`,
      purged: `${uuid}:1-2`,
    });
  });
});

describe('the GTIDs executed at a position a run starts from (Dialect.withGtids)', () => {
  const uuid = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
  const other = '4f22ab58-82db-22f2-af44-d91bb953a673';
  // binlog.000003: Format_desc, Previous_gtids, then three transactions (Gtid, Query, Xid), and a fourth after the position.
  const file = {
    name: 'binlog.000003',
    size: 1000,
    before: `${uuid}:1-5`,
    events: [4, 126, 200, 260, 300, 400, 460, 500, 600, 660, 700, 800, 860, 900],
    types: { 126: 'Previous_gtids', 260: 'Query', 300: 'Xid', 460: 'Query', 500: 'Xid', 660: 'Query', 700: 'Xid', 860: 'Query', 900: 'Xid' },
    gtids: { 200: `${uuid}:6`, 400: `${other}:1`, 600: `${uuid}:7`, 800: `${uuid}:8` },
  };

  it('MySQL: the file’s Previous_gtids, every GTID logged before the position (page after page), and gtid_purged', async () => {
    for (const page of [1, 2, 5000]) {
      const server = new FakeServer({ version: '8.0.46', files: [file], gtidPurged: `${uuid}:1-3,${other}:100` });
      const at = await (await dialectOf(server)).withGtids(server, { file: 'binlog.000003', pos: 800 });
      expect({ page, gtidSet: at.gtidSet }).toEqual({ page, gtidSet: `${uuid}:1-7,${other}:1:100` });
      const exact = await mysqlExecutedAt(server, { file: 'binlog.000003', pos: 800 }, page);
      expect({ page, exact }).toEqual({ page, exact: `${uuid}:1-7,${other}:1` });
    }
  });

  it('MySQL: a position that has its set, gtid_mode OFF, or past 4 GiB is left as it is; at the file’s start it is the Previous_gtids', async () => {
    const server = new FakeServer({ version: '8.4.7', files: [file] });
    const dialect = await dialectOf(server);
    const stored = { file: 'binlog.000003', pos: 800, gtidSet: `${uuid}:1-2` };
    expect(await dialect.withGtids(server, stored)).toBe(stored);
    const off = new FakeServer({ version: '8.4.7', files: [file], gtidMode: 'OFF' });
    expect(await dialect.withGtids(off, { file: 'binlog.000003', pos: 800 })).toEqual({ file: 'binlog.000003', pos: 800 });
    expect(await dialect.withGtids(server, { file: 'binlog.000003', pos: 2 ** 32 + 800 })).toEqual({ file: 'binlog.000003', pos: 2 ** 32 + 800 });
    expect(await dialect.withGtids(server, { file: 'binlog.000003', pos: 4 })).toEqual({ file: 'binlog.000003', pos: 4, gtidSet: `${uuid}:1-5` });
  });

  it('MariaDB: every domain’s last GTID at the position (BINLOG_GTID_POS), into gtidPos', async () => {
    const server = new FakeServer({ version: '10.11.19-MariaDB', files: [{ name: 'binlog.000003', size: 1000, gtidAt: { 800: '0-1-42,1-1-7' } }] });
    expect(await (await dialectOf(server)).withGtids(server, { file: 'binlog.000003', pos: 800 })).toEqual({
      file: 'binlog.000003',
      pos: 800,
      gtidPos: '0-1-42,1-1-7',
    });
  });
});

describe('the consistent snapshot point', () => {
  const tables = [
    { db: 'shop', table: 'log' },
    { db: 'shop', table: 'odd`name' },
  ];

  it('MariaDB: the binlog_snapshot_file/position of the transaction, ended by COMMIT', async () => {
    const server = new FakeServer({ version: '10.11.19-MariaDB', ends: [{ file: 'binlog.000003', pos: 777 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server, tables);
    expect(point).toMatchObject({ position: { file: 'binlog.000003', pos: 777 }, how: 'binlog_snapshot_file' });
    expect(server.statements.slice(1)).toEqual(['START TRANSACTION WITH CONSISTENT SNAPSHOT', "SHOW STATUS LIKE 'binlog_snapshot_%'"]);
    expect(server.inTransaction).toBe(true);
    if ('end' in point) await point.end();
    expect(server.inTransaction).toBe(false);
  });

  it.each(['8.0.46', '8.4.7', '9.6.0'])('MySQL %s with RELOAD: a global read lock held around START TRANSACTION and the binlog status', async (version) => {
    const server = new FakeServer({ version, grants: { reload: true }, ends: [{ file: 'binlog.000003', pos: 640 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server, tables);
    expect(point).toMatchObject({ position: { file: 'binlog.000003', pos: 640 }, how: 'FLUSH TABLES WITH READ LOCK' });
    expect(server.statements.slice(1)).toEqual([
      'SET SESSION lock_wait_timeout = 5',
      'FLUSH TABLES WITH READ LOCK',
      'START TRANSACTION WITH CONSISTENT SNAPSHOT',
      (await dialectOf(server)).binlogStatus,
      'UNLOCK TABLES',
    ]);
    expect(server.locked).toBe(false);
    expect(server.inTransaction).toBe(true);
    if ('end' in point) await point.end();
    expect(server.inTransaction).toBe(false);
  });

  it('MySQL with BACKUP_ADMIN: log_status is never trusted (a transaction written to the binlog but not yet committed in InnoDB lies before its position)', async () => {
    // The position is the same at every read, which the old method took as proof; the lock is taken anyway.
    const server = new FakeServer({ version: '8.4.7', grants: { backupAdmin: true, reload: true }, ends: [{ file: 'binlog.000003', pos: 900 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server, tables);
    expect(point).toMatchObject({ position: { file: 'binlog.000003', pos: 900 }, how: 'FLUSH TABLES WITH READ LOCK' });
    expect(server.statements.some((s) => s.includes('log_status'))).toBe(false);
  });

  it('MySQL without RELOAD, with LOCK TABLES (RDS, Aurora): the tables read-locked, the binlog status read under the lock, no transaction', async () => {
    const server = new FakeServer({ version: '8.0.39', grants: { lockTables: true }, ends: [{ file: 'mysql-bin-changelog.000123', pos: 4321 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server, tables);
    expect(point).toMatchObject({ position: { file: 'mysql-bin-changelog.000123', pos: 4321 }, how: 'LOCK TABLES … READ' });
    expect(server.statements.slice(1)).toEqual([
      'SET SESSION lock_wait_timeout = 5',
      'FLUSH TABLES WITH READ LOCK',
      'LOCK TABLES `shop`.`log` READ, `shop`.`odd``name` READ',
      'SHOW MASTER STATUS',
    ]);
    // The reads happen under the locks, outside a transaction (START TRANSACTION would release them).
    expect(server.tableLocks).toBe('`shop`.`log` READ, `shop`.`odd``name` READ');
    expect(server.inTransaction).toBe(false);
    if ('end' in point) await point.end();
    expect(server.tableLocks).toBeUndefined();
    expect(server.statements.at(-1)).toBe('UNLOCK TABLES');
  });

  it('MySQL without RELOAD: a table named twice (sluice verify --tables a,a) is locked once', async () => {
    const server = new FakeServer({ version: '8.4.7', grants: { lockTables: true } });
    await (await dialectOf(server)).snapshotPoint(server, [tables[0], ...tables, tables[1]] as typeof tables);
    expect(server.tableLocks).toBe('`shop`.`log` READ, `shop`.`odd``name` READ');
  });

  it('verify reads MySQL at the point of the tables it compares, and ends it with UNLOCK TABLES under table locks', async () => {
    const server = new FakeServer({ version: '8.0.39', grants: { lockTables: true }, ends: [{ file: 'binlog.000005', pos: 808 }] });
    const read = await readAtKnownPosition({ sql: server }, tables);
    expect(read.position).toEqual({ file: 'binlog.000005', pos: 808 });
    expect(server.tableLocks).toBeDefined();
    await read.end();
    expect(server.tableLocks).toBeUndefined();
    const refusing = new FakeServer({ version: '8.0.39' });
    await expect(readAtKnownPosition({ sql: refusing }, tables)).rejects.toMatchObject({
      code: 'VERIFY_UNSUPPORTED',
      message: expect.stringContaining('GRANT LOCK TABLES ON *.*'),
    });
  });

  it('MySQL with BACKUP_ADMIN on a busy server (the binlog moves at every read), no RELOAD: LOCK TABLES, not a refusal', async () => {
    const ends = Array.from({ length: 60 }, (_, i) => ({ file: 'binlog.000003', pos: 1000 + i }));
    const server = new FakeServer({ version: '9.6.0', grants: { backupAdmin: true, lockTables: true }, ends });
    const point = await (await dialectOf(server)).snapshotPoint(server, tables);
    expect(point).toMatchObject({ position: { file: 'binlog.000003', pos: 1000 }, how: 'LOCK TABLES … READ' });
  });

  it('MySQL with performance_schema=OFF (log_status empty): the locks as usual, not PREFLIGHT_LOG_BIN', async () => {
    for (const grants of [
      { backupAdmin: true, reload: true },
      { backupAdmin: true, lockTables: true },
    ]) {
      const server = new FakeServer({ version: '8.0.46', grants, performanceSchemaOff: true, ends: [{ file: 'binlog.000009', pos: 155 }] });
      const point = await (await dialectOf(server)).snapshotPoint(server, tables);
      expect(point).toMatchObject({ position: { file: 'binlog.000009', pos: 155 } });
    }
  });

  it.each(['global', 'tables'] as const)('MySQL whose %s lock waits out lock_wait_timeout: SNAPSHOT_BUSY, retriable, nothing held', async (busy) => {
    const server = new FakeServer({ version: '8.4.7', grants: busy === 'global' ? { reload: true } : { lockTables: true }, busy });
    const point = (await dialectOf(server)).snapshotPoint(server, tables);
    await expect(point).rejects.toMatchObject({ code: 'SNAPSHOT_BUSY', retriable: true, message: expect.stringContaining('the next run tries again') });
    expect(server.inTransaction).toBe(false);
    expect(server.locked).toBe(false);
    expect(server.tableLocks).toBeUndefined();
  });

  it('MySQL with neither RELOAD nor LOCK TABLES: a refusal naming exactly those two grants, nothing held', async () => {
    for (const grants of [{}, { backupAdmin: true }]) {
      const server = new FakeServer({ version: '8.0.39', grants });
      const point = await (await dialectOf(server)).snapshotPoint(server, tables);
      const refused = 'refused' in point ? point.refused : '';
      expect(refused).toContain("GRANT RELOAD ON *.* TO '<user>'@'%';");
      expect(refused).toContain("GRANT LOCK TABLES ON *.* TO '<user>'@'%';");
      expect(refused).not.toMatch(/BACKUP_ADMIN ON|log_status/);
      expect(refused).toMatch(/RDS and Aurora refuse a global read lock/);
      expect(server.inTransaction).toBe(false);
      expect(server.locked).toBe(false);
      expect(server.tableLocks).toBeUndefined();
    }
  });

  it('MySQL without RELOAD and no table to read: the binlog end, nothing held (nothing is read)', async () => {
    const server = new FakeServer({ version: '8.4.7', ends: [{ file: 'binlog.000002', pos: 300 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server, []);
    expect(point).toMatchObject({ position: { file: 'binlog.000002', pos: 300 } });
    expect(server.statements.some((s) => s.startsWith('LOCK TABLES'))).toBe(false);
  });
});

describe("the settled binlog end (a snapshot page's watermark: every transaction before it committed, issue #30)", () => {
  const tables = [{ db: 'shop', table: 'log' }];
  const uuid = '3e11fa47-71ca-11e1-9e33-c80aa9429562';

  it('MariaDB: the binlog position of a consistent snapshot, not SHOW MASTER STATUS', async () => {
    const server = new FakeServer({ version: '10.11.19-MariaDB', ends: [{ file: 'binlog.000003', pos: 777 }] });
    expect(await (await dialectOf(server)).settledEnd(server, tables)).toEqual({ file: 'binlog.000003', pos: 777 });
    expect(server.statements.slice(1)).toEqual(['START TRANSACTION WITH CONSISTENT SNAPSHOT', "SHOW STATUS LIKE 'binlog_snapshot_%'", 'COMMIT']);
  });

  it('MySQL, gtid_mode ON: the end, then a wait for the GTIDs owned after it; none owned, no wait; no lock either way', async () => {
    const busy = new FakeServer({ version: '8.0.46', gtidOwned: `${uuid}:14444#73:14445#74`, ends: [{ file: 'binlog.000009', pos: 123 }] });
    expect(await (await dialectOf(busy)).settledEnd(busy, tables)).toEqual({ file: 'binlog.000009', pos: 123 });
    expect(busy.statements.slice(1)).toEqual([
      'SHOW MASTER STATUS',
      'SELECT @@GLOBAL.gtid_mode AS mode, @@GLOBAL.gtid_owned AS owned',
      'SELECT WAIT_FOR_EXECUTED_GTID_SET(?, 5) AS timedOut',
    ]);
    const idle = new FakeServer({ version: '8.4.7', ends: [{ file: 'binlog.000009', pos: 123 }] });
    expect(await (await dialectOf(idle)).settledEnd(idle, tables)).toEqual({ file: 'binlog.000009', pos: 123 });
    expect(idle.statements.slice(1)).toEqual(['SHOW BINARY LOG STATUS', 'SELECT @@GLOBAL.gtid_mode AS mode, @@GLOBAL.gtid_owned AS owned']);
  });

  it('MySQL, gtid_mode ON: commits that do not finish within 5 s are SNAPSHOT_BUSY (retriable)', async () => {
    const server = new FakeServer({ version: '8.0.46', gtidOwned: `${uuid}:7#12`, commitsStuck: true });
    await expect((await dialectOf(server)).settledEnd(server, tables)).rejects.toMatchObject({ code: 'SNAPSHOT_BUSY', retriable: true });
  });

  it('MySQL, gtid_mode OFF: the end read under LOCK TABLES … READ, else under a global read lock, released at once; else SNAPSHOT_NO_POINT', async () => {
    const locks = new FakeServer({
      version: '8.0.46',
      gtidMode: 'OFF',
      grants: { lockTables: true },
      ends: [
        { file: 'b.1', pos: 4 },
        { file: 'b.1', pos: 99 },
      ],
    });
    expect(await (await dialectOf(locks)).settledEnd(locks, tables)).toEqual({ file: 'b.1', pos: 99 });
    expect(locks.statements.slice(-3)).toEqual(['LOCK TABLES `shop`.`log` READ', 'SHOW MASTER STATUS', 'UNLOCK TABLES']);
    expect(locks.tableLocks).toBeUndefined();
    const reload = new FakeServer({ version: '8.0.46', gtidMode: 'OFF', grants: { reload: true } });
    await (await dialectOf(reload)).settledEnd(reload, tables);
    expect(reload.statements.slice(-3)).toEqual(['FLUSH TABLES WITH READ LOCK', 'SHOW MASTER STATUS', 'UNLOCK TABLES']);
    expect(reload.locked).toBe(false);
    const none = new FakeServer({ version: '8.0.46', gtidMode: 'OFF' });
    await expect((await dialectOf(none)).settledEnd(none, tables)).rejects.toMatchObject({ code: 'SNAPSHOT_NO_POINT', retriable: false });
    const busy = new FakeServer({ version: '8.0.46', gtidMode: 'OFF', grants: { lockTables: true }, busy: 'tables' });
    await expect((await dialectOf(busy)).settledEnd(busy, tables)).rejects.toMatchObject({ code: 'SNAPSHOT_BUSY' });
    // Nothing to read (a stream's start): the end as it is.
    const start = new FakeServer({ version: '8.0.46', gtidMode: 'OFF' });
    expect(await (await dialectOf(start)).settledEnd(start, [])).toEqual({ file: 'binlog.000001', pos: 4 });
  });
});
