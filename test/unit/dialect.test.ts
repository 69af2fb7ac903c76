import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../lib/source/mysql/dialect.ts';
import { masterPosition } from '../../lib/source/mysql/server.ts';
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

describe('the consistent snapshot point', () => {
  it('MariaDB: the binlog_snapshot_file/position of the transaction', async () => {
    const server = new FakeServer({ version: '10.11.19-MariaDB', ends: [{ file: 'binlog.000003', pos: 777 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server);
    expect(point).toEqual({ position: { file: 'binlog.000003', pos: 777 }, how: 'binlog_snapshot_file' });
    expect(server.inTransaction).toBe(true);
  });

  it.each(['8.0.46', '8.4.7', '9.6.0'])('MySQL %s with BACKUP_ADMIN: log_status read before and after START TRANSACTION, equal', async (version) => {
    const server = new FakeServer({ version, grants: { backupAdmin: true }, ends: [{ file: 'binlog.000003', pos: 900 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server);
    expect(point).toEqual({ position: { file: 'binlog.000003', pos: 900 }, how: 'performance_schema.log_status' });
    expect(server.statements.slice(1)).toEqual([
      'SELECT LOCAL FROM performance_schema.log_status',
      'START TRANSACTION WITH CONSISTENT SNAPSHOT',
      'SELECT LOCAL FROM performance_schema.log_status',
    ]);
    expect(server.inTransaction).toBe(true);
  });

  it('MySQL: a commit between the two reads discards the transaction and tries again', async () => {
    const ends = [
      { file: 'binlog.000003', pos: 900 },
      { file: 'binlog.000003', pos: 1200 }, // a commit raced START TRANSACTION
      { file: 'binlog.000003', pos: 1200 },
      { file: 'binlog.000004', pos: 4 }, // and a rotation
      { file: 'binlog.000004', pos: 4 },
    ];
    const server = new FakeServer({ version: '8.4.7', grants: { backupAdmin: true }, ends });
    const point = await (await dialectOf(server)).snapshotPoint(server);
    expect(point).toEqual({ position: { file: 'binlog.000004', pos: 4 }, how: 'performance_schema.log_status' });
    expect(server.statements.filter((s) => s === 'ROLLBACK')).toHaveLength(2);
  });

  it('MySQL without BACKUP_ADMIN but with RELOAD: a global read lock held around START TRANSACTION and the binlog status', async () => {
    const server = new FakeServer({ version: '8.0.46', grants: { reload: true }, ends: [{ file: 'binlog.000003', pos: 640 }] });
    const point = await (await dialectOf(server)).snapshotPoint(server);
    expect(point).toEqual({ position: { file: 'binlog.000003', pos: 640 }, how: 'FLUSH TABLES WITH READ LOCK' });
    expect(server.statements.slice(2)).toEqual([
      'SET SESSION lock_wait_timeout = 5',
      'FLUSH TABLES WITH READ LOCK',
      'START TRANSACTION WITH CONSISTENT SNAPSHOT',
      'SHOW MASTER STATUS',
      'UNLOCK TABLES',
    ]);
    expect(server.locked).toBe(false);
    expect(server.inTransaction).toBe(true);
  });

  it('MySQL with neither (RDS, Aurora MySQL 3): a refusal naming the grant, with no transaction left open', async () => {
    const server = new FakeServer({ version: '8.0.39' });
    const point = await (await dialectOf(server)).snapshotPoint(server);
    expect(point).toMatchObject({ refused: expect.stringContaining('GRANT BACKUP_ADMIN ON *.*') });
    expect('refused' in point && point.refused).toMatch(/BACKUP_ADMIN privilege/);
    expect(server.inTransaction).toBe(false);
    expect(server.locked).toBe(false);
  });

  it('MySQL whose binlog moves at every read and no RELOAD: refused, saying so', async () => {
    const ends = Array.from({ length: 60 }, (_, i) => ({ file: 'binlog.000003', pos: 1000 + i }));
    const server = new FakeServer({ version: '9.6.0', grants: { backupAdmin: true }, ends });
    const point = await (await dialectOf(server)).snapshotPoint(server);
    expect('refused' in point && point.refused).toMatch(/the binlog moved during each of 20 reads/);
    expect(server.inTransaction).toBe(false);
  });
});
