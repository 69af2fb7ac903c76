import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Faults } from '../../lib/commit/faults.ts';
import type { Config } from '../../lib/config/config.ts';
import type { TableMetadata } from '../../lib/iceberg/files/metadata.ts';
import { type MergeResult, runIcebergMerge } from '../../lib/iceberg/merge/merge.ts';
import { type RewriteEvent, runRewriteWorker } from '../../lib/iceberg/merge/rewrite.ts';
import { icebergLocation } from '../../lib/iceberg/merge/spec.ts';
import { loadVersion, type TableVersion } from '../../lib/iceberg/table/table.ts';
import { silentLog } from '../../lib/log.ts';
import { type ObjectStore, s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { readWithDuckDb, readWithIcebird } from './iceberg.ts';
import { quoted, type TestSource } from './source.ts';

/** Runs the Iceberg merge for a test source (every table, or `tables` by name in its database). */
export function merge(
  source: TestSource,
  options: {
    faults?: Faults;
    tables?: string[];
    owner?: string;
    config?: Config;
    clock?: () => number;
    /** Rewrite buckets written by this run at most (the rest left to the next). */
    maxBuckets?: number;
    /** Stands in for the Lambda Invoke API: a rewrite worker started by the merge. */
    invoke?: (event: RewriteEvent) => Promise<void>;
  } = {},
): Promise<MergeResult> {
  const { clients } = source;
  const config = options.config ?? source.config;
  return runIcebergMerge(
    {
      config,
      s3: clients.s3,
      store: clients.store,
      snapshots: clients.snapshots,
      merges: clients.merges,
      buckets: clients.buckets,
      log: silentLog,
      faults: options.faults,
      clock: options.clock,
      invoke: options.invoke,
    },
    { tables: options.tables?.map((table) => ({ db: source.db, table })), owner: options.owner ?? 'test-merge', maxBuckets: options.maxBuckets },
  );
}

/**
 * In-process rewrite workers, as the Lambda Invoke API would start them (asynchronously, each with
 * its own owner): `invoke` for `merge`, and `settled()` to wait for every worker started so far.
 */
export function inProcessWorkers(source: TestSource, options: { config?: Config; faults?: Faults } = {}) {
  const running: Promise<unknown>[] = [];
  let n = 0;
  const deps = () => ({
    config: options.config ?? source.config,
    s3: source.clients.s3,
    merges: source.clients.merges,
    buckets: source.clients.buckets,
    log: silentLog,
    faults: options.faults,
    invoke,
  });
  const invoke = async (event: RewriteEvent) => {
    running.push(runRewriteWorker(deps(), event.rewrite, { owner: `worker-${n++}`, budgetMs: 120_000 }).catch((error: Error) => error));
  };
  return {
    invoke,
    started: () => n,
    async settled() {
      return Promise.all(running);
    },
  };
}

/** The table's committed Iceberg version, by the merge ledger; undefined before its first merge. */
export async function committedVersion(source: TestSource, table: string): Promise<TableVersion | undefined> {
  const state = await source.clients.merges.get(source.config.sourceId, { db: source.db, table });
  if (!state?.metadataKey) return undefined;
  return loadVersion(s3ObjectStore(source.clients.s3, source.config.bucket), state.metadataKey);
}

/**
 * Normalizes a value's text where the two sides print the same value differently: timestamps
 * without trailing zero fractions, a whole double as `12` (DuckDB prints `12.0`), exponents without
 * `+` (DuckDB prints `1e+300`). Applied to both sides.
 */
const normal = (value: string | null) =>
  value === null
    ? null
    : value
        .replace(/^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d*?)0*(\+00)?$/, (_, t, f, z) => `${t}${f === '.' ? '' : f}${z ?? ''}`)
        .replace(/^(-?\d+)\.0$/, '$1')
        .replace(/^(-?[\d.]+)e\+(\d+)$/, '$1e$2');

/**
 * The table as DuckDB reads the Parquet files the current snapshot lists (equality deletes applied),
 * rows as sorted JSON texts of each value's text.
 */
export async function icebergRows(source: TestSource, table: string): Promise<string[]> {
  return icebergRowsAt(s3ObjectStore(source.clients.s3, source.config.bucket), (await committedVersion(source, table))?.metadata);
}

/** The same for any committed metadata (none: no table yet, no rows). */
export async function icebergRowsAt(store: ObjectStore, metadata: TableMetadata | undefined): Promise<string[]> {
  if (!metadata) return [];
  const dir = mkdtempSync(join(tmpdir(), 'iceberg-read-'));
  try {
    const rows = await readWithDuckDb(store, metadata, dir);
    return rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, normal(v)])))).sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `SELECT *` from MariaDB, each value as text the way DuckDB prints the Iceberg type (binary as hex). */
export function mysqlText(source: TestSource, table: string): Promise<string[]> {
  return mysqlTextOf(source.sql, source.db, table);
}

/** The same over any connection (`sql` runs a query with parameters and returns its rows). */
export async function mysqlTextOf(
  sql: (query: string, values?: unknown[]) => Promise<Record<string, unknown>[]>,
  db: string,
  table: string,
): Promise<string[]> {
  const columns = await sql(
    'SELECT COLUMN_NAME AS name, DATA_TYPE AS type FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
    [db, table],
  );
  const select = columns.map(({ name, type }) => {
    const c = quoted(String(name));
    if (type === 'datetime') return `DATE_FORMAT(${c}, '%Y-%m-%d %H:%i:%s.%f') AS ${c}`;
    if (type === 'timestamp') return `CONCAT(DATE_FORMAT(${c}, '%Y-%m-%d %H:%i:%s.%f'), '+00') AS ${c}`;
    if (type === 'bit') return `CAST(${c} + 0 AS CHAR) AS ${c}`;
    if (/blob|binary/.test(String(type))) return `HEX(${c}) AS ${c}`;
    return `CAST(${c} AS CHAR) AS ${c}`;
  });
  const rows = await sql(`SELECT ${select.join(', ')} FROM ${quoted(db)}.${quoted(table)}`);
  return rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, normal(v === null ? null : String(v))])))).sort();
}

/** icebird (an independent Iceberg reader) over the emulator: the table's rows as it decodes them. */
export async function icebirdRows(source: TestSource, table: string): Promise<Record<string, unknown>[]> {
  const endpoint = process.env.AWS_ENDPOINT_URL_S3 as string;
  const realFetch = globalThis.fetch;
  const emulatorFetch: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    return realFetch(`${endpoint}/${url.hostname.replace(/\.s3\.amazonaws\.com$/, '')}${url.pathname}`, init);
  };
  return readWithIcebird(`s3://${source.config.bucket}/${icebergLocation(source.config.prefix, { db: source.db, table })}`, emulatorFetch);
}
