import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { inject } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { type CaptureOptions, type CaptureResult, runCapture } from '../../lib/capture/run.ts';
import type { Faults } from '../../lib/commit/faults.ts';
import { type Config, loadConfig } from '../../lib/config/config.ts';
import { formatTableRef, parseTableRef, type TableRef } from '../../lib/core/table-ref.ts';
import type { Manifest, ManifestTable } from '../../lib/format/manifest.ts';
import { type Log, type MetricsSink, silentLog } from '../../lib/log.ts';
import { eventLines, manifests } from '../../lib/materialize/change-log.ts';
import { stagingRoot } from '../../lib/sink/s3/keys.ts';
import { listKeys } from '../../lib/sink/s3/objects.ts';
import { snapshotsToRun } from '../../lib/snapshot/plan.ts';
import { runSnapshotWorker, type WorkerResult } from '../../lib/snapshot/worker.ts';
import type { SnapshotJob } from '../../lib/state/snapshot-store.ts';
import { withSequences } from './sequences.ts';

export interface ChangeEvent {
  op: 'c' | 'u' | 'd' | 'r' | 't' | 's';
  db: string;
  table: string;
  key: Record<string, unknown> | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  source: { file: string; pos: number; gtid: string | null; txn: string; snapshot: boolean };
  seq: string;
  /** The table's schema version the event was written under (format v2). */
  schema?: number;
  /** Control events (`t`, `s`): what caused them. */
  ddl?: { kind: string; position?: { file: string; pos: number } };
  /** The line as written, for checks that JSON.parse would blur (big integers). */
  raw: string;
  /** The binlog commit that carried it; undefined for snapshot rows. */
  commitSeq?: number;
}

/**
 * A sluice source over its own database on the shared test stack: its own source id, S3 prefix and
 * include filter, so test files run in parallel without seeing each other. The filter also takes
 * the databases `database(suffix)` creates, whose names start with the source's (`db` + suffix).
 */
export async function testSource(name: string, overrides: Record<string, string> = {}) {
  const stackEnv = inject('stackEnv');
  const server = inject('stackServer');
  const db = `${name}_${randomBytes(3).toString('hex')}`;
  const admin = await mysql.createConnection({ uri: stackEnv.SLUICE_LOCAL_ADMIN_URL, multipleStatements: true, timezone: 'Z', dateStrings: true });
  await admin.query(`CREATE DATABASE \`${db}\``);
  await admin.query(`USE \`${db}\``);
  const config: Config = loadConfig({
    ...stackEnv,
    SLUICE_SOURCE_ID: db,
    SLUICE_PREFIX: db,
    SLUICE_INCLUDE: `${db}.*`,
    SLUICE_SAFETY_MARGIN_SECONDS: '2',
    SLUICE_STARTUP: 'latest',
    // The Iceberg suites run once more with SLUICE_ICEBERG_DELETES=equality.
    SLUICE_ICEBERG_DELETES: process.env.SLUICE_ICEBERG_DELETES,
    ...overrides,
  });
  const clients = createClients(config);
  await initResources(config, clients);

  /** What capture and snapshot runs of this source are given. */
  const deps = (options: { config?: Config; faults?: Faults; rowLines?: boolean; log?: Log; metrics?: MetricsSink }) => ({
    config: options.config ?? config,
    s3: clients.s3,
    store: clients.store,
    snapshots: clients.snapshots,
    log: options.log ?? silentLog,
    faults: options.faults,
    rowLines: options.rowLines,
    metrics: options.metrics,
  });

  const databases = [db];
  const source = {
    db,
    config,
    /** The source's configuration with some settings changed (same source id, bucket and prefix). */
    configWith(changes: Record<string, string>): Config {
      return loadConfig({
        ...stackEnv,
        SLUICE_SOURCE_ID: db,
        SLUICE_PREFIX: db,
        SLUICE_INCLUDE: `${db}.*`,
        SLUICE_SAFETY_MARGIN_SECONDS: '2',
        SLUICE_STARTUP: 'latest',
        SLUICE_ICEBERG_DELETES: process.env.SLUICE_ICEBERG_DELETES,
        ...overrides,
        ...changes,
      });
    },
    /** Creates another database, named `db` + `suffix` (any characters) with `options` (`CHARACTER SET …`), which the source captures and dispose drops. */
    async database(suffix: string, options = ''): Promise<string> {
      const name = `${db}${suffix}`;
      await admin.query(`CREATE DATABASE ${quoted(name)} ${options}`);
      databases.push(name);
      return name;
    },
    clients,
    admin,
    /** Runs `query` as the admin; MariaDB's `seq_A_to_B` tables work on MySQL too (sequences.ts). */
    async sql(query: string, values?: unknown[]) {
      const [rows] = await admin.query(await withSequences(query, server, stackEnv.SLUICE_LOCAL_ADMIN_URL as string), values);
      return rows as Record<string, unknown>[];
    },
    capture(
      options: Partial<CaptureOptions> & { faults?: Faults; clock?: () => number; config?: Config; log?: Log; metrics?: MetricsSink } = {},
    ): Promise<CaptureResult> {
      return runCapture({ ...deps(options), clock: options.clock }, { budgetMs: 30_000, stopWhenCaughtUp: true, ...options });
    },
    /**
     * Runs the unfinished snapshots (or requests one of `tables`, or of every table when none is
     * unfinished) with `workers` in-process workers each; `tables` as refs or in their text form;
     * `rowLines: false` writes every row through the reference path (SnapshotDeps.rowLines).
     */
    async snapshot(
      options: {
        tables?: readonly (TableRef | string)[];
        workers?: number;
        faults?: Faults;
        budgetMs?: number;
        config?: Config;
        rowLines?: boolean;
        /** The workers' clock (epoch ms): one ahead of the wall clock finds the leases of workers that died "earlier" run out. */
        clock?: () => number;
      } = {},
    ) {
      const tables = options.tables?.map((t) => (typeof t === 'string' ? parseTableRef(t) : t));
      const pending = tables ? [] : await snapshotsToRun(deps(options), 'pending');
      const jobs = pending.length ? pending : await snapshotsToRun(deps(options), tables ? { tables } : 'all');
      const results: WorkerResult[] = [];
      for (const job of jobs) {
        const workers = Array.from({ length: options.workers ?? 1 }, (_, i) =>
          runSnapshotWorker(
            { ...deps(options), clock: options.clock },
            { budgetMs: options.budgetMs ?? 60_000, snapshotId: job.id, workerId: `w${i}-${randomBytes(2).toString('hex')}` },
          ),
        );
        results.push(...(await Promise.all(workers)));
      }
      const complete = jobs.every((job) => results.some((r) => r.snapshot === job.id && r.complete));
      return { job: jobs[jobs.length - 1] as SnapshotJob, jobs, results, rows: results.reduce((a, r) => a + r.rows, 0), complete };
    },
    async state() {
      return clients.store.get(config.sourceId);
    },
    async keys(prefix: string): Promise<string[]> {
      const keys: string[] = [];
      for await (const key of listKeys(clients.s3, config.bucket, prefix)) keys.push(key);
      return keys;
    },
    async manifests(): Promise<Manifest[]> {
      const all: Manifest[] = [];
      for await (const manifest of manifests(clients.s3, config.bucket, config.prefix, config.sourceId)) all.push(manifest);
      return all;
    },
    /** The manifests of commits that carried change events (not the ones that only saved the schema catalog). */
    async dataManifests(): Promise<Manifest[]> {
      return (await source.manifests()).filter((m) => m.events > 0);
    },
    /** Every committed event, in the order of the manifests (the change feed). */
    async events(): Promise<ChangeEvent[]> {
      const events: ChangeEvent[] = [];
      for await (const { manifest, line } of eventLines(clients.s3, config.bucket, config.prefix, config.sourceId)) {
        events.push({ ...(JSON.parse(line) as ChangeEvent), raw: line, commitSeq: manifest.commit_seq });
      }
      return events;
    },
    async stagingKeys(): Promise<string[]> {
      return source.keys(stagingRoot(config.prefix, config.sourceId));
    },
    [Symbol.asyncDispose]: async () => {
      for (const name of databases) await admin.query(`DROP DATABASE IF EXISTS ${quoted(name)}`);
      await admin.end();
    },
  };
  return source;
}

export type TestSource = Awaited<ReturnType<typeof testSource>>;

/** A name as an SQL identifier. */
export const quoted = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** What a manifest says about one table (its names, key and columns), from the last manifest that lists it. */
export function manifestTable(manifests: readonly Manifest[], table: TableRef): ManifestTable | undefined {
  return manifests
    .flatMap((m) => m.tables)
    .filter((t) => t.db === table.db && t.table === table.table)
    .at(-1);
}

/** A table of the source's own database by name, or any table by its refs. */
const refOf = (source: { db: string }, table: string | TableRef): TableRef => (typeof table === 'string' ? { db: source.db, table } : table);

/** The format's materialization rule: per (table, key) the event with the greatest seq wins; `d` means absent. A table given by name alone matches in any database. */
export function materialize(events: ChangeEvent[], table: string | TableRef): Map<string, Record<string, unknown>> {
  const latest = new Map<string, ChangeEvent>();
  const mine = typeof table === 'string' ? (e: ChangeEvent) => e.table === table : (e: ChangeEvent) => e.db === table.db && e.table === table.table;
  for (const event of events.filter(mine)) {
    const key = JSON.stringify(event.key);
    const current = latest.get(key);
    if (!current || event.seq > current.seq) latest.set(key, event);
  }
  const state = new Map<string, Record<string, unknown>>();
  for (const [key, event] of latest) if (event.op !== 'd' && event.after) state.set(key, event.after);
  return state;
}

/** Checks the exactly-once contract for `tables` (names in the source's database, or refs): no seq twice, and the materialized output equals MySQL. */
export async function expectExactlyOnce(
  source: TestSource,
  tables: (string | TableRef)[],
  keyOf: (row: Record<string, unknown>) => Record<string, unknown> = (r) => ({ id: r.id }),
) {
  const events = await source.events();
  const seqs = new Set(events.map((e) => e.seq));
  const duplicates = events.length - seqs.size;
  const differences: string[] = [];
  for (const table of tables) {
    const ref = refOf(source, table);
    const rows = await source.sql(`SELECT * FROM ${quoted(ref.db)}.${quoted(ref.table)}`);
    const expected = new Map(rows.map((r) => [JSON.stringify(keyOf(r)), r]));
    const actual = materialize(events, ref);
    for (const [key, row] of expected)
      if (JSON.stringify(actual.get(key)) !== JSON.stringify(row))
        differences.push(`${formatTableRef(ref)} ${key}: mysql ${JSON.stringify(row)} s3 ${JSON.stringify(actual.get(key))}`);
    for (const key of actual.keys()) if (!expected.has(key)) differences.push(`${formatTableRef(ref)} ${key}: extra in s3`);
  }
  return { events, duplicates, differences };
}
