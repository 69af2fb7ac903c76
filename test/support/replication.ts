import mysql from 'mysql2/promise';
import type { LocalServer } from '../../lib/local/stack.ts';

/*
 * GTID replication between private servers of one flavor, for the tests of failovers: a replica
 * copies a primary by GTID (MariaDB `MASTER_USE_GTID = slave_pos`, MySQL `SOURCE_AUTO_POSITION`),
 * is waited for, promoted, and — once its old primary is retired — that server is made a fresh
 * replica of the new primary from a copy of its tables, as one builds a replica from a dump.
 */

/** One server of a replication pair: its flavor, an admin connection (multiple statements allowed), its port and admin URL. */
export interface ReplicationNode {
  kind: LocalServer;
  admin: mysql.Connection;
  port: number;
  adminUrl: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function one(conn: mysql.Connection, sql: string): Promise<string> {
  return String(((await conn.query(sql)) as unknown as [{ v: string | null }[]])[0][0]?.v ?? '').replace(/\s/g, '');
}

/** What `node` has logged: MariaDB every domain's last GTID (`gtid_binlog_pos`), MySQL `gtid_executed`. */
export const loggedGtids = (node: ReplicationNode): Promise<string> =>
  one(node.admin, node.kind === 'mariadb' ? 'SELECT @@GLOBAL.gtid_binlog_pos AS v' : 'SELECT @@GLOBAL.gtid_executed AS v');

/** What `node` has applied as a replica (MariaDB `gtid_slave_pos`; MySQL: executed, as above). */
const appliedGtids = (node: ReplicationNode): Promise<string> =>
  one(node.admin, node.kind === 'mariadb' ? 'SELECT @@GLOBAL.gtid_slave_pos AS v' : 'SELECT @@GLOBAL.gtid_executed AS v');

/**
 * Makes `replica` copy `primary` by GTID from where its GTID state says it is (`until`: MariaDB
 * only, up to that position). The replica retries a lost connection every second.
 */
export async function replicate(replica: ReplicationNode, primary: { port: number }, until?: string): Promise<void> {
  if (replica.kind === 'mariadb') {
    await replica.admin.query(
      `CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ${primary.port}, MASTER_USER = 'sluice_admin', MASTER_PASSWORD = 'sluice-admin', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1`,
    );
    await replica.admin.query(until ? `START SLAVE UNTIL master_gtid_pos = '${until}'` : 'START SLAVE');
    return;
  }
  await replica.admin.query(
    `CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = ${primary.port}, SOURCE_USER = 'sluice_admin', SOURCE_PASSWORD = 'sluice-admin', SOURCE_AUTO_POSITION = 1, SOURCE_SSL = 1, GET_SOURCE_PUBLIC_KEY = 1, SOURCE_CONNECT_RETRY = 1`,
  );
  await replica.admin.query('START REPLICA');
}

/** Waits until `replica` has applied `gtids` (default: everything `primary` has logged). */
export async function caughtUp(primary: ReplicationNode, replica: ReplicationNode, gtids?: string): Promise<void> {
  const wanted = gtids ?? (await loggedGtids(primary));
  for (let i = 0; i < 600; i++) {
    if ((await appliedGtids(replica)) === wanted) return;
    await sleep(50);
  }
  const status = (await replica.admin.query(replica.kind === 'mariadb' ? 'SHOW SLAVE STATUS' : 'SHOW REPLICA STATUS')) as unknown as [
    Record<string, unknown>[],
  ];
  const errors = Object.entries(status[0][0] ?? {}).filter(([k, v]) => /Last_(IO_|SQL_)?Error$/.test(k) && v);
  throw new Error(`the replica did not catch up with ${wanted} (at ${await appliedGtids(replica)}; ${JSON.stringify(errors)})`);
}

/** Stops the replica's threads: what it has not received by now it lacks (the asynchronous replication gap). */
export async function stopReplication(replica: ReplicationNode): Promise<void> {
  await replica.admin.query(replica.kind === 'mariadb' ? 'STOP SLAVE' : 'STOP REPLICA');
}

/** Promotes `replica`: it stops replicating and forgets its primary, a server of its own that takes writes. */
export async function promote(replica: ReplicationNode): Promise<void> {
  await stopReplication(replica);
  await replica.admin.query(replica.kind === 'mariadb' ? 'RESET SLAVE ALL' : 'RESET REPLICA ALL');
}

/**
 * Makes `server` a fresh replica of `primary`, whatever it held before (a retired primary with
 * transactions nobody else has, a replica broken by its primary's RESET MASTER): its copies of
 * `databases` are replaced by `primary`'s, its binlog starts again at `primary`'s GTID state (MariaDB
 * `gtid_binlog_state` and `gtid_slave_pos`, MySQL `gtid_purged`), and it replicates from there. Its
 * binlog holds only what it applies after the copy, as a replica built from a dump. `primary` must
 * take no writes meanwhile.
 */
export async function reseedReplica(server: ReplicationNode, primary: ReplicationNode, databases: string[]): Promise<void> {
  const mariadb = server.kind === 'mariadb';
  await server.admin.query(mariadb ? 'STOP SLAVE; RESET SLAVE ALL' : 'STOP REPLICA; RESET REPLICA ALL');
  const state = await one(primary.admin, mariadb ? 'SELECT @@GLOBAL.gtid_binlog_state AS v' : 'SELECT @@GLOBAL.gtid_executed AS v');
  const position = mariadb ? await loggedGtids(primary) : state;
  await server.admin.query('SET SESSION sql_log_bin = 0');
  try {
    for (const db of databases) {
      await server.admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
      const [exists] = (await primary.admin.query('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [db])) as unknown as [unknown[]];
      if (exists.length) await copyDatabase(primary, server, db);
    }
  } finally {
    await server.admin.query('SET SESSION sql_log_bin = 1');
  }
  await server.admin.query('RESET MASTER');
  if (mariadb) await server.admin.query(`SET GLOBAL gtid_binlog_state = '${state}'; SET GLOBAL gtid_slave_pos = '${position}'`);
  else if (state) await server.admin.query(`SET GLOBAL gtid_purged = '${state}'`);
  await replicate(server, primary);
}

/**
 * Copies database `db` from `from` to `to` (its tables' definitions and rows). Rows are read over
 * the binary protocol, which gives DOUBLE exactly (the text protocol's digits do not always
 * round-trip), with DECIMAL, BIGINT, temporal and JSON values as text and binary values as bytes.
 */
async function copyDatabase(from: ReplicationNode, to: ReplicationNode, db: string): Promise<void> {
  const reader = await mysql.createConnection({ uri: from.adminUrl, dateStrings: true, supportBigNumbers: true, bigNumberStrings: true, jsonStrings: true });
  try {
    await copyTables(from, reader, to, db);
  } finally {
    await reader.end();
  }
}

async function copyTables(from: ReplicationNode, reader: mysql.Connection, to: ReplicationNode, db: string): Promise<void> {
  const [[create]] = (await from.admin.query(`SHOW CREATE DATABASE \`${db}\``)) as unknown as [[Record<string, string>]];
  await to.admin.query(create?.['Create Database'] as string);
  const [tables] = (await from.admin.query(`SHOW FULL TABLES FROM \`${db}\` WHERE Table_type = 'BASE TABLE'`)) as unknown as [Record<string, string>[]];
  for (const row of tables) {
    const table = Object.values(row)[0] as string;
    const name = `\`${db}\`.\`${table}\``;
    const [[definition]] = (await from.admin.query(`SHOW CREATE TABLE ${name}`)) as unknown as [[Record<string, string>]];
    await to.admin.query(`USE \`${db}\``);
    await to.admin.query(definition?.['Create Table'] as string);
    const [rows] = (await reader.execute({ sql: `SELECT * FROM ${name}`, rowsAsArray: true })) as unknown as [unknown[][]];
    for (let at = 0; at < rows.length; at += 500) await to.admin.query(`INSERT INTO ${name} VALUES ?`, [rows.slice(at, at + 500)]);
  }
}
