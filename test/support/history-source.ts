import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import mysql from 'mysql2/promise';
import { expect, inject } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { runCapture } from '../../lib/capture/run.ts';
import { run } from '../../lib/cli/main.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { runIcebergMerge } from '../../lib/iceberg/merge/merge.ts';
import { loadVersion } from '../../lib/iceberg/table/table.ts';
import { stopProcess } from '../../lib/local/process.ts';
import type { LocalServer } from '../../lib/local/stack.ts';
import type { Log } from '../../lib/log.ts';
import { eventLines } from '../../lib/materialize/change-log.ts';
import { s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { snapshotsToRun } from '../../lib/snapshot/plan.ts';
import { runSnapshotWorker } from '../../lib/snapshot/worker.ts';
import { verify } from '../../lib/verify/verify.ts';
import { icebergRowsAt, mysqlTextOf } from './iceberg-merge.ts';
import { type PrivateServer, startPrivateServer } from './private-server.ts';
import { caughtUp as caughtUpNode, loggedGtids, type ReplicationNode, replicate as replicateNode, stopReplication } from './replication.ts';
import { switchingProxy } from './stalling-proxy.ts';

/*
 * Sources on private servers of the suite's flavor (MariaDB, or MySQL under `npm run
 * test:live-mysql`), for the tests of changes of binlog history: replication between them, a
 * restore, a source whose endpoint can be moved, and the checks that its output equals a server.
 */

/** A server of a test's own, for what rewrites the binlog for everyone reading a server (RESET MASTER, replication). */
export interface Server {
  kind: LocalServer;
  instance: PrivateServer;
  admin: mysql.Connection;
  dir: string;
  /** How sluice reaches it (on MySQL, the verified TLS its account needs). */
  env: Record<string, string>;
}

/** Starts one of the suite's flavor (`kind`), with extra server options in `args` (e.g. another `--server-id`). */
export async function server(args: string[] = [], kind: LocalServer = inject('stackServer')): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-private-'));
  const instance = await startPrivateServer(join(dir, 'db'), kind, args);
  const admin = await mysql.createConnection({ uri: instance.adminUrl, multipleStatements: true, dateStrings: true });
  const { SLUICE_MYSQL_URL: _, ...env } = instance.env;
  return { kind, instance, admin, dir, env };
}

/** Stops it and deletes its files. */
export async function stop(s: Server | undefined): Promise<void> {
  if (!s) return;
  await s.admin.end().catch(() => undefined);
  await stopProcess(s.instance.pid);
  rmSync(s.dir, { recursive: true, force: true });
}

/** One value of a query on `s`. */
export async function one(s: Server, sql: string): Promise<string | undefined> {
  return ((await s.admin.query(sql)) as unknown as [{ v: string }[]])[0][0]?.v;
}

const node = (s: Server): ReplicationNode => ({ kind: s.kind, admin: s.admin, port: s.instance.port, adminUrl: s.instance.adminUrl });

/**
 * A primary and a replica copying it by GTID, whose binlog logs what it applies: on MariaDB from
 * the primary's first transaction on; on MySQL from now on (the replica takes what the primary has
 * executed so far as purged: its bootstrap, which a replica of a restored backup has as data).
 */
export async function pair(): Promise<[Server, Server]> {
  const kind = inject('stackServer');
  const [primary, replica] = await Promise.all([server(), server(['--server-id=2', ...(kind === 'mariadb' ? ['--log-slave-updates=ON'] : [])])]);
  if (kind === 'mariadb') await replica.admin.query("SET GLOBAL gtid_slave_pos = ''");
  else await replica.admin.query(`RESET MASTER; SET GLOBAL gtid_purged = '${await loggedGtids(node(primary))}'`);
  await replicate(replica, primary);
  return [primary, replica];
}

/** Makes `replica` copy `primary` by GTID (./replication.ts). `until`: only up to that position, MariaDB's START SLAVE UNTIL. */
export const replicate = (replica: Server, primary: Server, until?: string): Promise<void> => replicateNode(node(replica), node(primary), until);

/** Stops `replica` copying: it is promoted. */
export const promote = (replica: Server): Promise<void> => stopReplication(node(replica));

/** Waits until `replica` has applied `gtids` (default: everything `primary` has logged). */
export const caughtUp = (primary: Server, replica: Server, gtids?: string): Promise<void> => caughtUpNode(node(primary), node(replica), gtids);

/** `SHOW MASTER STATUS`: the end of `s`'s binlog. */
export async function binlogEnd(s: Server): Promise<{ File: string; Position: number }> {
  const [[row]] = (await s.admin.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number | string }]];
  return { File: row.File, Position: Number(row.Position) };
}

/** `n` rows `(from + i, text(i))`, as SQL VALUES, for inserts that read the same on both flavors. */
export function rowsOf(from: number, n: number, text: (i: number) => string): string {
  return Array.from({ length: n }, (_, i) => `(${from + i}, '${text(from + i)}')`).join(', ');
}

/**
 * A restore of `from`'s database `db` into `to`, a new server: its tables and rows as they are now,
 * written with sql_log_bin off, so `to`'s binlog history is its own (as a restored backup or
 * snapshot has it).
 */
export async function restore(from: Server, to: Server, db: string): Promise<void> {
  const [tables] = (await from.admin.query('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = ?', [db])) as unknown as [
    { t: string }[],
  ];
  const statements = [`SET SESSION sql_log_bin = 0`, `CREATE DATABASE \`${db}\``];
  for (const { t } of tables) {
    const [[create]] = (await from.admin.query(`SHOW CREATE TABLE \`${db}\`.\`${t}\``)) as unknown as [[{ 'Create Table': string }]];
    statements.push(`USE \`${db}\``, create['Create Table']);
    const [rows] = (await from.admin.query(`SELECT * FROM \`${db}\`.\`${t}\``)) as unknown as [Record<string, unknown>[]];
    if (rows.length) statements.push(mysql.format(`INSERT INTO \`${db}\`.\`${t}\` VALUES ?`, [rows.map((r) => Object.values(r) as string[])]));
  }
  statements.push('SET SESSION sql_log_bin = 1');
  // MySQL: the GTIDs executed up to the restore point come with the backup (mysqldump's SET
  // @@GLOBAL.gtid_purged, or a snapshot's mysql.gtid_executed); the ones after it do not.
  if (from.kind === 'mysql' && to.kind === 'mysql') statements.push(`SET GLOBAL gtid_purged = '+${await loggedGtids(node(from))}'`);
  await to.admin.query(statements.join(';\n'));
}

/**
 * An endpoint that stays the same while the server behind it changes (a DNS name moved, a
 * Blue/Green switchover): a TCP proxy to `first`, and the settings that reach it. On MySQL the
 * others' certificates are reissued by `first`'s CA and reloaded (ALTER INSTANCE RELOAD TLS), as
 * the servers behind one RDS endpoint share a CA: each private server's own CA has the same
 * subject name, which a bundle of them cannot tell apart.
 */
export async function endpoint(first: Server, ...others: Server[]) {
  const proxy = await switchingProxy(new URL(first.instance.url));
  const ca = first.env.SLUICE_MYSQL_CA;
  if (ca) {
    for (const other of others) {
      const [from, to] = [dirname(ca), dirname(other.env.SLUICE_MYSQL_CA as string)];
      const ext = join(other.dir, 'server-cert.ext');
      writeFileSync(ext, 'subjectAltName = DNS:localhost, IP:127.0.0.1\nbasicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\n');
      const csr = join(other.dir, 'server-cert.csr');
      execFileSync('openssl', ['req', '-new', '-key', join(to, 'server-key.pem'), '-subj', '/CN=localhost', '-out', csr], { stdio: 'pipe' });
      execFileSync(
        'openssl',
        [
          'x509',
          '-req',
          '-in',
          csr,
          '-CA',
          ca,
          '-CAkey',
          join(from, 'ca-key.pem'),
          '-set_serial',
          `0x${randomBytes(8).toString('hex')}`,
          '-days',
          '30',
          '-sha256',
          '-extfile',
          ext,
          '-out',
          join(to, 'server-cert.pem'),
        ],
        { stdio: 'pipe' },
      );
      await other.admin.query('ALTER INSTANCE RELOAD TLS');
    }
  }
  return { url: proxy.url, env: first.env, switchTo: (s: Server) => proxy.switchTo(new URL(s.instance.url)), close: () => proxy.close() };
}

/** What a source's runs logged at info and the metrics they emitted. */
export interface Recorded {
  info: { message: string; fields: Record<string, unknown> }[];
  metrics: { name: string; value: number }[];
}

/** A source of database `db` on `url`, on the shared DynamoDB and S3; `url` can be changed, as an endpoint moved to another server. */
export async function sourceOn(url: string, db = 'shop', settings: Record<string, string> = {}) {
  const sourceId = `epoch-${randomBytes(3).toString('hex')}`;
  let env: Record<string, string> = {
    ...inject('stackEnv'),
    SLUICE_SOURCE_ID: sourceId,
    SLUICE_PREFIX: `${sourceId}/`,
    SLUICE_MYSQL_URL: url,
    SLUICE_INCLUDE: `${db}\\..*`,
    SLUICE_STARTUP: 'latest',
    SLUICE_SNAPSHOT_PAGE_ROWS: '40',
    ...settings,
  };
  const config = () => loadConfig(env);
  const clients = createClients(config());
  await initResources(config(), clients);
  const recorded: Recorded = { info: [], metrics: [] };
  const log: Log = {
    debug() {},
    info: (message: string, fields?: unknown) => void recorded.info.push({ message, fields: (fields ?? {}) as Record<string, unknown> }),
    warn() {},
    error() {},
  } as Log;
  const metrics = { addMetric: (name: string, _unit: unknown, value: number) => void recorded.metrics.push({ name, value }) };
  const deps = () => ({ config: config(), s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log, metrics });
  return {
    get config() {
      return config();
    },
    clients,
    recorded,
    /** Points the source at another server, as a moved endpoint would (`settings`: how to reach it, e.g. its TLS CA). */
    moveTo(next: string, settings: Record<string, string> = {}) {
      env = { ...env, ...settings, SLUICE_MYSQL_URL: next };
    },
    async cli(args: string[]) {
      const out: string[] = [];
      const code = await run(args, {
        env: { ...env, SLUICE_HOME: '/nonexistent' },
        stdout: { write: (t: string) => out.push(t) },
        stderr: { write: (t: string) => out.push(t) },
      });
      return { code, out: out.join('') };
    },
    capture: () => runCapture(deps(), { budgetMs: 30_000, stopWhenCaughtUp: true }),
    state: () => clients.store.get(sourceId),
    /** Runs every unfinished snapshot job to its end. */
    async snapshots() {
      for (const job of await snapshotsToRun(deps(), 'pending')) await runSnapshotWorker(deps(), { budgetMs: 60_000, snapshotId: job.id, workerId: 'w' });
    },
    merge: (tables: string[]) =>
      runIcebergMerge({ ...deps(), merges: clients.merges, buckets: clients.buckets }, { owner: 'epoch-test', tables: tables.map((table) => ({ db, table })) }),
    /** Every event line the output holds, in the order the manifests list them. */
    async events(): Promise<{ seq: string; op: string; table: string; key: Record<string, unknown> }[]> {
      const out: { seq: string; op: string; table: string; key: Record<string, unknown> }[] = [];
      for await (const { line } of eventLines(clients.s3, config().bucket, config().prefix, sourceId)) out.push(JSON.parse(line));
      return out;
    },
    /** Every seq the output holds, in the order the manifests list them. */
    async seqs(): Promise<string[]> {
      const out: string[] = [];
      for await (const { line } of eventLines(clients.s3, config().bucket, config().prefix, sourceId)) out.push((JSON.parse(line) as { seq: string }).seq);
      return out;
    },
  };
}

export type Source = Awaited<ReturnType<typeof sourceOn>>;

/** verify: ok, and every table of the server compared (none skipped as changing). */
export async function expectVerified(source: Source, tables: string[]): Promise<void> {
  const verdict = await verify({ config: source.config, s3: source.clients.s3, store: source.clients.store, snapshots: source.clients.snapshots });
  const summary = verdict.tables.map((t) => ({ table: t.table, status: t.status, missing: t.missing, extra: t.extra, differing: t.differing }));
  expect(summary).toEqual(tables.map((table) => ({ table, status: 'compared', missing: 0, extra: 0, differing: 0 })));
  expect(verdict.changing).toEqual([]);
  expect(verdict.orphans).toEqual([]);
  expect(verdict.ok).toBe(true);
}

/** The Iceberg tables, read back, equal the server's tables. */
export async function expectIcebergEqual(source: Source, s: Server, tables: string[], db = 'shop'): Promise<void> {
  await source.merge(tables);
  const store = s3ObjectStore(source.clients.s3, source.config.bucket);
  const sql = async (query: string, values?: unknown[]) => (await s.admin.query(query, values))[0] as Record<string, unknown>[];
  for (const table of tables) {
    const ledger = await source.clients.merges.get(source.config.sourceId, { db, table });
    const version = ledger?.metadataKey ? await loadVersion(store, ledger.metadataKey) : undefined;
    expect({ table, rows: await icebergRowsAt(store, version?.metadata) }).toEqual({ table, rows: await mysqlTextOf(sql, db, table) });
  }
}

/** How many insert events (`c`) of each key of `table` the output holds: read exactly once, one each (keys are never inserted twice here). */
export async function creates(source: Source, table = 't'): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const event of await source.events()) {
    if (event.op !== 'c' || event.table !== table) continue;
    const id = Number(event.key.id);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** The keys of `counts` not read exactly once. */
export const once = (counts: Map<number, number>) => [...counts.entries()].filter(([, n]) => n !== 1);
