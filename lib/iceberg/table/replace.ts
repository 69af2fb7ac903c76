import { AssertionError } from '../../errors.ts';
import { operationOf, PROPERTY, type TableVersion } from '../files/metadata.ts';
import { col, type Lines, Workspace } from '../files/parquet.ts';
import { DEFAULT_ROWS_PER_FILE } from './keys.ts';
import { liveEntries } from './live.ts';
import { type IcebergDeps, type Staged, type StageOptions, stats, type TableSpec } from './types.ts';
import { bucketSignature, type NewFile, prepare, SnapshotWriter, writeBuckets, writeRanges } from './writer.ts';

/* Whole-table snapshots: a rewrite's rows, a rewrite split into buckets staged one by one, a truncate. */

/**
 * Rows already in a JSON Lines file (one row text per line) and how many: a caller holding them in
 * DuckDB writes them with `COPY` rather than streaming each through JavaScript (docs/PERFORMANCE.md).
 */
export interface SpooledRows {
  readonly path: string;
  readonly lines: number;
}

const isSpooled = (rows: Lines | SpooledRows): rows is SpooledRows => typeof (rows as SpooledRows).path === 'string';

/**
 * Stages a version whose rows are exactly `rows` (a rebuild from the change log, a re-snapshot,
 * or — with no rows — a truncate). Every data file is rewritten, so column types may change in
 * ways Iceberg cannot promote: such a column gets a new field id.
 */
export async function stageReplace(
  deps: IcebergDeps,
  current: TableVersion | undefined,
  spec: TableSpec,
  rows: Lines | SpooledRows,
  options: StageOptions,
): Promise<Staged> {
  const prepared = prepare(deps, current, spec, options, true);
  await using ws = await Workspace.open(deps.workDir);
  const writer = new SnapshotWriter(deps, prepared, spec, options);
  const schema = prepared.evolution.schema;
  const spooled = isSpooled(rows) ? rows : await ws.spool('rows', rows);
  const nulled = await ws.loadJson('up', spooled.path, prepared.fields);
  const ids = spec.key.length ? prepared.keyIds : schema.fields.map((f) => f.id);
  if (spec.key.length) {
    const distinct = await ws.count(`SELECT DISTINCT ${ids.map(col).join(', ')} FROM up`);
    if (distinct !== spooled.lines) throw new AssertionError(`the rows hold ${spooled.lines - distinct} duplicate key(s)`);
  }
  const live = await liveEntries(deps.store, current?.metadata);
  const write = spec.key.length ? writeRanges : writeBuckets;
  const { buckets, layout } = await write(ws, writer, schema, 'SELECT * FROM up', ids, DEFAULT_ROWS_PER_FILE);
  const version = await writer.finish([], operationOf(writer.files, live.data.length + live.deletes.length), {
    properties: { [PROPERTY.buckets]: String(buckets), [PROPERTY.bucketFields]: layout },
    removed: live.data.length + live.deletes.length,
  });
  return { version, written: writer.written, schema: prepared.evolution, stats: stats({ rowsWritten: spooled.lines, dataFiles: writer.files.length, nulled }) };
}

/** One bucket of a rewrite: its data files as staged, in the form a ledger item holds (JSON). */
export interface BucketFiles {
  readonly rows: number;
  readonly nulled: Readonly<Record<string, number>>;
  readonly files: readonly StagedDataFile[];
}

/** A staged data file and its statistics; maps as entry lists, bounds in base64. */
interface StagedDataFile {
  readonly key: string;
  readonly records: number;
  readonly bytes: number;
  readonly metrics: Readonly<Record<'valueCounts' | 'nullValueCounts' | 'nanValueCounts' | 'columnSizes', [number, number][]>> &
    Readonly<Record<'lowerBounds' | 'upperBounds', [number, string][]>>;
}

const toStaged = (file: NewFile): StagedDataFile => {
  const m = file.written.metrics;
  const bytes = (map: ReadonlyMap<number, Uint8Array>): [number, string][] => [...map].map(([id, b]) => [id, Buffer.from(b).toString('base64')]);
  return {
    key: file.key,
    records: file.written.records,
    bytes: file.written.bytes,
    metrics: {
      valueCounts: [...m.valueCounts],
      nullValueCounts: [...m.nullValueCounts],
      nanValueCounts: [...m.nanValueCounts],
      columnSizes: [...m.columnSizes],
      lowerBounds: bytes(m.lowerBounds),
      upperBounds: bytes(m.upperBounds),
    },
  };
};

const fromStaged = (file: StagedDataFile): NewFile => {
  const m = file.metrics;
  const bytes = (entries: [number, string][]) => new Map(entries.map(([id, b]) => [id, new Uint8Array(Buffer.from(b, 'base64'))]));
  return {
    key: file.key,
    content: 0,
    written: {
      path: '',
      records: file.records,
      bytes: file.bytes,
      metrics: {
        valueCounts: new Map(m.valueCounts),
        nullValueCounts: new Map(m.nullValueCounts),
        nanValueCounts: new Map(m.nanValueCounts),
        columnSizes: new Map(m.columnSizes),
        lowerBounds: bytes(m.lowerBounds),
        upperBounds: bytes(m.upperBounds),
      },
    },
  };
};

/**
 * Stages one bucket of a keyed table's rewrite: `rows` (the rows whose key falls in the bucket) as
 * key-sorted range files named by `options.tag`, nothing else — `stageBuckets` lists every
 * bucket's files in one snapshot. The same `current` and `spec` must be passed to both.
 */
export async function stageBucket(
  deps: IcebergDeps,
  current: TableVersion | undefined,
  spec: TableSpec,
  rows: Lines | SpooledRows,
  options: StageOptions,
): Promise<BucketFiles> {
  if (!spec.key.length) throw new AssertionError('a keyless table is rewritten whole (its hash buckets are its copy-on-write units)');
  const prepared = prepare(deps, current, spec, options, true);
  await using ws = await Workspace.open(deps.workDir);
  const writer = new SnapshotWriter(deps, prepared, spec, options);
  const spooled = isSpooled(rows) ? rows : await ws.spool('rows', rows);
  const nulled = await ws.loadJson('up', spooled.path, prepared.fields);
  const distinct = await ws.count(`SELECT DISTINCT ${prepared.keyIds.map(col).join(', ')} FROM up`);
  if (distinct !== spooled.lines) throw new AssertionError(`the rows hold ${spooled.lines - distinct} duplicate key(s)`);
  await writeRanges(ws, writer, prepared.evolution.schema, 'SELECT * FROM up', prepared.keyIds, DEFAULT_ROWS_PER_FILE);
  return { rows: spooled.lines, nulled, files: writer.files.map(toStaged) };
}

/** Stages the version whose rows are exactly those of `buckets` (each staged by `stageBucket` on the same `current` and `spec`). */
export async function stageBuckets(
  deps: IcebergDeps,
  current: TableVersion | undefined,
  spec: TableSpec,
  buckets: readonly BucketFiles[],
  options: StageOptions,
): Promise<Staged> {
  const prepared = prepare(deps, current, spec, options, true);
  const writer = new SnapshotWriter(deps, prepared, spec, options);
  for (const bucket of buckets) for (const file of bucket.files) writer.files.push(fromStaged(file));
  const live = await liveEntries(deps.store, current?.metadata);
  const schema = prepared.evolution.schema;
  const version = await writer.finish([], operationOf(writer.files, live.data.length + live.deletes.length), {
    properties: { [PROPERTY.buckets]: String(writer.files.length), [PROPERTY.bucketFields]: `range:${bucketSignature(schema, prepared.keyIds)}` },
    removed: live.data.length + live.deletes.length,
  });
  const nulled: Record<string, number> = {};
  for (const bucket of buckets) for (const [name, n] of Object.entries(bucket.nulled)) nulled[name] = (nulled[name] ?? 0) + n;
  const rows = buckets.reduce((n, b) => n + b.rows, 0);
  return { version, written: writer.written, schema: prepared.evolution, stats: stats({ rowsWritten: rows, dataFiles: writer.files.length, nulled }) };
}

/** Stages a truncate: a new snapshot with no files (older snapshots keep theirs until they expire). */
export function stageTruncate(deps: IcebergDeps, current: TableVersion | undefined, spec: TableSpec, options: StageOptions): Promise<Staged> {
  return stageReplace(deps, current, spec, [], options);
}
