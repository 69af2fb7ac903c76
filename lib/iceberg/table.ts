import { basename, join } from 'node:path';
import { AssertionError, ErrorCode, SluiceError } from '../errors.ts';
import type { Column } from '../format/types.ts';
import {
  type DataFileRecord,
  MANIFEST_ENTRY_SCHEMA,
  MANIFEST_FILE_SCHEMA,
  type ManifestEntry,
  type ManifestFile,
  readAvroFile,
  writeAvroFile,
} from './avro.ts';
import {
  currentSchema,
  currentSnapshot,
  newTableMetadata,
  nextMetadata,
  operationOf,
  PROPERTY,
  type Snapshot,
  stableId,
  stableUuid,
  type TableMetadata,
  type TableVersion,
} from './metadata.ts';
import { bucketExpression, col, type Lines, Workspace, type WrittenFile } from './parquet.ts';
import { evolveSchema, type IcebergField, type IcebergSchema, type MappedField, mappedFields, type SchemaEvolution } from './schema.ts';
import type { ObjectStore } from './store.ts';

export type { TableVersion } from './metadata.ts';
export type { ObjectStore } from './store.ts';

/*
 * The Iceberg file-format layer: it turns a table's change set into the files of one new Iceberg
 * snapshot and the next `vN.metadata.json`, and nothing more. It never makes a version current:
 *
 *   stage*()  writes data/delete files, manifests, the manifest list and v<N>.metadata.json under
 *             names fixed by (table location, caller's tag, N = previous version + 1): a redo after a
 *             crash rewrites the same keys, and nothing reads them until they are committed;
 *   (caller)  commits `version.metadataKey` with one conditional write (DynamoDB, Glue, ...);
 *   publish() writes metadata/version-hint.text for file-catalog readers. Idempotent.
 *
 * Only committed metadata may be passed back in as `current`. Rows are identified by the key
 * columns: an upsert is an equality delete of the key plus the new row in the same snapshot (an
 * equality delete applies to data files with a strictly lower sequence number, so the new row
 * survives). Keyless tables are multisets: their rows live in hash buckets, copy-on-write.
 */

/** What the layer needs from its caller's world. */
export interface IcebergDeps {
  readonly store: ObjectStore;
  /** Parent folder for scratch files (DuckDB, downloads); the OS temp folder by default. */
  readonly workDir?: string;
}

/** The source table as it is now. */
export interface TableSpec {
  /** Object key prefix of the table (no trailing slash), e.g. `<prefix>iceberg/<db-seg>/<table-seg>` (`tablePath` in lib/sink/s3/keys.ts). */
  readonly location: string;
  readonly columns: readonly Column[];
  /** Key column names; empty for a keyless table (rows are then a multiset, identity = the whole row). */
  readonly key: readonly string[];
  /** New name → old name for columns renamed since the current version (they keep their field id). */
  readonly renamed?: ReadonlyMap<string, string>;
  /** Columns dropped and added again under the same name since the current version. */
  readonly recreated?: ReadonlySet<string>;
}

/** One merge's effect on a table; every key appears at most once across both lists. */
export interface ChangeSet {
  /** Full rows (JSON object text, sluice's value encoding) to insert or to replace the row with their key. */
  readonly upserts: Lines;
  /** Keyed table: key objects (JSON text) of rows to delete. Keyless: full rows, each removing one equal row. */
  readonly deletes: Lines;
}

export interface StageOptions {
  /** Names this commit's files (letters, digits, `_`, `-`): use one per commit, e.g. the merge sequence. */
  readonly tag: string;
  /** The snapshot's and metadata's timestamp; pass the same value on a redo to get identical bytes. */
  readonly timestampMs: number;
  /** Extra snapshot summary entries (e.g. the merged change-log position). */
  readonly summary?: Readonly<Record<string, string>>;
}

export interface StageStats {
  readonly rowsWritten: number;
  readonly deletes: number;
  readonly dataFiles: number;
  readonly deleteFiles: number;
  /** Per column, values that have no Iceberg equivalent and were written as NULL (MySQL zero dates). */
  readonly nulled: Readonly<Record<string, number>>;
  /** Keyless tables: deleted rows that matched no row of the table. */
  readonly unmatchedDeletes: number;
}

/** A staged table version: commit `version.metadataKey`, then `publish` it. */
export interface Staged {
  readonly version: TableVersion;
  /** Every key this stage wrote (data, manifests, metadata). */
  readonly written: readonly string[];
  readonly stats: StageStats;
  readonly schema: SchemaEvolution | undefined;
}

/** A staged expiry: commit and publish it like any version, then delete `unreferenced`. */
export interface StagedExpiry extends Staged {
  readonly expiredSnapshots: readonly number[];
  /** Keys no retained snapshot or metadata file needs any more. */
  readonly unreferenced: readonly string[];
}

const TAG = /^[A-Za-z0-9_-]{1,100}$/;
const BUCKET_FILE = /-b(\d{4})\.parquet$/;
/** Rows per data file a full rewrite aims at (also the keyless tables' copy-on-write unit). */
export const DEFAULT_ROWS_PER_FILE = 500_000;

const paths = (location: string, tag: string) => ({
  data: (suffix: string) => `${location}/data/${tag}-${suffix}.parquet`,
  manifest: (suffix: string) => `${location}/metadata/${tag}-m-${suffix}.avro`,
  manifestList: `${location}/metadata/snap-${tag}.avro`,
});
export const metadataKey = (location: string, version: number) => `${location}/metadata/v${version}.metadata.json`;
export const versionHintKey = (location: string) => `${location}/metadata/version-hint.text`;
const bucketSuffix = (bucket: number) => `b${String(bucket).padStart(4, '0')}`;

/** N of a `.../v<N>.metadata.json` key. */
export function versionOf(key: string): number {
  const version = Number(/\/v(\d+)\.metadata\.json$/.exec(key)?.[1]);
  if (!Number.isInteger(version)) throw new AssertionError(`${key} is not a v<N>.metadata.json file`);
  return version;
}

/** Reads a committed version (the metadata location the caller stored). */
export async function loadVersion(store: ObjectStore, key: string): Promise<TableVersion> {
  const body = await store.get(key);
  if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${key} does not exist`);
  const version = Number(/\/v(\d+)\.metadata\.json$/.exec(key)?.[1]);
  if (!Number.isInteger(version)) throw new AssertionError(`${key} is not a v<N>.metadata.json file`);
  return { metadataKey: key, version, metadata: JSON.parse(new TextDecoder().decode(body)) as TableMetadata };
}

/** Makes a committed version the one file-catalog readers (version-hint.text) find. Idempotent. */
export async function publish(store: ObjectStore, version: Pick<TableVersion, 'metadataKey' | 'version'>): Promise<void> {
  const location = version.metadataKey.replace(/\/metadata\/[^/]+$/, '');
  await store.put(versionHintKey(location), String(version.version));
}

/** Deletes objects an expiry listed, once its version is committed and published. */
export async function deleteUnreferenced(store: ObjectStore, expiry: Pick<StagedExpiry, 'unreferenced'>): Promise<void> {
  await store.delete(expiry.unreferenced);
}

// ---------------------------------------------------------------------------------------------
// Reading the current snapshot

interface LiveEntry {
  readonly file: DataFileRecord;
  /** Data sequence number (inherited when the manifest left it null). */
  readonly seq: number;
  readonly fileSeq: number;
  readonly snapshotId: number;
  readonly manifest: ManifestFile;
}

async function readManifestList(store: ObjectStore, snapshot: Snapshot | undefined): Promise<ManifestFile[]> {
  if (!snapshot) return [];
  const body = await store.get(store.keyOf(snapshot['manifest-list']));
  if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `manifest list ${snapshot['manifest-list']} is missing`);
  return readAvroFile<ManifestFile>(body).records;
}

async function readEntries(store: ObjectStore, manifest: ManifestFile): Promise<LiveEntry[]> {
  const body = await store.get(store.keyOf(manifest.manifest_path));
  if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `manifest ${manifest.manifest_path} is missing`);
  return readAvroFile<ManifestEntry>(body)
    .records.filter((entry) => entry.status !== 2)
    .map((entry) => ({
      file: entry.data_file,
      seq: entry.sequence_number ?? manifest.sequence_number,
      fileSeq: entry.file_sequence_number ?? manifest.sequence_number,
      snapshotId: entry.snapshot_id ?? manifest.added_snapshot_id,
      manifest,
    }));
}

async function liveEntries(store: ObjectStore, metadata: TableMetadata | undefined) {
  const manifests = metadata ? await readManifestList(store, currentSnapshot(metadata)) : [];
  const entries = (await Promise.all(manifests.map((m) => readEntries(store, m)))).flat();
  for (const entry of entries)
    if (entry.file.content === 1)
      throw new SluiceError(ErrorCode.ICEBERG_UNSUPPORTED, `position delete file ${entry.file.file_path}: sluice writes and reads only equality deletes`);
  return { manifests, data: entries.filter((e) => e.file.content === 0), deletes: entries.filter((e) => e.file.content === 2) };
}

/** The field with `id` in the newest schema that has it (a dropped column an equality delete still uses). */
function fieldById(metadata: TableMetadata, id: number): IcebergField {
  for (const schema of [...metadata.schemas].reverse()) {
    const field = schema.fields.find((f) => f.id === id);
    if (field) return field;
  }
  throw new AssertionError(`no schema of the table has field id ${id}`);
}

/**
 * Creates workspace table `live` (columns `c<id>` of `fields`): the rows of the current snapshot,
 * with every equality delete applied to the data files older than it.
 */
async function loadLive(
  ws: Workspace,
  store: ObjectStore,
  metadata: TableMetadata | undefined,
  fields: readonly IcebergField[],
  live: Awaited<ReturnType<typeof liveEntries>>,
) {
  const download = async (entry: LiveEntry) => {
    const path = join(ws.dir, `${entry.file.content}-${basename(entry.file.file_path)}`);
    await store.getFile(store.keyOf(entry.file.file_path), path);
    return { path, seq: entry.seq };
  };
  const groups = new Map<string, LiveEntry[]>();
  for (const entry of live.deletes) {
    const ids = (entry.file.equality_ids ?? []).join(',');
    groups.set(ids, [...(groups.get(ids) ?? []), entry]);
  }
  const deleteIds = [...new Set([...groups.keys()].flatMap((ids) => ids.split(',').map(Number)))];
  const extra = metadata ? deleteIds.filter((id) => !fields.some((f) => f.id === id)).map((id) => fieldById(metadata, id)) : [];
  await ws.loadParquet('data_all', await Promise.all(live.data.map(download)), [...fields, ...extra]);
  const conditions: string[] = [];
  let g = 0;
  for (const [ids, entries] of groups) {
    const deleteFields = ids.split(',').map((id) => fieldById(metadata as TableMetadata, Number(id)));
    await ws.loadParquet(`del_${g}`, await Promise.all(entries.map(download)), deleteFields);
    const match = deleteFields.map((f) => `d.${col(f.id)} IS NOT DISTINCT FROM t.${col(f.id)}`).join(' AND ');
    conditions.push(`NOT EXISTS (SELECT 1 FROM del_${g} d WHERE d._seq > t._seq AND ${match})`);
    g++;
  }
  await ws.run(
    `CREATE OR REPLACE TEMP TABLE live AS SELECT ${fields.map((f) => `t.${col(f.id)}`).join(', ')} FROM data_all t${conditions.length ? ` WHERE ${conditions.join(' AND ')}` : ''}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Writing a snapshot

interface Prepared {
  readonly base: TableVersion;
  readonly evolution: SchemaEvolution;
  readonly fields: MappedField[];
  readonly locationUri: string;
  readonly keyIds: number[];
}

function prepare(deps: IcebergDeps, current: TableVersion | undefined, spec: TableSpec, options: StageOptions, allowIncompatible: boolean): Prepared {
  if (!TAG.test(options.tag)) throw new AssertionError(`tag ${JSON.stringify(options.tag)} must be 1-100 letters, digits, _ or -`);
  const locationUri = deps.store.uri(spec.location);
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

interface NewFile {
  readonly key: string;
  readonly written: WrittenFile;
  readonly content: 0 | 2;
  readonly equalityIds?: readonly number[];
}

class SnapshotWriter {
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
    return paths(this.spec.location, this.options.tag);
  }

  /** Uploads a Parquet file written in the workspace under this commit's name `suffix`. */
  async addFile(written: WrittenFile, suffix: string, content: 0 | 2, equalityIds?: readonly number[]): Promise<void> {
    if (written.records === 0) return;
    const key = this.keys.data(suffix);
    await this.deps.store.putFile(key, written.path);
    this.written.push(key);
    this.files.push({ key, written, content, equalityIds });
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
    const deletes = this.files.filter((f) => f.content === 2);
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
        'added-equality-delete-files': String(deletes.length),
        'added-equality-deletes': String(deletes.reduce((n, f) => n + f.written.records, 0)),
        'added-files-size': String(this.files.reduce((n, f) => n + f.written.bytes, 0)),
        'sluice.removed-files': String(extra.removed ?? 0),
        'total-data-files': String(sum(0, 'added_files_count') + sum(0, 'existing_files_count')),
        'total-delete-files': String(sum(1, 'added_files_count') + sum(1, 'existing_files_count')),
        'total-records': String(sum(0, 'added_rows_count') + sum(0, 'existing_rows_count')),
        'total-equality-deletes': String(sum(1, 'added_rows_count') + sum(1, 'existing_rows_count')),
        'engine-name': 'sluice',
        ...this.options.summary,
      },
      'schema-id': this.prepared.evolution.schema['schema-id'],
    };
    const metadata = nextMetadata(base, {
      schema: this.prepared.evolution.schema,
      lastColumnId: this.prepared.evolution.lastColumnId,
      snapshot,
      properties: { [PROPERTY.keyFields]: this.prepared.keyIds.join(','), ...extra.properties },
      timestampMs: this.options.timestampMs,
    });
    return putMetadata(this.deps.store, this.spec.location, base.version + 1, metadata, this.written);
  }
}

function dataFile(path: string, file: NewFile): DataFileRecord {
  return {
    content: file.content,
    file_path: path,
    file_format: 'PARQUET',
    partition: {},
    record_count: file.written.records,
    file_size_in_bytes: file.written.bytes,
    column_sizes: null,
    value_counts: null,
    null_value_counts: null,
    nan_value_counts: null,
    lower_bounds: null,
    upper_bounds: null,
    key_metadata: null,
    split_offsets: null,
    equality_ids: file.equalityIds ? [...file.equalityIds] : null,
    // Position deletes must have a null sort order (the spec's note 3 on data_file): only data files claim one.
    sort_order_id: file.content === 0 ? 0 : null,
    referenced_data_file: null,
  };
}

async function putMetadata(store: ObjectStore, location: string, version: number, metadata: TableMetadata, written: string[]): Promise<TableVersion> {
  const key = metadataKey(location, version);
  await store.put(key, `${JSON.stringify(metadata, null, 1)}\n`);
  written.push(key);
  return { metadataKey: key, version, metadata };
}

/** Writes `select` (columns `c<id>` of the schema) as bucket files: `rowsPerFile` rows each, by a hash of `ids`. */
async function writeBuckets(ws: Workspace, writer: SnapshotWriter, schema: IcebergSchema, select: string, ids: readonly number[], rowsPerFile: number) {
  const rows = await ws.count(select);
  const buckets = Math.max(1, Math.ceil(rows / rowsPerFile));
  if (rows > 0) {
    await ws.run(`CREATE OR REPLACE TEMP TABLE bucketed AS SELECT *, ${bucketExpression(ids, buckets)} AS _bucket FROM (${select})`);
    for (let b = 0; b < buckets; b++) {
      const file = await ws.writeParquet(`SELECT * EXCLUDE (_bucket) FROM bucketed WHERE _bucket = ${b}`, `${bucketSuffix(b)}.parquet`, schema);
      await writer.addFile(file, bucketSuffix(b), 0);
    }
  }
  return { rows, buckets };
}

/** What a bucket layout depends on: the hashed fields and their types (a promotion changes a value's text). */
const bucketSignature = (schema: IcebergSchema, ids: readonly number[]) => ids.map((id) => `${id}:${schema.fields.find((f) => f.id === id)?.type}`).join(',');

const stats = (partial: Partial<StageStats>): StageStats => ({
  rowsWritten: 0,
  deletes: 0,
  dataFiles: 0,
  deleteFiles: 0,
  nulled: {},
  unmatchedDeletes: 0,
  ...partial,
});

// ---------------------------------------------------------------------------------------------
// Operations

/**
 * Stages one merge: `changes` applied to `current` (undefined creates the table). Keyed tables get
 * one data file with the upserted rows and one equality-delete file on the key columns (merge on
 * read); keyless tables rewrite the hash buckets that lose rows (copy on write) and add bucket
 * files for new rows.
 */
export async function stageChanges(
  deps: IcebergDeps,
  current: TableVersion | undefined,
  spec: TableSpec,
  changes: ChangeSet,
  options: StageOptions,
): Promise<Staged> {
  const prepared = prepare(deps, current, spec, options, false);
  await using ws = await Workspace.open(deps.workDir);
  const writer = new SnapshotWriter(deps, prepared, spec, options);
  const { fields } = prepared;
  const schema = prepared.evolution.schema;
  const keyFields = fields.filter((f) => prepared.keyIds.includes(f.id));
  const upserts = await ws.spool('upserts', changes.upserts);
  const deletes = await ws.spool('deletes', changes.deletes);
  const nulled = await ws.loadJson('up', upserts.path, fields);
  await ws.loadJson('del', deletes.path, spec.key.length ? keyFields : fields);
  const live = await liveEntries(deps.store, current?.metadata);

  if (spec.key.length) {
    const keys = keyFields.map((f) => col(f.id)).join(', ');
    const changed = `SELECT ${keys} FROM up UNION ALL SELECT ${keys} FROM del`;
    const distinct = await ws.count(`SELECT DISTINCT ${keys} FROM (${changed})`);
    if (distinct !== upserts.lines + deletes.lines)
      throw new AssertionError(
        `the change set names ${upserts.lines + deletes.lines - distinct} key(s) more than once; give each key one upsert or one delete`,
      );
    await writer.addFile(await ws.writeParquet('SELECT * FROM up', 'data.parquet', schema), 'data', 0);
    // A table without data files has nothing to delete: the first load writes no delete file.
    if (live.data.length) {
      const deleteSchema: IcebergSchema = {
        type: 'struct',
        'schema-id': schema['schema-id'],
        fields: keyFields.map(({ id, name, required, type }) => ({ id, name, required, type })),
      };
      const file = await ws.writeParquet(changed, 'eq-deletes.parquet', deleteSchema);
      await writer.addFile(file, 'eq-deletes', 2, prepared.keyIds);
    }
    const carried = await writer.carry(live.manifests, new Set());
    const version = await writer.finish(carried, operationOf(writer.files, 0), {});
    return {
      version,
      written: writer.written,
      schema: prepared.evolution,
      stats: stats({
        rowsWritten: upserts.lines,
        deletes: deletes.lines,
        dataFiles: upserts.lines ? 1 : 0,
        deleteFiles: writer.files.length - (upserts.lines ? 1 : 0),
        nulled,
      }),
    };
  }
  // `await` here: the workspace is disposed when this function returns.
  return await stageKeyless(deps, ws, writer, prepared, live, { upserts: upserts.lines, deletes: deletes.lines, nulled });
}

/** Keyless tables: multiset rows in hash buckets of all columns; a bucket that loses rows is rewritten. */
async function stageKeyless(
  deps: IcebergDeps,
  ws: Workspace,
  writer: SnapshotWriter,
  prepared: Prepared,
  live: Awaited<ReturnType<typeof liveEntries>>,
  counts: { upserts: number; deletes: number; nulled: Record<string, number> },
): Promise<Staged> {
  const schema = prepared.evolution.schema;
  const ids = schema.fields.map((f) => f.id);
  const all = ids.map(col).join(', ');
  const properties = prepared.base.metadata.properties;
  const buckets = Number(properties[PROPERTY.buckets] ?? 1);
  const bucketOf = (file: LiveEntry) => Number(BUCKET_FILE.exec(file.file.file_path)?.[1] ?? -1);
  // Buckets are only valid while rows hash the same way: same columns, no delete files, bucket files only.
  const incremental =
    prepared.base.version > 0 &&
    properties[PROPERTY.bucketFields] === bucketSignature(schema, ids) &&
    live.deletes.length === 0 &&
    live.data.every((f) => bucketOf(f) >= 0 && bucketOf(f) < buckets);
  /** Rows of `from` less one row per row of table `del` (multiset difference); returns the deletes that found no row. */
  const subtract = async (from: string, del: string) => {
    const match = ids.map((id) => `a.${col(id)} IS NOT DISTINCT FROM d.${col(id)}`).join(' AND ');
    await ws.run(
      `CREATE OR REPLACE TEMP TABLE result AS WITH a AS (SELECT *, row_number() OVER (PARTITION BY ${all}) AS _n FROM (${from})), ` +
        `d AS (SELECT ${all}, count(*) AS _k FROM ${del} GROUP BY ALL) SELECT ${ids.map((id) => `a.${col(id)}`).join(', ')} FROM a LEFT JOIN d ON ${match} WHERE a._n > coalesce(d._k, 0)`,
    );
    const removed = (await ws.count(from)) - (await ws.count('SELECT * FROM result'));
    return (await ws.count(`SELECT * FROM ${del}`)) - removed;
  };
  const done = async (version: TableVersion, unmatchedDeletes: number): Promise<Staged> => ({
    version,
    written: writer.written,
    schema: prepared.evolution,
    stats: stats({ rowsWritten: counts.upserts, deletes: counts.deletes, dataFiles: writer.files.length, nulled: counts.nulled, unmatchedDeletes }),
  });

  if (!incremental) {
    await loadLive(ws, deps.store, prepared.base.metadata, schema.fields, live);
    const unmatched = await subtract('SELECT * FROM live UNION ALL SELECT * FROM up', 'del');
    const { buckets: laid } = await writeBuckets(ws, writer, schema, 'SELECT * FROM result', ids, DEFAULT_ROWS_PER_FILE);
    const version = await writer.finish([], operationOf(writer.files, live.data.length + live.deletes.length), {
      properties: { [PROPERTY.buckets]: String(laid), [PROPERTY.bucketFields]: bucketSignature(schema, ids) },
      removed: live.data.length + live.deletes.length,
    });
    return done(version, unmatched);
  }

  const bucket = bucketExpression(ids, buckets);
  const touched = (await ws.rows(`SELECT DISTINCT ${bucket} AS b FROM del ORDER BY b`)).map((r) => Number(r.b));
  const added = (await ws.rows(`SELECT DISTINCT ${bucket} AS b FROM up ORDER BY b`)).map((r) => Number(r.b));
  const removed = new Set<string>();
  let unmatched = 0;
  for (const b of touched) {
    const files = live.data.filter((f) => bucketOf(f) === b);
    await loadLive(ws, deps.store, prepared.base.metadata, schema.fields, { manifests: [], data: files, deletes: [] });
    await ws.run(`CREATE OR REPLACE TEMP TABLE bucket_del AS SELECT * FROM del WHERE ${bucket} = ${b}`);
    unmatched += await subtract(`SELECT * FROM live UNION ALL SELECT * FROM up WHERE ${bucket} = ${b}`, 'bucket_del');
    await writer.addFile(await ws.writeParquet('SELECT * FROM result', `${bucketSuffix(b)}.parquet`, schema), bucketSuffix(b), 0);
    for (const file of files) removed.add(file.file.file_path);
  }
  for (const b of added.filter((b) => !touched.includes(b)))
    await writer.addFile(await ws.writeParquet(`SELECT * FROM up WHERE ${bucket} = ${b}`, `${bucketSuffix(b)}.parquet`, schema), bucketSuffix(b), 0);
  const carried = await writer.carry(live.manifests, removed);
  const version = await writer.finish(carried, operationOf(writer.files, removed.size), { removed: removed.size });
  return done(version, unmatched);
}

/**
 * Stages a version whose rows are exactly `rows` (a rebuild from the change log, a re-snapshot,
 * or — with no rows — a truncate). Every data file is rewritten, so column types may change in
 * ways Iceberg cannot promote: such a column gets a new field id.
 */
export async function stageReplace(deps: IcebergDeps, current: TableVersion | undefined, spec: TableSpec, rows: Lines, options: StageOptions): Promise<Staged> {
  const prepared = prepare(deps, current, spec, options, true);
  await using ws = await Workspace.open(deps.workDir);
  const writer = new SnapshotWriter(deps, prepared, spec, options);
  const schema = prepared.evolution.schema;
  const spooled = await ws.spool('rows', rows);
  const nulled = await ws.loadJson('up', spooled.path, prepared.fields);
  const ids = spec.key.length ? prepared.keyIds : schema.fields.map((f) => f.id);
  if (spec.key.length) {
    const distinct = await ws.count(`SELECT DISTINCT ${ids.map(col).join(', ')} FROM up`);
    if (distinct !== spooled.lines) throw new AssertionError(`the rows hold ${spooled.lines - distinct} duplicate key(s)`);
  }
  const live = await liveEntries(deps.store, current?.metadata);
  const { buckets } = await writeBuckets(ws, writer, schema, 'SELECT * FROM up', ids, DEFAULT_ROWS_PER_FILE);
  const version = await writer.finish([], operationOf(writer.files, live.data.length + live.deletes.length), {
    properties: { [PROPERTY.buckets]: String(buckets), [PROPERTY.bucketFields]: bucketSignature(schema, ids) },
    removed: live.data.length + live.deletes.length,
  });
  return { version, written: writer.written, schema: prepared.evolution, stats: stats({ rowsWritten: spooled.lines, dataFiles: writer.files.length, nulled }) };
}

/** Stages a truncate: a new snapshot with no files (older snapshots keep theirs until they expire). */
export function stageTruncate(deps: IcebergDeps, current: TableVersion | undefined, spec: TableSpec, options: StageOptions): Promise<Staged> {
  return stageReplace(deps, current, spec, [], options);
}

/**
 * Stages a compaction: the current rows (deletes applied) rewritten into bucket files of about
 * `rowsPerFile` rows, hashed on the key (keyed) or the whole row (keyless); no delete files remain.
 * The schema stays as it is.
 */
export async function stageCompaction(deps: IcebergDeps, current: TableVersion, options: StageOptions & { rowsPerFile?: number }): Promise<Staged> {
  const metadata = current.metadata;
  const schema = currentSchema(metadata);
  const keyIds = (metadata.properties[PROPERTY.keyFields] ?? '').split(',').filter(Boolean).map(Number);
  const location = deps.store.keyOf(metadata.location);
  const columns: Column[] = schema.fields.map((f) => ({ name: f.name, kind: 'string', sqlType: f.type }));
  const spec: TableSpec = { location, columns, key: [] };
  const prepared: Prepared = {
    base: current,
    evolution: { schema, lastColumnId: metadata['last-column-id'], changed: false, added: [], dropped: [], replaced: [] },
    fields: [],
    locationUri: metadata.location,
    keyIds,
  };
  if (!TAG.test(options.tag)) throw new AssertionError(`tag ${JSON.stringify(options.tag)} must be 1-100 letters, digits, _ or -`);
  await using ws = await Workspace.open(deps.workDir);
  const writer = new SnapshotWriter(deps, prepared, spec, options);
  const live = await liveEntries(deps.store, metadata);
  await loadLive(ws, deps.store, metadata, schema.fields, live);
  const ids = keyIds.length ? keyIds : schema.fields.map((f) => f.id);
  const { rows, buckets } = await writeBuckets(ws, writer, schema, 'SELECT * FROM live', ids, options.rowsPerFile ?? DEFAULT_ROWS_PER_FILE);
  const version = await writer.finish([], 'replace', {
    properties: { [PROPERTY.buckets]: String(buckets), [PROPERTY.bucketFields]: bucketSignature(schema, ids) },
    removed: live.data.length + live.deletes.length,
  });
  return { version, written: writer.written, schema: undefined, stats: stats({ rowsWritten: rows, dataFiles: writer.files.length }) };
}

/** Every key a snapshot needs: its manifest list, manifests and their files. */
async function reachable(store: ObjectStore, snapshot: Snapshot): Promise<Set<string>> {
  const keys = new Set([store.keyOf(snapshot['manifest-list'])]);
  for (const manifest of await readManifestList(store, snapshot)) {
    keys.add(store.keyOf(manifest.manifest_path));
    const body = await store.get(store.keyOf(manifest.manifest_path));
    if (!body) continue;
    for (const entry of readAvroFile<ManifestEntry>(body).records) keys.add(store.keyOf(entry.data_file.file_path));
  }
  return keys;
}

/**
 * Stages an expiry: snapshots other than the current one, the newest `retainLast`, and those younger
 * than `maxAgeMs` are dropped from the metadata. `unreferenced` lists their files that no retained
 * snapshot uses, and metadata files older than the metadata log; delete them only after this
 * version is committed and published.
 */
export async function stageExpiry(
  deps: IcebergDeps,
  current: TableVersion,
  options: { retainLast: number; maxAgeMs?: number; nowMs: number },
): Promise<StagedExpiry> {
  const { store } = deps;
  const metadata = current.metadata;
  const currentId = metadata['current-snapshot-id'];
  const newest = [...metadata.snapshots].sort((a, b) => b['sequence-number'] - a['sequence-number']);
  const keep = new Set(newest.slice(0, Math.max(1, options.retainLast)).map((s) => s['snapshot-id']));
  if (currentId !== undefined) keep.add(currentId);
  if (options.maxAgeMs !== undefined) for (const s of newest) if (options.nowMs - s['timestamp-ms'] <= (options.maxAgeMs ?? 0)) keep.add(s['snapshot-id']);
  const retained = metadata.snapshots.filter((s) => keep.has(s['snapshot-id']));
  const expired = metadata.snapshots.filter((s) => !keep.has(s['snapshot-id']));
  const needed = new Set<string>();
  for (const snapshot of retained) for (const key of await reachable(store, snapshot)) needed.add(key);
  const unreferenced = new Set<string>();
  for (const snapshot of expired) for (const key of await reachable(store, snapshot)) if (!needed.has(key)) unreferenced.add(key);
  const oldest = retained.length ? Math.min(...retained.map((s) => s['timestamp-ms'])) : options.nowMs;
  const next: TableMetadata = {
    ...metadata,
    'last-updated-ms': options.nowMs,
    snapshots: retained,
    // The log may only hold snapshots that still exist, and only after the oldest retained one.
    'snapshot-log': metadata['snapshot-log'].filter((e) => keep.has(e['snapshot-id']) && e['timestamp-ms'] >= oldest),
    'metadata-log': [
      ...metadata['metadata-log'],
      { 'metadata-file': `${metadata.location}/metadata/v${current.version}.metadata.json`, 'timestamp-ms': metadata['last-updated-ms'] },
    ].slice(-20),
  };
  const location = store.keyOf(metadata.location);
  const logged = new Set(next['metadata-log'].map((e) => store.keyOf(e['metadata-file'])));
  for await (const key of store.list(`${location}/metadata/`)) {
    const version = Number(/\/v(\d+)\.metadata\.json$/.exec(key)?.[1]);
    if (Number.isInteger(version) && version <= current.version && !logged.has(key)) unreferenced.add(key);
  }
  const written: string[] = [];
  const version = await putMetadata(store, location, current.version + 1, next, written);
  return {
    version,
    written,
    schema: undefined,
    stats: stats({}),
    expiredSnapshots: expired.map((s) => s['snapshot-id']),
    unreferenced: [...unreferenced].sort(),
  };
}
