import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import type { BinlogHistory } from '../../lib/core/history.ts';
import type { BinlogPosition } from '../../lib/core/position.ts';
import type { SluiceError } from '../../lib/errors.ts';
import { dialectOf } from '../../lib/source/mysql/dialect/dialect.ts';
import { mysqlGtidStart } from '../../lib/source/mysql/dialect/mysql-gtid.ts';
import { BinlogHistories, checkStartPosition, gtidCoverage } from '../../lib/source/mysql/history.ts';
import { FakeServer, type FakeServerOptions } from '../support/fake-mysql.ts';

const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const B = '2c256447-3f0d-431b-9a25-bddf1f1f6ef6';
const T = '55778904-0299-11f1-b1b8-4ef0c4956feb';

/** A MySQL 8.4 server whose binlog.000002 holds an event at 500. */
const server = (options: Partial<FakeServerOptions> = {}) =>
  new FakeServer({
    version: '8.4.7',
    serverUuid: A,
    gtidExecuted: `${A}:1-20`,
    files: [
      { name: 'binlog.000001', size: 900, before: '' },
      { name: 'binlog.000002', size: 1500, before: `${A}:1-8`, events: [4, 500] },
    ],
    ...options,
  });

const stored: BinlogPosition = { file: 'binlog.000002', pos: 500, gtid: `${A}:10`, gtidSet: `${A}:1-10` };
const history: BinlogHistory = { file: 'binlog.000002', created: Date.parse('2026-11-30T10:00:00Z'), serverId: 1, serverUuid: A };

async function failure(promise: Promise<unknown>): Promise<SluiceError | undefined> {
  return promise.then(
    () => undefined,
    (error: SluiceError) => error,
  );
}

describe('the stored position on MySQL, before reading', () => {
  it('passes when the server holds every transaction the position read and still has the ones after it', async () => {
    await new BinlogHistories({ position: stored, history }).checkStored(server({ gtidPurged: `${A}:1-9` }));
  });

  it('a reset or replaced server (its gtid_executed lacks what was read) is POSITION_FOREIGN, naming the missing set', async () => {
    // RESET BINARY LOGS AND GTIDS, then 3 new transactions: the same file names, fewer GTIDs.
    const error = await failure(new BinlogHistories({ position: stored, history }).checkStored(server({ gtidExecuted: `${A}:1-3` })));
    expect(error?.code).toBe('POSITION_FOREIGN');
    expect(error?.message).toContain(`lacks ${A}:4-10, which sluice had already read`);
    expect(error?.message).toMatch(/cannot be repositioned by GTID: this server's gtid_executed lacks .*4-10, which sluice had read .* copy the tables again/);
  });

  it('a failover target that never got our transactions is POSITION_FOREIGN', async () => {
    const error = await failure(new BinlogHistories({ position: stored, history }).checkStored(server({ serverUuid: B, gtidExecuted: `${A}:1-7,${B}:1-50` })));
    expect(error?.code).toBe('POSITION_FOREIGN');
    expect(error?.message).toContain(`lacks ${A}:8-10`);
  });

  it('transactions after the position that are in gtid_purged are POSITION_LOST, naming them', async () => {
    const error = await failure(new BinlogHistories({ position: stored, history }).checkStored(server({ gtidPurged: `${A}:1-12` })));
    expect(error?.code).toBe('POSITION_LOST');
    expect(error?.message).toContain(`${A}:11-12 is in gtid_purged`);
  });

  it('another server_uuid with nothing recorded of the file is POSITION_FOREIGN; with the file recorded, its creation time decides', async () => {
    const elsewhere = { ...history, file: 'binlog.000001' };
    const error = await failure(
      new BinlogHistories({ position: stored, history: elsewhere }).checkStored(server({ serverUuid: B, gtidExecuted: `${A}:1-20` })),
    );
    expect(error?.code).toBe('POSITION_FOREIGN');
    expect(error?.message).toContain(`recorded on server_uuid ${A}; this server is ${B}`);
    // It holds the set and what follows: the way back is by GTID.
    expect(error?.message).toContain(`sluice state reset --to gtid:${A}:1-10`);
    await new BinlogHistories({ position: stored, history }).checkStored(server({ serverUuid: B }));
  });

  it('a position with only its last GTID (no set recorded) is checked by that GTID', async () => {
    const old = { file: stored.file, pos: stored.pos, gtid: `${A}:10` };
    await new BinlogHistories({ position: old }).checkStored(server());
    const error = await failure(new BinlogHistories({ position: old }).checkStored(server({ gtidExecuted: `${B}:1-3` })));
    expect(error?.code).toBe('POSITION_FOREIGN');
  });

  it('gtid_mode OFF: no GTIDs to compare, the file checks remain', async () => {
    const anonymous = { file: stored.file, pos: stored.pos };
    await new BinlogHistories({ position: anonymous, history }).checkStored(server({ gtidMode: 'OFF', gtidExecuted: '' }));
    const error = await failure(new BinlogHistories({ position: { file: 'binlog.000002', pos: 501 } }).checkStored(server({ gtidMode: 'OFF' })));
    expect(error?.code).toBe('POSITION_FOREIGN');
    expect(error?.message).toContain('offset 501 is not the start of an event');
  });

  it('a MariaDB position past 4 GiB stored without its history is checked by its first GTID, not by BINLOG_GTID_POS (NULL there)', async () => {
    const past = 2 ** 32 + 92;
    const mariadb = new FakeServer({
      version: '10.11.19-MariaDB',
      files: [{ name: 'binlog.000002', size: past + 4_000, events: [4, 500, past], gtidAt: { 500: '0-1-10' } }],
    });
    await new BinlogHistories({ position: { file: 'binlog.000002', pos: past, gtid: '0-1-10' } }).checkStored(mariadb);
    expect(mariadb.statements.some((s) => s.startsWith('SELECT BINLOG_GTID_POS(?, ?)'))).toBe(false);
    // Below 4 GiB it is asked, and answers.
    await new BinlogHistories({ position: { file: 'binlog.000002', pos: 500, gtid: '0-1-10' } }).checkStored(mariadb);
    expect(mariadb.statements.some((s) => s.startsWith('SELECT BINLOG_GTID_POS(?, ?)'))).toBe(true);
  });

  it('MariaDB positions are not asked about MySQL sets', async () => {
    const mariadb = new FakeServer({ version: '10.11.19-MariaDB', files: [{ name: 'binlog.000002', size: 1500, events: [4, 500] }] });
    await new BinlogHistories({ position: { file: 'binlog.000002', pos: 500, gtid: '0-1-10' }, history }).checkStored(mariadb);
    expect(mariadb.statements.some((s) => s.includes('gtid_executed'))).toBe(false);
  });
});

describe('a position given by a person, on MySQL', () => {
  it('may start at a tagged GTID event (8.3+), not inside its transaction', async () => {
    const files = [{ name: 'binlog.000001', size: 900, events: [4, 300, 380], types: { 300: 'Gtid_tagged_log_event', 380: 'Query' } }];
    await checkStartPosition(server({ version: '9.6.0', files }), { file: 'binlog.000001', pos: 300 });
    const error = await failure(checkStartPosition(server({ version: '9.6.0', files }), { file: 'binlog.000001', pos: 380 }));
    expect(error?.code).toBe('POSITION_INVALID');
    expect(error?.message).toContain('inside a transaction (a Query event starts there)');
  });
});

describe('the stored position on MySQL, while reading', () => {
  it('a first transaction the position had already read is another history', async () => {
    const histories = new BinlogHistories({ position: stored, history });
    expect(histories.onEvent({ timestamp: 0, gtid: `${A}:9` }, 'Gtid', 'binlog.000002')).toMatchObject({
      evidence: `the first transaction after it, ${A}:9, is one the position had already read`,
    });
    const fresh = new BinlogHistories({ position: stored, history });
    expect(fresh.onEvent({ timestamp: 0, gtid: `${A}:11` }, 'Gtid', 'binlog.000002')).toBeUndefined();
    expect(fresh.onEvent({ timestamp: 0, gtid: `${A}:3` }, 'Gtid', 'binlog.000002')).toBeUndefined(); // only the first is judged
  });

  it('a first transaction the set holds through a gap (after the position`s last one) is skipped, not refused; one not later than it still is', () => {
    // gtid:A:1-8:10-12 started before 9; the stream read 9 and stored a position after it: 10-12 follow, held.
    const gapped: BinlogPosition = { file: 'binlog.000002', pos: 500, gtid: `${A}:9`, gtidSet: `${A}:1-12` };
    expect(new BinlogHistories({ position: gapped, history }).onEvent({ timestamp: 0, gtid: `${A}:10` }, 'Gtid', 'binlog.000002')).toBeUndefined();
    // Another source's transaction the set holds (multi-source): no order to compare, skipped.
    const sources: BinlogPosition = { ...gapped, gtidSet: `${A}:1-9,${B}:1-5` };
    expect(new BinlogHistories({ position: sources, history }).onEvent({ timestamp: 0, gtid: `${B}:4` }, 'Gtid', 'binlog.000002')).toBeUndefined();
    // A replaced server whose file of that name is at an earlier point: the position's own last transaction, or an earlier one, comes first.
    for (const seen of [`${A}:9`, `${A}:7`])
      expect(new BinlogHistories({ position: gapped, history }).onEvent({ timestamp: 0, gtid: seen }, 'Gtid', 'binlog.000002')).toMatchObject({
        evidence: `the first transaction after it, ${seen}, is one the position had already read`,
      });
    // Without the position's last GTID nothing shows the held one is later: refused, as before.
    const { gtid: _, ...unknown } = gapped;
    expect(new BinlogHistories({ position: unknown, history }).onEvent({ timestamp: 0, gtid: `${A}:10` }, 'Gtid', 'binlog.000002')).toMatchObject({
      evidence: expect.stringContaining('had already read'),
    });
  });

  it('a Blue/Green target (its own file of that name) whose GTIDs hold the set: the error gives the GTID to resume from', async () => {
    const histories = new BinlogHistories({ position: stored, history });
    const mismatch = histories.onEvent({ timestamp: Date.parse('2026-12-01T08:00:00Z') }, 'Format', 'binlog.000002');
    expect(mismatch?.evidence).toContain('created at 2026-11-30T10:00:00Z, on server_id 1 (server_uuid');
    const green = server({ serverUuid: B, gtidExecuted: `${A}:1-20,${B}:1-2` });
    const error = await histories.explain(async () => green, mismatch as NonNullable<typeof mismatch>);
    expect(error.code).toBe('POSITION_FOREIGN');
    expect(error.message).toContain(`sluice state reset --to gtid:${A}:1-10`);
  });
});

describe('SLUICE_STARTUP=gtid: on MySQL', () => {
  const files = [
    { name: 'binlog.000001', size: 900, before: '' },
    { name: 'binlog.000002', size: 900, before: `${A}:1-5` },
    { name: 'binlog.000003', size: 900, before: `${A}:1-9` },
  ];

  it('starts in the newest file whose Previous_gtids the set includes', async () => {
    const conn = server({ files, gtidExecuted: `${A}:1-12` });
    const dialect = await dialectOf(conn);
    expect((await mysqlGtidStart(conn, dialect, `${A}:1-7`)).from).toBe('binlog.000002');
    expect((await mysqlGtidStart(conn, dialect, `${A}:1-9`)).from).toBe('binlog.000003');
    expect((await mysqlGtidStart(conn, dialect, `${A}:1-3`)).from).toBe('binlog.000001');
    expect((await mysqlGtidStart(conn, dialect, `${A}:1-12`)).covered.contains(`${A}:12`)).toBe(true);
  });

  it('tagged sets (8.4+, the 9.6 fixture`s Previous_gtids)', async () => {
    const conn = server({
      version: '9.6.0',
      serverUuid: T,
      gtidExecuted: `${T}:1-13:mytag:1-3`,
      files: [{ name: 'binlog.000001', size: 585, before: `${T}:1-13:mytag:1-2` }],
    });
    expect((await mysqlGtidStart(conn, await dialectOf(conn), `${T}:1-13,${T}:mytag:1-2`)).from).toBe('binlog.000001');
  });

  it('a set with transactions the server never executed is refused, naming them', async () => {
    const conn = server({ files, gtidExecuted: `${A}:1-12` });
    const error = await failure(mysqlGtidStart(conn, await dialectOf(conn), `${A}:1-14,${B}:1`));
    expect(error?.code).toBe('POSITION_FOREIGN');
    expect(error?.message).toContain(`never executed (${B}:1,${A}:13-14`);
  });

  it('a set whose following transactions were purged is POSITION_LOST', async () => {
    const conn = server({ files, gtidExecuted: `${A}:1-12`, gtidPurged: `${A}:1-5` });
    const error = await failure(mysqlGtidStart(conn, await dialectOf(conn), `${A}:1-3`));
    expect(error?.code).toBe('POSITION_LOST');
    expect(error?.message).toContain(`${A}:4-5 is in gtid_purged`);
  });

  it('the setting accepts MariaDB positions and MySQL sets (tagged too), and names both forms for anything else', () => {
    const base = { SLUICE_SOURCE_ID: 's', SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/', SLUICE_STATE_TABLE: 'sluice-state', SLUICE_BUCKET: 'lake' };
    expect(loadConfig({ ...base, SLUICE_STARTUP: 'gtid:0-1-1234,1-2-7' }).startup).toEqual({ mode: 'gtid', gtid: '0-1-1234,1-2-7' });
    expect(loadConfig({ ...base, SLUICE_STARTUP: `gtid:${A}:1-5:11-18,${B}:1-27` }).startup).toEqual({ mode: 'gtid', gtid: `${A}:1-5:11-18,${B}:1-27` });
    expect(loadConfig({ ...base, SLUICE_STARTUP: `gtid:${T}:1-13:mytag:1-2` }).startup).toMatchObject({ mode: 'gtid' });
    expect(() => loadConfig({ ...base, SLUICE_STARTUP: `gtid:${A}` })).toThrow(
      /SLUICE_STARTUP: ".*" is neither a MariaDB GTID position .* nor a MySQL GTID set/,
    );
  });
});

describe('whether a server carries the transactions a position has read (gtidCoverage: what following a failover asks first)', () => {
  it('MySQL: gtid_executed holds the set and nothing after it is purged, whatever the server’s uuid, files and offsets', async () => {
    expect(await gtidCoverage(server({ gtidPurged: `${A}:1-9` }), stored)).toEqual({ held: true, gtid: `${A}:1-10` });
    // A Blue/Green target: another uuid, its own files, our transactions and its own.
    const green = server({ serverUuid: B, gtidExecuted: `${A}:1-20,${B}:1-2`, files: [{ name: 'mysql-bin-changelog.000001', size: 700, before: '' }] });
    expect(await gtidCoverage(green, stored)).toEqual({ held: true, gtid: `${A}:1-10` });
  });

  it('MySQL: names what is missing — transactions the old server had (the replication gap), a purge after the set, no set recorded, gtid_mode OFF', async () => {
    expect(await gtidCoverage(server({ serverUuid: B, gtidExecuted: `${A}:1-8,${B}:1-3` }), stored)).toEqual({
      held: false,
      missing: `this server's gtid_executed lacks ${A}:9-10, which sluice had read (the transactions the old server had that this one never got)`,
    });
    expect(await gtidCoverage(server({ gtidPurged: `${A}:1-12` }), stored)).toMatchObject({
      held: false,
      missing: expect.stringContaining(`${A}:11-12 is in gtid_purged`),
    });
    expect(await gtidCoverage(server(), { file: stored.file, pos: stored.pos, gtid: `${A}:10` })).toMatchObject({
      held: false,
      missing: expect.stringContaining('records no GTID set'),
    });
    expect(await gtidCoverage(server({ gtidMode: 'OFF', gtidExecuted: '' }), stored)).toMatchObject({ held: false, missing: "this server's gtid_mode is OFF" });
  });

  const mariadb = (options: Partial<FakeServerOptions>) =>
    new FakeServer({
      version: '10.11.19-MariaDB',
      files: [
        { name: 'binlog.000001', size: 900, before: '0-2-8' },
        { name: 'binlog.000002', size: 1500, before: '0-1-30,2-1-4' },
      ],
      ...options,
    });
  const read: BinlogPosition = { file: 'binlog.000004', pos: 900, gtid: '0-1-40', gtidPos: '0-1-40,2-1-7' };

  it('MariaDB: every domain’s last GTID read is in the binlog state and not before the oldest binlog (a replica’s own writes in the domain do not matter)', async () => {
    expect(await gtidCoverage(mariadb({ gtidBinlogState: '0-2-8,0-1-45,2-1-9' }), read)).toEqual({ held: true, gtid: '0-1-40,2-1-7' });
    // A position stored before every domain's GTID was recorded: its last GTID alone.
    expect(await gtidCoverage(mariadb({ gtidBinlogState: '0-1-45' }), { file: read.file, pos: read.pos, gtid: '0-1-40' })).toEqual({
      held: true,
      gtid: '0-1-40',
    });
  });

  it('MariaDB: names the GTIDs a replica lacks, a purge after them, a server that never logged that domain’s server, a position without GTIDs', async () => {
    expect(await gtidCoverage(mariadb({ gtidBinlogState: '0-2-8,0-1-37,2-1-7' }), read)).toEqual({
      held: false,
      missing: 'of the transactions sluice had read (0-1-40,2-1-7), it lacks 0-1-38 to 0-1-40 (its binlog state ends that domain and server at 0-1-37)',
    });
    expect(await gtidCoverage(mariadb({ gtidBinlogState: '0-1-40,2-1-6' }), read)).toMatchObject({ missing: expect.stringContaining('it lacks 2-1-7 (') });
    const purged = mariadb({ gtidBinlogState: '0-1-60,2-1-9', files: [{ name: 'binlog.000009', size: 900, before: '0-1-50,2-1-7' }] });
    expect(await gtidCoverage(purged, read)).toMatchObject({
      missing: expect.stringContaining('its oldest binlog binlog.000009 starts after 0-1-40 (at 0-1-50): what follows 0-1-40 is purged'),
    });
    expect(await gtidCoverage(mariadb({ gtidBinlogState: '0-3-90,2-1-9' }), read)).toMatchObject({
      missing: expect.stringContaining('it has no transaction of server 1 in domain 0, so none up to 0-1-40'),
    });
    expect(await gtidCoverage(mariadb({ gtidBinlogState: '0-1-45' }), { file: read.file, pos: read.pos })).toMatchObject({
      held: false,
      missing: expect.stringContaining('records no GTID'),
    });
  });

  it('MariaDB: a position moved by GTID and stored without its history is checked at its offset for every domain but those it still skips to', async () => {
    const moved: BinlogPosition = { file: 'binlog.000002', pos: 500, gtid: '0-1-40', gtidPos: '0-1-40,2-1-7', gtidSkip: '2-1-7' };
    const here = (at: string) => mariadb({ files: [{ name: 'binlog.000002', size: 1500, before: '0-1-30', events: [4, 500], gtidAt: { 500: at } }] });
    await new BinlogHistories({ position: moved }).checkStored(here('0-1-40,2-1-5'));
    const error = await failure(new BinlogHistories({ position: moved }).checkStored(here('0-1-39,2-1-5')));
    expect(error?.code).toBe('POSITION_FOREIGN');
    expect(error?.message).toContain('this server\'s GTID position at binlog.000002:500 is "0-1-39,2-1-5", not 0-1-40');
  });
});
