import { AssertionError } from '../../errors.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { type DataFileRecord, MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_SCHEMA, type ManifestEntry, type ManifestFile, writeAvroFile } from '../files/avro.ts';
import { stringifyJson } from '../files/json.ts';
import {
  currentSchema,
  currentSnapshot,
  newTableMetadata,
  nextMetadata,
  PROPERTY,
  type Snapshot,
  stableId,
  stableUuid,
  type TableMetadata,
  type TableVersion,
} from '../files/metadata.ts';
import { avroBounds, avroMap, DEFAULT_METRICS, type FileMetrics, type MetricsMode, metricsFrom, metricsSelect } from '../files/metrics.ts';
import { bucketExpression, col, type Workspace, type WrittenFile } from '../files/parquet.ts';
import { evolveSchema, type IcebergSchema, type MappedField, mappedFields, type SchemaEvolution } from '../files/schema.ts';
import { bucketSuffix, metadataKey, paths, rangeSuffix, TAG } from './keys.ts';
import { readEntries } from './live.ts';
import type { IcebergDeps, StageOptions, TableSpec } from './types.ts';

/* Writing a snapshot: measured Parquet files, manifests, the manifest list and the next metadata file. */

export interface Prepared {
  readonly base: TableVersion;
  readonly evolution: SchemaEvolution;
  readonly fields: MappedField[];
  readonly locationUri: string;
  readonly keyIds: number[];
}

export function prepare(deps: IcebergDeps, current: TableVersion | undefined, spec: TableSpec, options: StageOptions, allowIncompatible: boolean): Prepared {
  if (!TAG.test(options.tag)) throw new AssertionError(`tag ${JSON.stringify(options.tag)} must be 1-100 letters, digits, _ or -`);
  const locationUri = deps.store.uri(spec.files ?? spec.location);
  if (current && current.metadata.location !== locationUri)
    throw new AssertionError(`table metadata ${current.metadataKey} is for ${current.metadata.location}, not ${locationUri}`);
  const evolution = evolveSchema(
    current && { schema: currentSchema(current.metadata), lastColumnId: current.metadata['last-column-id'] },
    spec.columns,
    spec.key,
    { renamed: spec.renamed, recreated: spec.recreated, allowIncompatible },
  );
  const fields = mappedFields(evolution.schema, spec.columns);
  const keyIds = spec.key.map((name) => fields.find((f) => f.name === name)?.id as number);
  const base = current ?? {
    metadataKey: '',
    version: 0,
    metadata: newTableMetadata({
      uuid: stableUuid('sluice-iceberg', locationUri, options.tag),
      location: locationUri,
      schema: evolution.schema,
      lastColumnId: evolution.lastColumnId,
      properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'zstd' },
      timestampMs: options.timestampMs,
    }),
  };
  return { base, evolution, fields, locationUri, keyIds };
}

/** A file written into the workspace with its column statistics. */
interface MeasuredFile extends WrittenFile {
  readonly metrics: FileMetrics & { readonly columnSizes: ReadonlyMap<number, number> };
}

export interface NewFile {
  readonly key: string;
  readonly written: MeasuredFile;
  readonly content: 0 | 1 | 2;
  readonly equalityIds?: readonly number[];
  readonly referencedDataFile?: string;
}

/**
 * Writes `select` (columns `c<id>` of `schema`) as a Parquet file sorted by `first` (the key), with
 * the statistics a manifest lists: counts and bounds by SQL over the rows written, column sizes
 * from the file's metadata.
 */
export async function writeMeasured(
  ws: Workspace,
  select: string,
  name: string,
  schema: IcebergSchema,
  options: { first?: readonly number[]; mode?: MetricsMode } = {},
): Promise<MeasuredFile> {
  const mode = options.mode ?? DEFAULT_METRICS;
  const file = await ws.writeParquet(select, name, schema, options.first);
  const aggregates = metricsSelect(
    schema.fields.map((field) => ({ field, column: col(field.id) })),
    mode,
  );
  const row = (await ws.rows(`SELECT ${aggregates} FROM (${select})`))[0] ?? { n: 0 };
  const path = `'${file.path.replaceAll("'", "''")}'`;
  const sizes = await ws.rows(
    `SELECT s.field_id AS id, sum(m.total_compressed_size) AS bytes FROM parquet_metadata(${path}) m JOIN parquet_schema(${path}) s ON m.path_in_schema = s.name WHERE s.field_id IS NOT NULL GROUP BY ALL`,
  );
  const columnSizes = new Map(sizes.map((r) => [Number(r.id), Number(r.bytes)]));
  return { ...file, metrics: { ...metricsFrom(row, schema.fields, mode), columnSizes } };
}

export class SnapshotWriter {
  readonly written: string[] = [];
  readonly files: NewFile[] = [];
  private readonly snapshotId: number;
  private readonly sequence: number;

  constructor(
    private readonly deps: IcebergDeps,
    private readonly prepared: Prepared,
    private readonly spec: TableSpec,
    private readonly options: StageOptions,
  ) {
    const metadata = prepared.base.metadata;
    this.sequence = metadata['last-sequence-number'] + 1;
    let id = stableId(metadata['table-uuid'], options.tag, String(this.sequence));
    while (metadata.snapshots.some((s) => s['snapshot-id'] === id)) id = stableId(String(id));
    this.snapshotId = id;
  }

  private get keys() {
    return paths(this.spec.files ?? this.spec.location, this.options.tag);
  }

  /** Uploads a Parquet file written in the workspace under this commit's name `suffix`. */
  async addFile(
    written: MeasuredFile,
    suffix: string,
    content: 0 | 1 | 2,
    refs: { equalityIds?: readonly number[]; referencedDataFile?: string } = {},
  ): Promise<void> {
    if (written.records === 0) return;
    const key = this.keys.data(suffix);
    await this.deps.store.putFile(key, written.path);
    this.written.push(key);
    this.files.push({ key, written, content, ...refs });
  }

  private manifestMetadata(content: 'data' | 'deletes', schema: IcebergSchema) {
    return {
      schema: JSON.stringify(schema),
      'schema-id': String(schema['schema-id']),
      'partition-spec': '[]',
      'partition-spec-id': '0',
      'format-version': '2',
      content,
    };
  }

  private async putManifest(suffix: string, content: 0 | 1, entries: ManifestEntry[]): Promise<ManifestFile> {
    const key = this.keys.manifest(suffix);
    const bytes = writeAvroFile(MANIFEST_ENTRY_SCHEMA, entries, this.manifestMetadata(content ? 'deletes' : 'data', this.prepared.evolution.schema), key);
    await this.deps.store.put(key, bytes);
    this.written.push(key);
    const count = (status: number) => entries.filter((e) => e.status === status);
    const rows = (status: number) => count(status).reduce((n, e) => n + e.data_file.record_count, 0);
    const live = entries.filter((e) => e.status !== 2).map((e) => e.sequence_number ?? this.sequence);
    return {
      manifest_path: this.deps.store.uri(key),
      manifest_length: bytes.length,
      partition_spec_id: 0,
      content,
      sequence_number: this.sequence,
      min_sequence_number: live.length ? Math.min(...live) : this.sequence,
      added_snapshot_id: this.snapshotId,
      added_files_count: count(1).length,
      existing_files_count: count(0).length,
      deleted_files_count: count(2).length,
      added_rows_count: rows(1),
      existing_rows_count: rows(0),
      deleted_rows_count: rows(2),
      partitions: null,
      key_metadata: null,
    };
  }

  /**
   * Carried manifests that list a file in `removed` are rewritten: their other files as EXISTING
   * (with explicit sequence numbers, as the spec requires), the removed ones as DELETED.
   */
  async carry(manifests: readonly ManifestFile[], removed: ReadonlySet<string>): Promise<ManifestFile[]> {
    const out: ManifestFile[] = [];
    let n = 0;
    for (const manifest of manifests) {
      const entries = await readEntries(this.deps.store, manifest);
      if (!entries.some((e) => removed.has(e.file.file_path))) {
        out.push(manifest);
        continue;
      }
      const rewritten: ManifestEntry[] = entries.map((e) => ({
        status: removed.has(e.file.file_path) ? 2 : 0,
        snapshot_id: removed.has(e.file.file_path) ? this.snapshotId : e.snapshotId,
        sequence_number: e.seq,
        file_sequence_number: e.fileSeq,
        data_file: e.file,
      }));
      if (rewritten.some((e) => e.status === 0)) out.push(await this.putManifest(`kept-${n++}`, manifest.content, rewritten));
    }
    return out;
  }

  /** Writes the new manifests, the manifest list and the next metadata file. */
  async finish(
    carried: readonly ManifestFile[],
    operation: Snapshot['summary']['operation'],
    extra: { properties?: Record<string, string>; removed?: number },
  ): Promise<TableVersion> {
    const entry = (file: NewFile): ManifestEntry => ({
      status: 1,
      snapshot_id: this.snapshotId,
      sequence_number: null,
      file_sequence_number: null,
      data_file: dataFile(this.deps.store.uri(file.key), file),
    });
    const manifests = [...carried];
    const data = this.files.filter((f) => f.content === 0);
    const deletes = this.files.filter((f) => f.content !== 0);
    const equality = deletes.filter((f) => f.content === 2);
    const positional = deletes.filter((f) => f.content === 1);
    const records = (files: readonly NewFile[]) => files.reduce((n, f) => n + f.written.records, 0);
    // Delete files are only ever carried whole (rewrites carry none): totals continue the parent's.
    const previous = currentSnapshot(this.prepared.base.metadata)?.summary;
    const keptDeletes = carried.some((m) => m.content === 1);
    const total = (name: string, added: number) => String((keptDeletes ? Number(previous?.[name] ?? 0) : 0) + added);
    if (data.length) manifests.push(await this.putManifest('data', 0, data.map(entry)));
    if (deletes.length) manifests.push(await this.putManifest('deletes', 1, deletes.map(entry)));
    const listKey = this.keys.manifestList;
    const base = this.prepared.base;
    const parent = currentSnapshot(base.metadata);
    await this.deps.store.put(
      listKey,
      writeAvroFile(
        MANIFEST_FILE_SCHEMA,
        manifests,
        {
          'snapshot-id': String(this.snapshotId),
          'parent-snapshot-id': String(parent?.['snapshot-id'] ?? 'null'),
          'sequence-number': String(this.sequence),
          'format-version': '2',
        },
        listKey,
      ),
    );
    this.written.push(listKey);
    const sum = (content: 0 | 1, field: 'added_rows_count' | 'existing_rows_count' | 'added_files_count' | 'existing_files_count') =>
      manifests.filter((m) => m.content === content).reduce((n, m) => n + m[field], 0);
    const snapshot: Snapshot = {
      'snapshot-id': this.snapshotId,
      ...(parent ? { 'parent-snapshot-id': parent['snapshot-id'] } : {}),
      'sequence-number': this.sequence,
      'timestamp-ms': this.options.timestampMs,
      'manifest-list': this.deps.store.uri(listKey),
      summary: {
        operation,
        'added-data-files': String(data.length),
        'added-records': String(data.reduce((n, f) => n + f.written.records, 0)),
        'added-delete-files': String(deletes.length),
        'added-equality-delete-files': String(equality.length),
        'added-equality-deletes': String(records(equality)),
        'added-position-delete-files': String(positional.length),
        'added-position-deletes': String(records(positional)),
        'added-files-size': String(this.files.reduce((n, f) => n + f.written.bytes, 0)),
        'sluice.removed-files': String(extra.removed ?? 0),
        'total-data-files': String(sum(0, 'added_files_count') + sum(0, 'existing_files_count')),
        'total-delete-files': String(sum(1, 'added_files_count') + sum(1, 'existing_files_count')),
        'total-records': String(sum(0, 'added_rows_count') + sum(0, 'existing_rows_count')),
        'total-equality-deletes': total('total-equality-deletes', records(equality)),
        'total-position-deletes': total('total-position-deletes', records(positional)),
        'engine-name': 'sluice',
        ...this.options.summary,
      },
      'schema-id': this.prepared.evolution.schema['schema-id'],
    };
    const metadata = nextMetadata(base, {
      previousUri: this.deps.store.uri(base.metadataKey),
      schema: this.prepared.evolution.schema,
      lastColumnId: this.prepared.evolution.lastColumnId,
      snapshot,
      properties: { [PROPERTY.keyFields]: this.prepared.keyIds.join(','), ...extra.properties },
      timestampMs: this.options.timestampMs,
    });
    return putMetadata(this.deps.store, this.spec.location, base.version + 1, this.options.tag, metadata, this.written);
  }
}

function dataFile(path: string, file: NewFile): DataFileRecord {
  const metrics = file.written.metrics;
  return {
    content: file.content,
    file_path: path,
    file_format: 'PARQUET',
    partition: {},
    record_count: file.written.records,
    file_size_in_bytes: file.written.bytes,
    column_sizes: avroMap(metrics.columnSizes),
    value_counts: avroMap(metrics.valueCounts),
    null_value_counts: avroMap(metrics.nullValueCounts),
    nan_value_counts: avroMap(metrics.nanValueCounts),
    lower_bounds: avroBounds(metrics.lowerBounds),
    upper_bounds: avroBounds(metrics.upperBounds),
    key_metadata: null,
    split_offsets: null,
    equality_ids: file.equalityIds ? [...file.equalityIds] : null,
    // Position deletes must have a null sort order (the spec's note 3 on data_file): only data files claim one.
    sort_order_id: file.content === 0 ? 0 : null,
    referenced_data_file: file.referencedDataFile ?? null,
  };
}

export async function putMetadata(
  store: ObjectStore,
  location: string,
  version: number,
  tag: string,
  metadata: TableMetadata,
  written: string[],
): Promise<TableVersion> {
  const key = metadataKey(location, version, tag);
  await store.put(key, `${stringifyJson(metadata, 1)}\n`);
  written.push(key);
  return { metadataKey: key, version, metadata };
}

/** Writes `select` (columns `c<id>` of the schema) as bucket files: `rowsPerFile` rows each, by a hash of `ids`. */
export async function writeBuckets(ws: Workspace, writer: SnapshotWriter, schema: IcebergSchema, select: string, ids: readonly number[], rowsPerFile: number) {
  const rows = await ws.count(select);
  const buckets = Math.max(1, Math.ceil(rows / rowsPerFile));
  if (rows > 0) {
    await ws.run(`CREATE OR REPLACE TEMP TABLE bucketed AS SELECT *, ${bucketExpression(ids, buckets)} AS _bucket FROM (${select})`);
    for (let b = 0; b < buckets; b++) {
      const file = await writeMeasured(ws, `SELECT * EXCLUDE (_bucket) FROM bucketed WHERE _bucket = ${b}`, `${bucketSuffix(b)}.parquet`, schema);
      await writer.addFile(file, bucketSuffix(b), 0);
    }
  }
  return { rows, buckets, layout: bucketSignature(schema, ids) };
}

/**
 * Writes `select` as key ranges: sorted by the key `ids`, cut into `rowsPerFile` rows (about) per
 * file, so each file's key bounds are disjoint from the others' and a changed key has one candidate.
 */
export async function writeRanges(ws: Workspace, writer: SnapshotWriter, schema: IcebergSchema, select: string, ids: readonly number[], rowsPerFile: number) {
  const rows = await ws.count(select);
  const ranges = Math.max(1, Math.ceil(rows / rowsPerFile));
  if (rows > 0) {
    const order = ids.map(col).join(', ');
    await ws.run(
      `CREATE OR REPLACE TEMP TABLE ranged AS SELECT *, CAST((row_number() OVER (ORDER BY ${order}) - 1) * ${ranges} // ${rows} AS INTEGER) AS _range FROM (${select})`,
    );
    for (let r = 0; r < ranges; r++) {
      const file = await writeMeasured(ws, `SELECT * EXCLUDE (_range) FROM ranged WHERE _range = ${r}`, `${rangeSuffix(r)}.parquet`, schema, { first: ids });
      await writer.addFile(file, rangeSuffix(r), 0);
    }
  }
  // Never a keyless table's bucket signature: its copy-on-write must not take ranges for buckets.
  return { rows, buckets: ranges, layout: `range:${bucketSignature(schema, ids)}` };
}

/** What a bucket layout depends on: the hashed fields and their types (a promotion changes a value's text). */
export const bucketSignature = (schema: IcebergSchema, ids: readonly number[]) =>
  ids.map((id) => `${id}:${schema.fields.find((f) => f.id === id)?.type}`).join(',');
