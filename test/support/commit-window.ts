import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { expect } from 'vitest';
import { stopProcess } from '../../lib/local/process.ts';
import type { LocalServer } from '../../lib/local/stack.ts';
import { expectVerified, sourceOn } from './history-source.ts';
import { appSeed, appTable } from './keyed-app.ts';
import { startPrivateServer } from './private-server.ts';
import { type ChangeEvent, materialize } from './source.ts';

/*
 * A group commit writes a transaction to the binlog before it commits it in the engine; in between
 * it lies before the binlog end that SHOW MASTER STATUS reports while no read sees it (issue #30:
 * compressed transactions on MySQL widen that moment). A snapshot page whose watermark was read then
 * kept the older rows under a seq above the transaction's events: cells older than the server's,
 * deleted rows back, a key changed in case only (the same row to MySQL) twice. Here the window is
 * held open for a second while an initial snapshot pages through the table: MySQL's
 * binlog_group_commit_sync_delay, MariaDB's semi-synchronous replication waiting (AFTER_SYNC) for a
 * replica that never answers.
 */

const HOLD: Record<LocalServer, string> = {
  mysql: 'SET GLOBAL binlog_group_commit_sync_delay = 1000000',
  mariadb:
    'SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC; SET GLOBAL rpl_semi_sync_master_timeout = 1500; SET GLOBAL rpl_semi_sync_master_enabled = ON',
};

/** One transaction of every shape: value updates, case-only and trailing-space-only key changes, a key moved, deletes, inserts, REPLACE and INSERT … ON DUPLICATE KEY UPDATE in another case. */
const HELD = `BEGIN;
UPDATE a SET v = v + 1000, w = 'held' WHERE n = 2;
UPDATE a SET name = UPPER(name) WHERE n = 1;
UPDATE a SET name = RTRIM(name), w = 'trimmed' WHERE n = 3 AND MOD(v, 2) = 0;
UPDATE a SET n = 7 WHERE n = 3 AND MOD(v, 5) = 1;
DELETE FROM a WHERE n = 2 AND MOD(v, 7) = 0;
INSERT INTO a VALUES ('new1', 4, 1, 'held'), ('NEW2 ', 4, 2, 'held');
REPLACE INTO a VALUES ('k5', 1, -5, 'replaced');
INSERT INTO a VALUES ('k6 ', 1, 0, 'x') ON DUPLICATE KEY UPDATE name = VALUES(name), w = 'dup';
COMMIT`;

/**
 * On a private server of `kind` (more server options in `args`): an initial snapshot in pages of 5
 * rows, a transaction of every shape (compressed on MySQL) held between its binlog write and its
 * engine commit while pages are read, then capture; the output must equal the table, every cell,
 * and `sluice verify` must agree.
 */
export async function expectHeldCommitCaptured(kind: LocalServer, args: string[] = [], options: { grants?: string } = {}): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-window-'));
  const server = await startPrivateServer(join(dir, 'db'), kind, args);
  const admin = await mysql.createConnection({ uri: server.adminUrl, multipleStatements: true });
  let writer: mysql.Connection | undefined;
  try {
    await admin.query(`CREATE DATABASE hw; USE hw; ${appTable('a')}; ${appSeed('a', 120)}`);
    writer = await mysql.createConnection({ uri: server.adminUrl, database: 'hw', multipleStatements: true });
    if (kind === 'mysql') await writer.query('SET SESSION binlog_transaction_compression = ON');
    // sluice's account, or one holding only `grants` (and its replication grants).
    const url = new URL(server.url);
    if (options.grants) {
      url.username = 'limited';
      url.password = 'limited-pw';
      await admin.query(
        `CREATE USER 'limited'@'%' IDENTIFIED BY 'limited-pw'; GRANT REPLICATION SLAVE, REPLICATION CLIENT, ${options.grants} ON *.* TO 'limited'@'%'`,
      );
    }
    // 360 rows in pages of 5: the snapshot reads pages for seconds.
    const src = await sourceOn(url.toString(), 'hw', {
      ...server.env,
      SLUICE_MYSQL_URL: url.toString(),
      SLUICE_STARTUP: 'initial',
      SLUICE_SNAPSHOT_PAGE_ROWS: '5',
    });
    await src.capture();
    await admin.query(HOLD[kind]);
    let copied = false;
    const snapshot = src.snapshots().then(() => {
      copied = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(copied).toBe(false);
    await writer.query(HELD);
    await snapshot;
    await src.capture();

    if (kind === 'mysql') {
      const [[status]] = (await admin.query('SHOW MASTER STATUS')) as unknown as [{ File: string }[]];
      const [events] = (await admin.query(`SHOW BINLOG EVENTS IN '${status?.File}'`)) as unknown as [{ Event_type: string }[]];
      expect(events.map((e) => e.Event_type)).toContain('Transaction_payload');
    }
    const state = materialize((await src.events()) as unknown as ChangeEvent[], 'a');
    const [rows] = (await admin.query('SELECT * FROM hw.a')) as unknown as [Record<string, unknown>[]];
    const expected = new Map(rows.map((r) => [JSON.stringify({ name: r.name, n: r.n }), r]));
    const differences: string[] = [];
    for (const [key, row] of expected)
      if (JSON.stringify(state.get(key)) !== JSON.stringify(row))
        differences.push(`${key}: server ${JSON.stringify(row)} output ${JSON.stringify(state.get(key))}`);
    for (const key of state.keys()) if (!expected.has(key)) differences.push(`${key}: only in the output`);
    expect(differences.slice(0, 10)).toEqual([]);
    await expectVerified(src, ['hw.a']);
  } finally {
    await writer?.end().catch(() => undefined);
    await admin.end().catch(() => undefined);
    await stopProcess(server.pid);
    rmSync(dir, { recursive: true, force: true });
  }
}
