import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectsCommand } from '@aws-sdk/client-s3';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { run } from '../../lib/cli/main.ts';
import { crashAt, type FaultPoint, InjectedFault } from '../../lib/commit/faults.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { comparePositions } from '../../lib/core/position.ts';
import { LeaseLostError, PositionLostError } from '../../lib/errors.ts';
import { stopProcess } from '../../lib/local/process.ts';
import { silentLog } from '../../lib/log.ts';
import { sourceStatus } from '../../lib/ops/status.ts';
import { startupPosition } from '../../lib/source/mysql/binlog-scan.ts';
import { connect, preflight } from '../../lib/source/mysql/server.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { cliEnv } from '../support/cli.ts';
import { type PrivateServer, startPrivateServer } from '../support/private-server.ts';
import { expectExactlyOnce, testSource } from '../support/source.ts';
import { stallingProxy } from '../support/stalling-proxy.ts';

const POINTS: FaultPoint[] = ['after-staging', 'after-commit', 'mid-rename', 'before-clear'];

describe('crash recovery and fencing (real stack)', () => {
  it.each(POINTS)('a crash at %s, then a clean run: every change lands exactly once', async (point) => {
    await using source = await testSource('crash');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(40), n INT); CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(40), n INT)');
    await source.capture();
    await source.sql("INSERT INTO a VALUES (1,'x',1),(2,'y',2); BEGIN; INSERT INTO b VALUES (1,'z',1); UPDATE a SET n = 5; COMMIT; DELETE FROM a WHERE id = 2");

    await expect(source.capture({ faults: crashAt(point) })).rejects.toBeInstanceOf(InjectedFault);
    const crashed = await source.state();
    // Before the commit nothing moved; after it the renames are recorded as pending.
    expect(crashed?.pending !== undefined).toBe(point !== 'after-staging');

    await source.sql("INSERT INTO a VALUES (3,'later',3)");
    await source.capture();
    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a', 'b']);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    expect(events).toHaveLength(7);
    expect(await source.stagingKeys()).toEqual([]);
    expect((await source.state())?.pending).toBeUndefined();
  });

  it('a pending commit stored by the previous release (with its own commitSeq) still rolls forward', async () => {
    await using source = await testSource('legacy');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(40), n INT)');
    await source.capture();
    await source.sql("INSERT INTO a VALUES (1,'x',1),(2,'y',2)");
    await expect(source.capture({ faults: crashAt('after-commit') })).rejects.toBeInstanceOf(InjectedFault);
    const crashed = await source.state();
    // The previous release wrote pending = { commitSeq, copies }.
    await source.clients.dynamo.send(
      new UpdateItemCommand({
        TableName: source.config.stateTable,
        Key: { pk: { S: `source#${source.db}` } },
        UpdateExpression: 'SET #pending.#seq = :seq',
        ExpressionAttributeNames: { '#pending': 'pending', '#seq': 'commitSeq' },
        ExpressionAttributeValues: { ':seq': { N: String(crashed?.commitSeq) } },
      }),
    );
    await source.capture();
    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a']);
    expect(events.map((e) => e.commitSeq)).toEqual([2, 2]); // commit 1 saved the schema catalog the source started with
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    expect(await source.stagingKeys()).toEqual([]);
    expect((await source.state())?.pending).toBeUndefined();
  });

  it('a committed commit whose staging objects vanished stops the source with STAGING_LOST, shown by status', async () => {
    await using source = await testSource('staginglost');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(40), n INT)');
    await source.capture();
    await source.sql("INSERT INTO a VALUES (1,'x',1)");
    await expect(source.capture({ faults: crashAt('after-commit') })).rejects.toBeInstanceOf(InjectedFault);
    // Something else deletes staging (a lifecycle rule, a clean-up) before the renames ran.
    const staged = await source.stagingKeys();
    expect(staged.length).toBeGreaterThan(0);
    await source.clients.s3.send(new DeleteObjectsCommand({ Bucket: source.config.bucket, Delete: { Objects: staged.map((Key) => ({ Key })) } }));

    await expect(source.capture()).rejects.toMatchObject({ code: 'STAGING_LOST', retriable: false });
    expect((await source.state())?.error?.code).toBe('STAGING_LOST');
    const stdout: string[] = [];
    await run(['status'], { env: cliEnv(source), stdout: { write: (text: string) => stdout.push(text) }, stderr: { write: () => true } });
    expect(stdout.join('')).toMatch(/^error\s+STAGING_LOST: staging object .* and final object .* are both missing/m);
    expect(await source.dataManifests()).toEqual([]);
  });

  it('a zombie whose lease expired cannot commit; its successor captures everything once', async () => {
    await using source = await testSource('zombie');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(40), n INT)');
    await source.capture();
    await source.sql("INSERT INTO a VALUES (1,'x',1),(2,'y',2)");

    let successor: Awaited<ReturnType<typeof source.capture>> | undefined;
    // The zombie stalls after staging (a GC pause, a frozen container) until its 3 s lease is gone:
    // a new run, 3.2 s later by its clock, takes over, cleans the zombie's staging and commits the same changes.
    const zombie = source.capture({
      budgetMs: 3_000,
      faults: {
        async hit(point) {
          if (point !== 'after-staging') return;
          successor = await source.capture({ clock: () => Date.now() + 3_200 });
        },
      },
    });
    await expect(zombie).rejects.toBeInstanceOf(LeaseLostError);
    expect(successor?.status).toBe('captured');
    expect(successor?.events).toBe(2);
    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a']);
    expect(events).toHaveLength(2);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
  });
});

describe('on a private server (these change server-wide settings)', () => {
  let dir: string;
  let server: PrivateServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-private-'));
    server = await startPrivateServer(dir, inject('stackServer'));
  });
  afterAll(async () => {
    await stopProcess(server.pid);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a purged binlog position fails with a clear error, recorded for status, and skips nothing', async () => {
    await using source = await testSource('purge', server.env);
    const admin = await mysql.createConnection({ uri: server.adminUrl, multipleStatements: true });
    await admin.query(`CREATE DATABASE ${source.db}; CREATE TABLE ${source.db}.a (id INT PRIMARY KEY)`);
    await source.capture();
    await admin.query(`INSERT INTO ${source.db}.a VALUES (1); FLUSH BINARY LOGS; INSERT INTO ${source.db}.a VALUES (2); FLUSH BINARY LOGS`);
    const [[newest]] = (await admin.query('SHOW MASTER STATUS')) as unknown as [[{ File: string }]];
    // MariaDB keeps a binlog until the storage engine's checkpoint has passed it: retry until gone.
    for (let attempt = 0; attempt < 100; attempt++) {
      await admin.query(`PURGE BINARY LOGS TO '${newest.File}'`);
      const [logs] = (await admin.query('SHOW BINARY LOGS')) as unknown as [{ Log_name: string }[]];
      if (logs[0]?.Log_name === newest.File) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await admin.end();

    const failure = source.capture();
    await expect(failure).rejects.toBeInstanceOf(PositionLostError);
    await expect(failure).rejects.toThrow(/not on the server.*purged.*re-snapshot/s);
    expect((await source.state())?.error?.code).toBe('POSITION_LOST');
    expect(await source.dataManifests()).toEqual([]);
  });

  it('status reports how long until the binlog holding the stored position may be purged', async () => {
    await using source = await testSource('purgerisk', server.env);
    const admin = await mysql.createConnection({ uri: server.adminUrl, multipleStatements: true });
    await admin.query(`SET GLOBAL binlog_expire_logs_seconds = 7200; CREATE DATABASE ${source.db}; CREATE TABLE ${source.db}.a (id INT PRIMARY KEY)`);
    try {
      await source.capture();
      const open = await sourceStatus(source.config, source.clients.store);
      expect(open).toMatchObject({ retentionSeconds: 7200, timeToPurgeSeconds: 7200 }); // the current file is not purgeable yet
      await admin.query('FLUSH BINARY LOGS');
      // Status asked 2.1 s after the flush: its clock says so, instead of a wait.
      const later = Date.now() + 2100;
      const closed = await sourceStatus(source.config, source.clients.store, later);
      expect(closed.timeToPurgeSeconds).toBeGreaterThan(7200 - 10);
      expect(closed.timeToPurgeSeconds).toBeLessThanOrEqual(7200 - 1); // the clock runs from when the next file started
      // Read again through a binlog stream that pauses (1 s, three idle ticks) before its first event.
      const proxy = await stallingProxy(new URL(server.url), 1000);
      try {
        const stalled = await sourceStatus({ ...source.config, mysqlUrl: proxy.url }, source.clients.store, later);
        expect(stalled.timeToPurgeSeconds).toBeGreaterThan(7200 - 15);
        expect(stalled.timeToPurgeSeconds).toBeLessThanOrEqual(7200 - 1);
      } finally {
        await proxy.close();
      }
      await admin.query('SET GLOBAL binlog_expire_logs_seconds = 0');
      expect(await sourceStatus(source.config, source.clients.store)).toMatchObject({ retentionSeconds: null, timeToPurgeSeconds: null });
    } finally {
      await admin.query('SET GLOBAL binlog_expire_logs_seconds = 0');
      await admin.end();
    }
  });

  it('a timestamp: startup scan ends at the binlog end though the last group there is an open XA PREPARE', async () => {
    await using source = await testSource('xaend', server.env);
    const admin = await mysql.createConnection({ uri: server.adminUrl, multipleStatements: true });
    const position = async () => {
      const [[row]] = (await admin.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number }]];
      return { file: row.File, pos: Number(row.Position) };
    };
    try {
      await admin.query(`CREATE DATABASE ${source.db}; CREATE TABLE ${source.db}.a (id INT PRIMARY KEY)`);
      const before = await position();
      await admin.query(`XA START 'scanend'; INSERT INTO ${source.db}.a VALUES (1); XA END 'scanend'; XA PREPARE 'scanend'`);
      const end = await position();
      // No transaction begins at or after an hour from now: the scan runs to the end and stops there.
      const config = loadConfig({
        ...process.env,
        ...server.env,
        SLUICE_STARTUP: `timestamp:${new Date(Date.now() + 3_600_000).toISOString()}`,
      });
      const conn = await connect(await mysqlTarget(config));
      const began = Date.now();
      try {
        const start = await startupPosition(config, conn, silentLog);
        expect(Date.now() - began).toBeLessThan(10_000);
        // Before the open group: a source starting there reads the XA transaction whole.
        expect(comparePositions(start, before)).toBeGreaterThanOrEqual(0);
        expect(comparePositions(start, end)).toBeLessThan(0);
      } finally {
        await conn.end();
      }
    } finally {
      await admin.query("XA ROLLBACK 'scanend'").catch(() => {});
      await admin.end();
    }
  });

  it('refuses a server without FULL row metadata, naming the fix', async () => {
    const admin = await mysql.createConnection({ uri: server.adminUrl });
    await admin.query("SET GLOBAL binlog_row_metadata = 'MINIMAL'");
    try {
      const conn = await connect(server.target);
      await expect(preflight(conn).finally(() => conn.end())).rejects.toThrow(/binlog_row_metadata is MINIMAL.*SET GLOBAL binlog_row_metadata = 'FULL'/);
    } finally {
      await admin.query("SET GLOBAL binlog_row_metadata = 'FULL'");
      await admin.end();
    }
  });
});
