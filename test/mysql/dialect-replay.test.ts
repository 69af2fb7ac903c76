import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import mysqlClient from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { type BinlogPosition, fileNumber } from '../../lib/core/position.ts';
import type { SluiceError } from '../../lib/errors.ts';
import { createLogger } from '../../lib/log.ts';
import { resetState } from '../../lib/ops/state-admin.ts';
import { sourceStatus } from '../../lib/ops/status.ts';
import { BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { startupPosition } from '../../lib/source/mysql/binlog-scan.ts';
import { dialectOf } from '../../lib/source/mysql/dialect/dialect.ts';
import { BinlogHistories } from '../../lib/source/mysql/history.ts';
import { connect, masterPosition, type SqlConnection } from '../../lib/source/mysql/server.ts';
import { InMemoryStateStore } from '../../lib/state/memory.ts';
import { sluice } from '../support/cli.ts';
import { type ReplayServer, startReplayServer } from '../support/mysql-replay/server.ts';

/*
 * The dialect against the replay source (test/support/mysql-replay): the three consecutive
 * mysqlbinlog2parquet files of one MySQL 8.0.46 server (GTIDs 8a18b986-…:7-13, :14-16, :17-19,
 * Previous_gtids :1-6 before the first), presented as 8.0.46, 8.4.3 and 9.1.0. The replay server
 * answers as each version's manual documents (8.4+ refuse SHOW MASTER STATUS with 1064), serves the
 * files over the replication protocol, and holds gtid_purged = the first file's Previous_gtids.
 */

const fixtures = resolve(process.env.SLUICE_MYSQL_FIXTURES ?? join(process.cwd(), '../shared/fixtures/mysql-binlogs'));
const FILES = ['01-basic-crud', '02-multi-statement-txn', '03-mixed-types'].map((name) => join(fixtures, `mysqlbinlog2parquet--${name}.binlog`));
const UUID = '8a18b986-434f-11f1-a27f-ce6a53da2f24';

describe.each([
  { version: '8.0.46', status: 'SHOW MASTER STATUS' },
  { version: '8.4.3', status: 'SHOW BINARY LOG STATUS' },
  { version: '9.1.0', status: 'SHOW BINARY LOG STATUS' },
])('MySQL $version (replayed)', ({ version, status }) => {
  let server: ReplayServer;
  let conn: SqlConnection;
  const statements: [string, string][] = [];
  const config = () => loadConfig({ SLUICE_SOURCE_ID: 'replay', SLUICE_MYSQL_URL: server.uri, SLUICE_STATE_TABLE: 'sluice-state', SLUICE_BUCKET: 'lake' });
  const target = () => ({ uri: server.uri, label: '127.0.0.1' });

  beforeAll(async () => {
    for (const file of FILES) if (!existsSync(file)) throw new Error(`fixture ${file} is missing: set SLUICE_MYSQL_FIXTURES to the mysql-binlogs folder`);
    // Schema reads go to the test stack's MariaDB, holding the fixture's database (empty tables).
    const schemaFrom = inject('stackEnv').SLUICE_LOCAL_ADMIN_URL as string;
    const admin = await mysqlClient.createConnection({ uri: schemaFrom, multipleStatements: true });
    await admin.query(
      'CREATE DATABASE IF NOT EXISTS binlogtest; CREATE TABLE IF NOT EXISTS binlogtest.customers (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64) NOT NULL, email VARCHAR(128) NOT NULL)',
    );
    await admin.end();
    server = await startReplayServer({ files: FILES, version, schemaFrom, onStatement: (sql, outcome) => statements.push([sql, outcome]) });
    conn = await connect(target());
  });
  afterAll(async () => {
    await conn?.end();
    await server?.close();
  });

  it(`reads the binlog end with ${status}, never trying the other statement`, async () => {
    expect(await masterPosition(conn)).toEqual({ file: 'mysql-bin.000007', pos: 1981 });
    expect(statements.some(([sql]) => sql === status)).toBe(true);
    expect(statements.filter(([, outcome]) => /1064/.test(outcome))).toEqual([]);
  });

  it('reads the GTID state and each file`s Previous_gtids', async () => {
    const dialect = await dialectOf(conn);
    expect(await dialect.gtidsBefore(conn, 'mysql-bin.000006')).toBe(`${UUID}:1-13`);
    const state = await dialect.gtidState(conn);
    expect([String(state?.executed), String(state?.purged), state?.on]).toEqual([`${UUID}:1-19`, `${UUID}:1-6`, true]);
  });

  it('positions streamed from a file`s start carry the GTID set executed at them, across rotations', { timeout: 20_000 }, async () => {
    const reader = new BinlogReader({ target: target(), start: { file: 'mysql-bin.000005', pos: 4 }, filter: () => true, idleMs: 300 });
    const commits: BinlogPosition[] = [];
    try {
      for await (const item of reader) {
        if (item.kind === 'commit') commits.push(item.position);
        // The last file ends with a ROTATE to mysql-bin.000008, where the stream waits: all read.
        if (item.kind === 'idle' && fileNumber(reader.streamPosition.file) >= 8) break;
      }
    } finally {
      await reader.stop();
    }
    // 13 transactions (7-19), each commit position holding every GTID up to its own.
    expect(commits.map((p) => p.gtidSet)).toEqual(Array.from({ length: 13 }, (_, i) => `${UUID}:1-${7 + i}`));
    expect(commits.map((p) => p.file)).toEqual([
      ...Array(7).fill('mysql-bin.000005'),
      ...Array(3).fill('mysql-bin.000006'),
      ...Array(3).fill('mysql-bin.000007'),
    ]);
  });

  it('a heartbeat naming the file before the ROTATE the stream followed moves no position', { timeout: 20_000 }, async () => {
    // Read from the last served file's ROTATE (to mysql-bin.000008, at 1934): the replay server then
    // heartbeats (every 3 s) naming mysql-bin.000007 at 1981, and (000008, 1981) is a position in no file.
    const reader = new BinlogReader({ target: target(), start: { file: 'mysql-bin.000007', pos: 1934 }, filter: () => true, idleMs: 500 });
    const positions: BinlogPosition[] = [];
    const until = Date.now() + 4_000;
    // mysql2 prints a warning for the replay server's heartbeat packet numbering (reported to its
    // author); anything else printed fails the test below.
    const printed: string[] = [];
    const quiet = vi.spyOn(console, 'error').mockImplementation((message: unknown) => void printed.push(String(message)));
    try {
      for await (const item of reader) {
        if (item.kind === 'commit' || item.kind === 'progress') positions.push(item.position);
        if (Date.now() > until) break;
      }
    } finally {
      await reader.stop();
      quiet.mockRestore();
    }
    expect(positions.filter((p) => p.file === 'mysql-bin.000008' && p.pos > 4)).toEqual([]);
    expect(printed.filter((line) => !/^Warning: got packets out of order/.test(line))).toEqual([]);
  });

  it('SLUICE_STARTUP=gtid:<set> starts right after the set, in the file its Previous_gtids point to', async () => {
    const start = await startupPosition({ ...config(), startup: { mode: 'gtid', gtid: `${UUID}:1-14` } }, conn, createLogger('ERROR', {}));
    expect(start).toMatchObject({ file: 'mysql-bin.000006', gtid: `${UUID}:14`, gtidSet: `${UUID}:1-14` });
    // The stored position checks out on this server; the same offset with another server's set does not.
    await new BinlogHistories({ position: start }).checkStored(conn);
    const foreign = await new BinlogHistories({ position: { ...start, gtidSet: `${UUID}:1-14,2c256447-3f0d-431b-9a25-bddf1f1f6ef6:1-3` } })
      .checkStored(conn)
      .then(
        () => undefined,
        (error: SluiceError) => error,
      );
    expect(foreign?.code).toBe('POSITION_FOREIGN');
    // Transactions 4-6 are purged (before the first served file): a start before them is lost.
    const lost = await startupPosition({ ...config(), startup: { mode: 'gtid', gtid: `${UUID}:1-3` } }, conn, createLogger('ERROR', {})).then(
      () => undefined,
      (error: SluiceError) => error,
    );
    expect(lost?.code).toBe('POSITION_LOST');
  });

  it('SLUICE_STARTUP=gtid:<set with a gap>: the start carries the set, and the stream skips what it holds, moving past it', { timeout: 20_000 }, async () => {
    const start = await startupPosition({ ...config(), startup: { mode: 'gtid', gtid: `${UUID}:1-8:10-15` } }, conn, createLogger('ERROR', {}));
    expect(start).toMatchObject({ file: 'mysql-bin.000005', gtid: `${UUID}:8`, gtidSet: `${UUID}:1-8:10-15` });
    await new BinlogHistories({ position: start }).checkStored(conn);
    const reader = new BinlogReader({ target: target(), start, filter: () => true, idleMs: 300 });
    const begun: (string | null)[] = [];
    const positions: BinlogPosition[] = [];
    try {
      for await (const item of reader) {
        if (item.kind === 'begin') begun.push(item.gtid);
        if (item.kind === 'commit' || item.kind === 'progress') positions.push(item.position);
        if (item.kind === 'idle' && fileNumber(reader.streamPosition.file) >= 8) break;
      }
    } finally {
      await reader.stop();
    }
    expect(begun).toEqual([9, 16, 17, 18, 19].map((n) => `${UUID}:${n}`));
    // Each held transaction (10-15, 14-15 past a rotation) still moves the position past it, at its end.
    for (const n of [10, 11, 12, 13, 14, 15])
      expect(
        positions.some((p) => p.gtid === `${UUID}:${n}` && p.gtidSet === `${UUID}:1-15`),
        `${n}`,
      ).toBe(true);
    expect(positions.at(-1)?.gtidSet).toBe(`${UUID}:1-19`);
    // `sluice state reset --to gtid:` stores the same start, set included.
    const reset = await resetState(config(), new InMemoryStateStore(), { mode: 'gtid', gtid: `${UUID}:1-8:10-15` }, createLogger('ERROR', {}));
    expect(reset.position).toEqual(start);
  });

  it('`sluice doctor` passes and the `sluice status` command reports the server position (bin/sluice.js against the replay source)', async () => {
    const env = {
      ...process.env,
      ...inject('stackEnv'),
      SLUICE_SOURCE_ID: `replay-${version.replaceAll('.', '')}`,
      SLUICE_MYSQL_URL: server.uri,
      SLUICE_HOME: '/nonexistent',
    };
    const local = loadConfig(env);
    await initResources(local, createClients(local));
    const doctor = await sluice(['doctor'], { ...env, SLUICE_INCLUDE: 'binlogtest\\..*' });
    expect({ code: doctor.code, failed: doctor.stdout.split('\n').filter((line) => line.startsWith('FAIL')) }).toEqual({ code: 0, failed: [] });
    const { code, stdout, stderr } = await sluice(['status', '--json'], env);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const status = JSON.parse(stdout) as { master?: BinlogPosition; mysqlError?: string };
    expect(status.mysqlError).toBeUndefined();
    expect(status.master).toEqual({ file: 'mysql-bin.000007', pos: 1981 });
  });

  // At latest, not gtid:: the files' last ROTATE names a mysql-bin.000008 the replay server does not
  // serve, so a stream that reads to the end never reaches a position past it (a real server has
  // that file; reported to the replay server's author).
  it('`sluice capture --once` starts at latest, and a second run resumes from the stored position (checked against this server)', async () => {
    const id = `replay-capture-${version.replaceAll('.', '')}`;
    const env = {
      ...process.env,
      ...inject('stackEnv'),
      SLUICE_SOURCE_ID: id,
      SLUICE_PREFIX: id,
      SLUICE_MYSQL_URL: server.uri,
      SLUICE_STARTUP: 'latest',
      SLUICE_INCLUDE: 'binlogtest\\..*',
      SLUICE_HOME: '/nonexistent',
      SLUICE_LOG_LEVEL: 'ERROR',
    };
    const local = loadConfig(env);
    await initResources(local, createClients(local));
    for (const run of [1, 2]) {
      const { code, stderr } = await sluice(['capture', '--once'], env);
      // mysql2 warns of the replay server's packet numbering after a scan's dump (reported to its author).
      const warnings = stderr.split('\n').filter((line) => line && !/^Warning: got packets out of order/.test(line));
      expect({ run, code, warnings }).toEqual({ run, code: 0, warnings: [] });
    }
    const { stdout } = await sluice(['status', '--json'], env);
    const status = JSON.parse(stdout) as { stored?: BinlogPosition; master?: BinlogPosition; error?: unknown; mysqlError?: string };
    expect(status).toMatchObject({ stored: { file: 'mysql-bin.000007', pos: 1981 }, master: { file: 'mysql-bin.000007', pos: 1981 } });
    expect(status.error).toBeUndefined();
  });

  it('`sluice status` reads the binlog end and retention in this version`s dialect', async () => {
    const store = new InMemoryStateStore();
    const status = await sourceStatus(config(), store);
    expect(status.mysqlError).toBeUndefined();
    expect(status.master).toEqual({ file: 'mysql-bin.000007', pos: 1981 });
  });
});
