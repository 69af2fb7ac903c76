import { basename, join } from 'node:path';
import { AssertionError, ErrorCode, SluiceError } from '../../errors.ts';
import type { Column } from '../../format/types.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import {
  type DataFileRecord,
  MANIFEST_ENTRY_SCHEMA,
  MANIFEST_FILE_SCHEMA,
  type ManifestEntry,
  type ManifestFile,
  readAvroFile,
  writeAvroFile,
} from '../files/avro.ts';
import { fetchColumns } from '../files/columns.ts';
import { parseJson, stringifyJson } from '../files/json.ts';
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
} from '../files/metadata.ts';
import {
  avroBounds,
  avroMap,
  boundDomain,
  boundLiteral,
  DEFAULT_METRICS,
  type FileMetrics,
  type MetricsMode,
  metricsFrom,
  metricsSelect,
} from '../files/metrics.ts';
import { bucketExpression, col, type Lines, Workspace, type WrittenFile } from '../files/parquet.ts';
import { evolveSchema, type IcebergField, type IcebergSchema, type MappedField, mappedFields, type SchemaEvolution } from '../files/schema.ts';

export type { ObjectStore } from '../../sink/s3/object-store.ts';
export type { TableVersion } from '../files/metadata.ts';

/*
 * The Iceberg file-format layer: it turns a table's change set into the files of one new Iceberg
 * snapshot and the next metadata file, and nothing more. It never makes a version current:
 *
 *   stage*()  writes data/delete files, manifests, the manifest list and <N>-<uuid>.metadata.json
 *             under names fixed by (table location, caller's tag, N = previous version + 1): a redo
 *             after a crash rewrites the same keys, nothing reads them until they are committed, and
 *             a run that lost its lease never writes a key another run stages or commits;
 *   (caller)  commits `version.metadataKey` with one conditional write (DynamoDB, Glue, ...);
 *   publish() copies it to v<N>.metadata.json and writes metadata/version-hint.text for
 *             file-catalog readers: the only shared keys, written only with committed content. Idempotent.
 *
 * Only committed metadata may be passed back in as `current`. Rows are identified by the key
 * columns: an upsert is a delete of the key's current row plus the new row in the same snapshot —
 * a position delete of the row's file and position (found through the key bounds of the files,
 * which are sorted by the key), or an equality delete of the key (it applies to data files with a
 * strictly lower sequence number, so the new row survives). Keyless tables are multisets: their
 * rows live in hash buckets, copy-on-write.
 */

/** What the layer needs from its caller's world. */
export interface IcebergDeps {
  readonly store: ObjectStore;
  /** Parent folder for scratch files (DuckDB, downloads); the OS temp folder by default. */
  readonly workDir?: string;
}

/** The source table as it is now. */
export interface TableSpec {
  /** Object key prefix of the table (no trailing slash), e.g. `<prefix>iceberg/<db-seg>/<table-seg>` (`tablePath` in lib/sink/s3/keys.ts): where its metadata files go. */
  readonly location: string;
  /**
   * Where its data files, delete files, manifests and manifest lists go, and the metadata's
   * `location`: a key prefix or an absolute `s3://` location (one an Iceberg REST catalog
   * assigned); `location` when absent.
   */
  readonly files?: string;
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
  /** How a keyed table's merge deletes the rows it replaces (`position` by default). */
  readonly deletes?: DeleteMode;
}

/**
 * `position`: the merge finds each changed key's current row (file and row number) and writes a
 * position delete file — every engine reads those. `equality`: a delete file of the changed keys,
 * nothing read back — cheaper to write, but PyIceberg and Snowflake cannot read it.
 */
export type DeleteMode = 'position' | 'equality';

/** Field ids of a position delete file's columns (spec, "Position Delete Files"). */
export const POSITION_DELETE_FIELDS: readonly IcebergField[] = [
  { id: 2147483546, name: 'file_path', required: true, type: 'string' },
  { id: 2147483545, name: 'pos', required: true, type: 'long' },
];
const [FILE_PATH, POS] = POSITION_DELETE_FIELDS.map((f) => f.id) as [number, number];

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
/**
 * A version's metadata as the run with `tag` staged it, `metadata/<N:5>-<uuid>.metadata.json`:
 * Iceberg's own naming, which Trino and the catalogs parse (and which they want directly under
 * `metadata/`), the uuid a version-8 one from the tag, so a catalog's own metadata files beside it
 * (random or time-based uuids, versions 4 and 7) are never taken for sluice's. Without `tag`: its
 * copy for file-catalog readers, `metadata/v<N>.metadata.json`.
 */
export const metadataKey = (location: string, version: number, tag?: string) =>
  tag
    ? `${location}/metadata/${String(version).padStart(5, '0')}-${stableUuid('sluice-metadata', tag)}.metadata.json`
    : `${location}/metadata/v${version}.metadata.json`;
/** N of a key `metadataKey` makes, or undefined for any other. */
export const metadataVersion = (key: string) => {
  const match = /\/metadata\/(?:v(\d+)|(\d{5,})-[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.metadata\.json$/.exec(key);
  const version = Number(match?.[1] ?? match?.[2]);
  return match && Number.isInteger(version) ? version : undefined;
};
export const versionHintKey = (location: string) => `${location}/metadata/version-hint.text`;
const bucketSuffix = (bucket: number) => `b${String(bucket).padStart(4, '0')}`;
const rangeSuffix = (range: number) => `r${String(range).padStart(4, '0')}`;

/** The table location a metadata key `metadataKey` made is under (where the table's metadata files are). */
export const metadataHome = (key: string) => key.replace(/\/metadata\/[^/]+$/, '');

/** N of a metadata key `metadataKey` makes (either form). */
export function versionOf(key: string): number {
  const version = metadataVersion(key);
  if (version === undefined) throw new AssertionError(`${key} is not a metadata file sluice names`);
  return version;
}

/** Reads a committed version (the metadata location the caller stored). */
export async function loadVersion(store: ObjectStore, key: string): Promise<TableVersion> {
  const body = await store.get(key);
  if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${key} does not exist`);
  return { metadataKey: key, version: versionOf(key), metadata: parseJson<TableMetadata>(new TextDecoder().decode(body)) };
}

/**
 * Makes a committed version the one file-catalog readers find: its metadata as `v<N>.metadata.json`,
 * then `version-hint.text`. Idempotent; `onlyIfStale` skips both when the hint already says N (a
 * run's check that no late write of an older run moved it back).
 */
export async function publish(store: ObjectStore, version: Pick<TableVersion, 'metadataKey' | 'version'>, onlyIfStale = false): Promise<void> {
  const location = metadataHome(version.metadataKey);
  const hint = versionHintKey(location);
  if (onlyIfStale && new TextDecoder().decode((await store.get(hint)) ?? new Uint8Array()) === String(version.version)) return;
  const plain = metadataKey(location, version.version);
  if (version.metadataKey !== plain) {
    const body = await store.get(version.metadataKey);
    if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${version.metadataKey} does not exist`);
    await store.put(plain, body);
  }
  await store.put(hint, String(version.version));
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
  // `deletes` holds both kinds: equality (content 2) and position (content 1).
  return { manifests, data: entries.filter((e) => e.file.content === 0), deletes: entries.filter((e) => e.file.content !== 0) };
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
 * with every equality delete applied to the data files older than it and every position delete
 * to the rows it names in data files not newer than it (spec, "Scan Planning").
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
  for (const entry of live.deletes.filter((e) => e.file.content === 2)) {
    const ids = (entry.file.equality_ids ?? []).join(',');
    groups.set(ids, [...(groups.get(ids) ?? []), entry]);
  }
  const deleteIds = [...new Set([...groups.keys()].flatMap((ids) => ids.split(',').map(Number)))];
  const extra = metadata ? deleteIds.filter((id) => !fields.some((f) => f.id === id)).map((id) => fieldById(metadata, id)) : [];
  const positional = live.deletes.filter((e) => e.file.content === 1);
  const data = await Promise.all(live.data.map(async (e) => ({ ...(await download(e)), uri: e.file.file_path })));
  await ws.loadParquet('data_all', data, [...fields, ...extra], { positions: positional.length > 0 });
  const conditions: string[] = [];
  if (positional.length) {
    await ws.loadParquet('pos_del', await Promise.all(positional.map(download)), POSITION_DELETE_FIELDS);
    conditions.push(`NOT EXISTS (SELECT 1 FROM pos_del p WHERE p.${col(FILE_PATH)} = t._file AND p.${col(POS)} = t._pos AND p._seq >= t._seq)`);
  }
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

interface NewFile {
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
async function writeMeasured(
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

async function putMetadata(
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
async function writeBuckets(ws: Workspace, writer: SnapshotWriter, schema: IcebergSchema, select: string, ids: readonly number[], rowsPerFile: number) {
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
async function writeRanges(ws: Workspace, writer: SnapshotWriter, schema: IcebergSchema, select: string, ids: readonly number[], rowsPerFile: number) {
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
 * one data file with the upserted rows (sorted by the key) and one delete file — position deletes
 * of the keys' current rows, or equality deletes on the key (`options.deletes`) — (merge on read);
 * keyless tables rewrite the hash buckets that lose rows (copy on write) and add bucket
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
    await writer.addFile(await writeMeasured(ws, 'SELECT * FROM up', 'data.parquet', schema, { first: prepared.keyIds }), 'data', 0);
    // A table without data files has nothing to delete: the first load writes no delete file.
    if (live.data.length && (options.deletes ?? 'position') === 'equality') {
      const deleteSchema: IcebergSchema = {
        type: 'struct',
        'schema-id': schema['schema-id'],
        fields: keyFields.map(({ id, name, required, type }) => ({ id, name, required, type })),
      };
      const file = await writeMeasured(ws, changed, 'eq-deletes.parquet', deleteSchema, { first: prepared.keyIds });
      await writer.addFile(file, 'eq-deletes', 2, { equalityIds: prepared.keyIds });
    } else if (live.data.length) await stagePositionDeletes(deps, ws, writer, keyFields, changed, live);
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

/** A manifest's bounds map (avsc's array of key/value records) by field id. */
function boundsOf(map: unknown): Map<number, Uint8Array> {
  return new Map(((map as { key: number; value: Uint8Array }[] | null) ?? []).map((e) => [e.key, e.value]));
}

/** The data files whose key bounds can hold one of the keys in workspace table `chg` (files without bounds always can). */
async function candidateFiles(ws: Workspace, keyFields: readonly IcebergField[], data: readonly LiveEntry[]): Promise<LiveEntry[]> {
  const found = new Set<number>();
  const BATCH = 200;
  for (let from = 0; from < data.length; from += BATCH) {
    const parts = data.slice(from, from + BATCH).map((entry, j) => {
      const lower = boundsOf(entry.file.lower_bounds);
      const upper = boundsOf(entry.file.upper_bounds);
      const nulls = new Map(((entry.file.null_value_counts as { key: number; value: number }[] | null) ?? []).map((e) => [e.key, Number(e.value)]));
      const terms = keyFields.flatMap((f) => {
        const value = boundDomain(f.type, `k.${col(f.id)}`);
        const lo = lower.get(f.id);
        const hi = upper.get(f.id);
        const range = [...(lo ? [`${value} >= ${boundLiteral(f.type, lo)}`] : []), ...(hi ? [`${value} <= ${boundLiteral(f.type, hi)}`] : [])];
        if (!range.length) return [];
        // A key part that maps to NULL (a zero date) lies in no range: such a file is a candidate if it holds NULLs there (or does not say).
        const holdsNull = (nulls.get(f.id) ?? 1) > 0;
        return [`(${holdsNull ? `k.${col(f.id)} IS NULL OR ` : ''}(${range.join(' AND ')}))`];
      });
      return `SELECT ${from + j} AS i WHERE EXISTS (SELECT 1 FROM chg k${terms.length ? ` WHERE ${terms.join(' AND ')}` : ''})`;
    });
    for (const row of await ws.rows(parts.join(' UNION ALL '))) found.add(Number(row.i));
  }
  return data.filter((_, i) => found.has(i));
}

/**
 * Position mode: a position delete file naming the current row of every changed key (table `chg`
 * is made from `changed`). Only candidate files (key bounds that can hold a changed key) are read,
 * and of those only the key columns and the row positions; rows an existing delete already removed
 * are not current (a position delete not older than the file, an equality delete newer than it).
 */
async function stagePositionDeletes(
  deps: IcebergDeps,
  ws: Workspace,
  writer: SnapshotWriter,
  keyFields: readonly IcebergField[],
  changed: string,
  live: Awaited<ReturnType<typeof liveEntries>>,
): Promise<void> {
  const keys = keyFields.map((f) => col(f.id)).join(', ');
  await ws.run(`CREATE OR REPLACE TEMP TABLE chg AS SELECT DISTINCT ${keys} FROM (${changed})`);
  const candidates = await candidateFiles(ws, keyFields, live.data);
  if (!candidates.length) return;
  const parts = [];
  for (const [i, entry] of candidates.entries()) {
    const path = join(ws.dir, `keys-${i}.parquet`);
    await fetchColumns(
      ws,
      deps.store,
      deps.store.keyOf(entry.file.file_path),
      entry.file.file_size_in_bytes,
      keyFields.map((f) => f.id),
      path,
    );
    parts.push({ path, seq: entry.seq, uri: entry.file.file_path });
  }
  // The IN form lets DuckDB prune row groups; a key part that maps to NULL (a zero date) needs IS NOT DISTINCT FROM.
  const nullable = await ws.count(`SELECT 1 FROM chg WHERE ${keyFields.map((f) => `${col(f.id)} IS NULL`).join(' OR ')}`);
  const matching = nullable
    ? // The changed keys renamed, so that c<id> inside the subquery names the file's column.
      `EXISTS (SELECT 1 FROM (SELECT ${keyFields.map((f) => `${col(f.id)} AS "k${f.id}"`).join(', ')} FROM chg) k WHERE ${keyFields.map((f) => `k."k${f.id}" IS NOT DISTINCT FROM ${col(f.id)}`).join(' AND ')})`
    : `(${keys}) IN (SELECT ${keys} FROM chg)`;
  await ws.loadParquet('cand', parts, keyFields, { positions: true, where: matching });

  let downloads = 0;
  const download = async (entry: LiveEntry) => {
    const path = join(ws.dir, `del-${downloads++}.parquet`);
    await deps.store.getFile(deps.store.keyOf(entry.file.file_path), path);
    return { path, seq: entry.seq };
  };
  const conditions: string[] = [];
  const paths = new Set(candidates.map((c) => c.file.file_path));
  const applying = live.deletes.filter((d) => {
    if (d.file.content !== 1) return false;
    if (d.file.referenced_data_file) return paths.has(String(d.file.referenced_data_file));
    const lo = boundsOf(d.file.lower_bounds).get(FILE_PATH);
    const hi = boundsOf(d.file.upper_bounds).get(FILE_PATH);
    // Byte order, as the bounds were computed (JavaScript's < compares UTF-16 units).
    const bytes = (p: string) => Buffer.from(p, 'utf8');
    return [...paths].some((p) => (!lo || Buffer.compare(Buffer.from(lo), bytes(p)) <= 0) && (!hi || Buffer.compare(bytes(p), Buffer.from(hi)) <= 0));
  });
  if (applying.length) {
    await ws.loadParquet('pos_old', await Promise.all(applying.map(download)), POSITION_DELETE_FIELDS);
    conditions.push(`NOT EXISTS (SELECT 1 FROM pos_old p WHERE p.${col(FILE_PATH)} = t._file AND p.${col(POS)} = t._pos AND p._seq >= t._seq)`);
  }
  // Equality deletes (written in equality mode, or before position mode existed) still apply.
  const groups = new Map<string, LiveEntry[]>();
  for (const entry of live.deletes.filter((e) => e.file.content === 2)) {
    const ids = (entry.file.equality_ids ?? []).join(',');
    groups.set(ids, [...(groups.get(ids) ?? []), entry]);
  }
  let g = 0;
  for (const [ids, entries] of groups) {
    const fields = ids.split(',').map((id) => keyFields.find((f) => f.id === Number(id)));
    if (fields.some((f) => !f))
      throw new AssertionError(`equality delete files on field ids ${ids} are not on the key (${keyFields.map((f) => f.id)}): a key change rewrites the table`);
    await ws.loadParquet(`eq_${g}`, await Promise.all(entries.map(download)), fields as IcebergField[]);
    const match = (fields as IcebergField[]).map((f) => `d.${col(f.id)} IS NOT DISTINCT FROM t.${col(f.id)}`).join(' AND ');
    conditions.push(`NOT EXISTS (SELECT 1 FROM eq_${g} d WHERE d._seq > t._seq AND ${match})`);
    g++;
  }
  const rows = `SELECT t._file AS ${col(FILE_PATH)}, t._pos AS ${col(POS)} FROM cand t${conditions.length ? ` WHERE ${conditions.join(' AND ')}` : ''}`;
  await ws.run(`CREATE OR REPLACE TEMP TABLE pos_new AS ${rows}`);
  const targets = await ws.rows(`SELECT DISTINCT ${col(FILE_PATH)} AS f FROM pos_new LIMIT 2`);
  const schema: IcebergSchema = { type: 'struct', 'schema-id': 0, fields: POSITION_DELETE_FIELDS };
  const file = await writeMeasured(ws, 'SELECT * FROM pos_new', 'pos-deletes.parquet', schema, { mode: 'full' });
  await writer.addFile(file, 'pos-deletes', 1, targets.length === 1 ? { referencedDataFile: String(targets[0]?.f) } : {});
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
    const { buckets: laid, layout } = await writeBuckets(ws, writer, schema, 'SELECT * FROM result', ids, DEFAULT_ROWS_PER_FILE);
    const version = await writer.finish([], operationOf(writer.files, live.data.length + live.deletes.length), {
      properties: { [PROPERTY.buckets]: String(laid), [PROPERTY.bucketFields]: layout },
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
    await writer.addFile(await writeMeasured(ws, 'SELECT * FROM result', `${bucketSuffix(b)}.parquet`, schema), bucketSuffix(b), 0);
    for (const file of files) removed.add(file.file.file_path);
  }
  for (const b of added.filter((b) => !touched.includes(b)))
    await writer.addFile(await writeMeasured(ws, `SELECT * FROM up WHERE ${bucket} = ${b}`, `${bucketSuffix(b)}.parquet`, schema), bucketSuffix(b), 0);
  const carried = await writer.carry(live.manifests, removed);
  const version = await writer.finish(carried, operationOf(writer.files, removed.size), { removed: removed.size });
  return done(version, unmatched);
}

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

/**
 * Stages a compaction: the current rows (deletes applied) rewritten into files of about
 * `rowsPerFile` rows — key ranges (keyed) or buckets hashed on the whole row (keyless); no delete
 * files remain.
 * The schema stays as it is.
 */
export async function stageCompaction(deps: IcebergDeps, current: TableVersion, options: StageOptions & { rowsPerFile?: number }): Promise<Staged> {
  const metadata = current.metadata;
  const schema = currentSchema(metadata);
  const keyIds = (metadata.properties[PROPERTY.keyFields] ?? '').split(',').filter(Boolean).map(Number);
  const columns: Column[] = schema.fields.map((f) => ({ name: f.name, kind: 'string', sqlType: f.type }));
  const spec: TableSpec = { location: metadataHome(current.metadataKey), files: deps.store.keyOf(metadata.location), columns, key: [] };
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
  const write = keyIds.length ? writeRanges : writeBuckets;
  const { rows, buckets, layout } = await write(ws, writer, schema, 'SELECT * FROM live', ids, options.rowsPerFile ?? DEFAULT_ROWS_PER_FILE);
  const version = await writer.finish([], 'replace', {
    properties: { [PROPERTY.buckets]: String(buckets), [PROPERTY.bucketFields]: layout },
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

/** Which snapshots an expiry keeps: see `expiredSnapshots`. */
export interface ExpiryRule {
  /** The newest this many snapshots stay whatever their age (at least 1: the current one). */
  readonly retainLast: number;
  /** A snapshot stays until it has not been the newest for this long (none: by `retainLast` alone). */
  readonly maxAgeMs?: number;
  readonly nowMs: number;
}

/**
 * The snapshots an expiry drops: all but the current one, the newest `retainLast`, and those that
 * were the newest less than `maxAgeMs` ago. The age counts from when the next snapshot replaced
 * it, not from its own commit, so a query planned on the snapshot a merge has just replaced keeps
 * its files for `maxAgeMs` however long the table was idle before.
 */
export function expiredSnapshots(metadata: TableMetadata, rule: ExpiryRule): Set<number> {
  const newest = [...metadata.snapshots].sort((a, b) => b['sequence-number'] - a['sequence-number']);
  const expired = new Set<number>();
  for (const [i, snapshot] of newest.entries()) {
    if (i < Math.max(1, rule.retainLast) || snapshot['snapshot-id'] === metadata['current-snapshot-id']) continue;
    const replacedAt = newest[i - 1]?.['timestamp-ms'] ?? rule.nowMs;
    if (rule.maxAgeMs === undefined || rule.nowMs - replacedAt > rule.maxAgeMs) expired.add(snapshot['snapshot-id']);
  }
  return expired;
}

/**
 * Stages an expiry of the snapshots `expiredSnapshots` names. `unreferenced` lists their files
 * that no retained snapshot uses, and metadata files older than the metadata log; delete them only
 * after this version is committed and published.
 */
export async function stageExpiry(deps: IcebergDeps, current: TableVersion, options: ExpiryRule & { readonly tag: string }): Promise<StagedExpiry> {
  const { store } = deps;
  const metadata = current.metadata;
  const dropped = expiredSnapshots(metadata, options);
  const keep = new Set(metadata.snapshots.map((s) => s['snapshot-id']).filter((id) => !dropped.has(id)));
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
    'metadata-log': [...metadata['metadata-log'], { 'metadata-file': store.uri(current.metadataKey), 'timestamp-ms': metadata['last-updated-ms'] }].slice(-20),
  };
  const location = metadataHome(current.metadataKey);
  const logged = new Set(next['metadata-log'].map((e) => store.keyOf(e['metadata-file'])));
  const loggedVersions = new Set([...logged].map(metadataVersion));
  for await (const key of store.list(`${location}/metadata/`)) {
    // A version's published copy goes with it, once the version has left the log: a reader that
    // read an older version-hint.text a moment ago still finds the copy it names.
    const version = metadataVersion(key);
    if (version !== undefined && version <= current.version && !logged.has(key) && !loggedVersions.has(version)) unreferenced.add(key);
  }
  const written: string[] = [];
  const version = await putMetadata(store, location, current.version + 1, options.tag, next, written);
  return {
    version,
    written,
    schema: undefined,
    stats: stats({}),
    expiredSnapshots: expired.map((s) => s['snapshot-id']),
    unreferenced: [...unreferenced].sort(),
  };
}
