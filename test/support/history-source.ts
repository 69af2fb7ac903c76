import { randomBytes } from 'node:crypto';
import { expect, inject } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { runCapture } from '../../lib/capture/run.ts';
import { run } from '../../lib/cli/main.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { runIcebergMerge } from '../../lib/iceberg/merge.ts';
import { s3ObjectStore } from '../../lib/iceberg/store.ts';
import { loadVersion } from '../../lib/iceberg/table.ts';
import type { Log } from '../../lib/log.ts';
import { eventLines } from '../../lib/materialize/feed.ts';
import { snapshotsToRun } from '../../lib/snapshot/plan.ts';
import { runSnapshotWorker } from '../../lib/snapshot/worker.ts';
import { verify } from '../../lib/verify/verify.ts';
import { icebergRowsAt, mysqlTextOf } from './iceberg-merge.ts';
import type { PrivateServer as Server } from './private-mariadb.ts';
import { caughtUp as caughtUpNode, type ReplicationNode, replicate as replicateNode } from './replication.ts';

/*
 * Sources on private MariaDB servers (./private-mariadb.ts), for the tests of changes of binlog
 * history: replication between them, a source whose endpoint can be moved, and the checks that its
 * output equals a server.
 */

export { type PrivateServer as Server, privateMariaDb as server, stopPrivate as stop } from './private-mariadb.ts';

/** One value of a query on `s`. */
export async function one(s: Server, sql: string): Promise<string | undefined> {
  return ((await s.admin.query(sql)) as unknown as [{ v: string }[]])[0][0]?.v;
}

const node = (s: Server): ReplicationNode => ({ kind: 'mariadb', admin: s.admin, port: s.instance.port, adminUrl: s.instance.adminUrl });

/** Makes `replica` copy `primary` by GTID from its first transaction on (`until`: only up to that position, MariaDB's START SLAVE UNTIL). */
export const replicate = (replica: Server, primary: Server, until?: string): Promise<void> => replicateNode(node(replica), node(primary), until);

/** Waits until `replica` has applied `gtids` (default: everything `primary` has logged). */
export const caughtUp = (primary: Server, replica: Server, gtids?: string): Promise<void> => caughtUpNode(node(primary), node(replica), gtids);

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
