import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { runCapture } from '../../lib/capture/run.ts';
import { run } from '../../lib/cli/main.ts';
import { type Config, loadConfig } from '../../lib/config/config.ts';
import type { BinlogPosition } from '../../lib/core/position.ts';
import type { TableRef } from '../../lib/core/table-ref.ts';
import { stopProcess } from '../../lib/local/process.ts';
import { silentLog } from '../../lib/log.ts';
import { eventLines } from '../../lib/materialize/change-log.ts';
import { importState } from '../../lib/ops/state-admin.ts';
import { sourceStatus } from '../../lib/ops/status.ts';
import { snapshotsToRun } from '../../lib/snapshot/plan.ts';
import { runSnapshotWorker } from '../../lib/snapshot/worker.ts';
import { type PrivateServer, startPrivateServer } from '../support/private-server.ts';

/*
 * Resuming only on the right binlog history, against private servers (MariaDB, or MySQL under
 * test:live-mysql): RESET MASTER and FLUSH BINARY LOGS rewrite binlog files for everyone reading the
 * server, so never on the shared one.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Server {
  instance: PrivateServer;
  admin: mysql.Connection;
  dir: string;
}

async function server(): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-history-'));
  const instance = await startPrivateServer(join(dir, 'db'), inject('stackServer'));
  const admin = await mysql.createConnection({ uri: instance.adminUrl, multipleStatements: true, dateStrings: true });
  return { instance, admin, dir };
}

async function stop(s: Server | undefined): Promise<void> {
  if (!s) return;
  await s.admin.end().catch(() => undefined);
  await stopProcess(s.instance.pid);
  rmSync(s.dir, { recursive: true, force: true });
}

/** A source reading `url`, on the shared DynamoDB and S3. */
async function sourceOn(server: PrivateServer, sourceId = `history-${randomBytes(3).toString('hex')}`) {
  const env = {
    ...inject('stackEnv'),
    ...server.env,
    SLUICE_SOURCE_ID: sourceId,
    SLUICE_PREFIX: sourceId,
    SLUICE_INCLUDE: 'shop\\..*',
    SLUICE_STARTUP: 'latest',
  };
  const config = loadConfig(env);
  const clients = createClients(config);
  await initResources(config, clients);
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: silentLog };
  const cli = async (args: string[]) => {
    const out: string[] = [];
    const code = await run(args, {
      env: { ...env, SLUICE_HOME: '/nonexistent' },
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => out.push(t) },
    });
    return { code, out: out.join('') };
  };
  return {
    config,
    clients,
    cli,
    capture: (config2: Config = config) => runCapture({ ...deps, config: config2 }, { budgetMs: 20_000, stopWhenCaughtUp: true }),
    state: () => clients.store.get(config.sourceId),
    async snapshot(tables: TableRef[]) {
      for (const job of await snapshotsToRun(deps, { tables })) await runSnapshotWorker(deps, { budgetMs: 30_000, snapshotId: job.id, workerId: 'w' });
    },
    /** The output materialized per key: greatest seq wins. */
    async rows(): Promise<Record<string, unknown>[]> {
      const latest = new Map<string, { seq: string; op: string; after: Record<string, unknown> | null }>();
      for await (const { line } of eventLines(clients.s3, config.bucket, config.prefix, config.sourceId)) {
        const event = JSON.parse(line) as { seq: string; op: string; key: unknown; after: Record<string, unknown> | null };
        const key = JSON.stringify(event.key);
        if (!latest.has(key) || (latest.get(key)?.seq ?? '') < event.seq) latest.set(key, event);
      }
      return [...latest.values()]
        .filter((e) => e.op !== 'd' && e.after)
        .map((e) => e.after as Record<string, unknown>)
        .sort((a, b) => Number(a.id) - Number(b.id));
    },
  };
}

const tableRows = async (s: Server) => (await s.admin.query('SELECT * FROM shop.t ORDER BY id'))[0] as Record<string, unknown>[];

describe('binlog history (private servers)', () => {
  let a: Server | undefined;
  let b: Server | undefined;
  beforeAll(async () => {
    [a, b] = await Promise.all([server(), server()]);
  });
  afterAll(async () => {
    await Promise.all([stop(a), stop(b)]);
  });

  it('after RESET MASTER re-creates the stored position’s file, the run stops with POSITION_FOREIGN and reads nothing; reset + snapshot recovers', async () => {
    const s = a as Server;
    const source = await sourceOn(s.instance);
    await s.admin.query('CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20))');
    await source.capture();
    await s.admin.query("INSERT INTO shop.t VALUES (1, 'one'), (2, 'two'); FLUSH BINARY LOGS");
    await source.capture();
    let stored = await source.state();
    // The position's history: its file and when that file was created.
    expect(stored?.history).toMatchObject({ file: stored?.position?.file, serverId: 1 });
    expect(Math.abs((stored?.history?.created ?? 0) - Date.now())).toBeLessThan(60_000);
    expect(stored?.position?.file).toBe('binlog.000002');

    // A new history with its own binlog.000002, in which the stored offset is a valid boundary: the
    // start of a transaction. The two files' headers may differ by a binlog checkpoint event (MariaDB
    // writes those when InnoDB gets to them), so the stored offset is set to that boundary, as a
    // savepoint of the old history would hold it.
    await sleep(1100);
    await s.admin.query("RESET MASTER; INSERT INTO shop.t VALUES (3, 'three'); FLUSH BINARY LOGS; INSERT INTO shop.t VALUES (4, 'four'), (5, 'five')");
    const [events] = (await s.admin.query("SHOW BINLOG EVENTS IN 'binlog.000002'")) as unknown as [{ Event_type: string; Pos: number }[]];
    const boundary = events.find((e) => e.Event_type === 'Gtid')?.Pos as number;
    const savepoint = {
      format: 'sluice-state/v1',
      source: source.config.sourceId,
      position: { file: 'binlog.000002', pos: boundary },
      history: stored?.history,
      commitSeq: stored?.commitSeq,
    };
    await importState(source.config, source.clients.store, savepoint, { force: true, log: silentLog });
    stored = await source.state();
    expect(stored?.position).toEqual({ file: 'binlog.000002', pos: boundary }); // without the history check, these rows would be read as if they followed
    const failure = await source.capture().catch((error: Error & { code?: string }) => error);
    expect(failure).toMatchObject({ code: 'POSITION_FOREIGN' });
    expect((failure as Error).message).toMatch(
      /the position was recorded in a binlog\.000002 created at .*, on server_id 1( \(server_uuid [\da-f-]+\))?; this server's \(server_id 1(, server_uuid [\da-f-]+)?\) binlog\.000002 was created at /,
    );
    expect((failure as Error).message).toContain('RESET MASTER');
    expect((failure as Error).message).toContain('`sluice state reset --to latest` (the next run resets every table and copies it again)');
    expect((await source.state())?.position).toEqual(stored?.position);
    expect((await sourceStatus(source.config, source.clients.store)).error?.code).toBe('POSITION_FOREIGN');
    expect(await source.rows()).toEqual([
      { id: 1, v: 'one' },
      { id: 2, v: 'two' },
    ]);

    // The recovery the message names: the reset's next run asks for the copy.
    expect((await source.cli(['state', 'reset', '--to', 'latest'])).code).toBe(0);
    await source.capture();
    await source.snapshot([{ db: 'shop', table: 't' }]);
    await s.admin.query("INSERT INTO shop.t VALUES (6, 'six')");
    expect((await source.capture()).status).toBe('captured');
    expect(await source.rows()).toEqual(await tableRows(s));
  });

  it('a position from another server with the same file names stops with POSITION_FOREIGN, with or without a recorded history', async () => {
    const [first, second] = [a as Server, b as Server];
    const source = await sourceOn(first.instance);
    await first.admin.query('CREATE DATABASE IF NOT EXISTS shop; CREATE TABLE IF NOT EXISTS shop.t (id INT PRIMARY KEY, v VARCHAR(20))');
    await source.capture();
    await first.admin.query("INSERT INTO shop.t VALUES (100, 'a') ON DUPLICATE KEY UPDATE v = 'a'");
    await source.capture();
    const stored = (await source.state())?.position as BinlogPosition;
    // MariaDB's d-s-n, or MySQL's uuid:n.
    expect(stored.gtid).toMatch(inject('stackServer') === 'mysql' ? /^[\da-f-]{36}:\d+$/ : /^0-1-\d+$/);

    // The second server has the same server id, file names and GTID domain; its files are other
    // files, created a second later. Its transactions get the stored GTID too (MariaDB).
    await sleep(1100);
    await second.admin.query('CREATE DATABASE IF NOT EXISTS shop; CREATE TABLE IF NOT EXISTS shop.t (id INT PRIMARY KEY, v VARCHAR(20))');
    const master = async () => ((await second.admin.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number }]])[0][0];
    while ((await master()).File < stored.file) await second.admin.query('FLUSH BINARY LOGS');
    for (let i = 0; Number((await master()).Position) <= stored.pos + 1000; i++) await second.admin.query(`INSERT INTO shop.t VALUES (${i}, 'b')`);
    expect((await master()).File).toBe(stored.file);
    const other: Config = { ...source.config, mysqlUrl: second.instance.url, mysqlCa: second.instance.env.SLUICE_MYSQL_CA };
    const withHistory = await source.capture(other).catch((error: Error & { code?: string }) => error);
    expect(withHistory).toMatchObject({ code: 'POSITION_FOREIGN' });
    // It is not followed there: on MariaDB it has the server_id of the server read (the same GTIDs
    // name other transactions); MySQL's position holds no set yet (no rotation read), and this
    // server lacks its GTID.
    expect((withHistory as Error).message).toMatch(
      inject('stackServer') === 'mysql'
        ? /This server cannot be repositioned by GTID: /
        : /sluice did not move by itself: this is the server the position was read on \(server_id 1\)/,
    );
    expect((await source.state())?.position).toEqual(stored);

    // An item stored before histories were recorded: checked by GTID instead.
    let state = await source.clients.store.acquireLease(source.config.sourceId, 'admin', Date.now() + 30_000, Date.now());
    state = await source.clients.store.overwrite(
      { sourceId: source.config.sourceId, owner: 'admin', expectVersion: state.version, now: Date.now() },
      { position: stored, commitSeq: state.commitSeq, epoch: state.epoch + 1 },
    );
    await source.clients.store.releaseLease(source.config.sourceId, 'admin');
    expect(state.history).toBeUndefined();
    const withoutHistory = await source.capture(other).catch((error: Error & { code?: string }) => error);
    expect(withoutHistory).toMatchObject({ code: 'POSITION_FOREIGN' });
    expect((await source.state())?.position).toEqual(stored);

    // On its own server, the item without a history resumes and records one at its next write.
    await first.admin.query("INSERT INTO shop.t VALUES (101, 'b')");
    expect((await source.capture()).status).toBe('captured');
    expect((await source.state())?.history?.file).toBe((await source.state())?.position?.file);
  });

  it('runs preflight at every run: a global setting changed between two runs stops the second', async () => {
    const s = a as Server;
    const source = await sourceOn(s.instance);
    await source.capture();
    await s.admin.query("SET GLOBAL binlog_row_image = 'MINIMAL'");
    try {
      await expect(source.capture()).rejects.toMatchObject({ code: 'PREFLIGHT_BINLOG_ROW_IMAGE' });
    } finally {
      await s.admin.query("SET GLOBAL binlog_row_image = 'FULL'");
    }
    expect((await source.capture()).status).toBe('captured');
  });
});
