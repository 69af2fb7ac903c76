import { AssertionError } from '../../errors.ts';
import type { Column } from '../../format/types.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { type ManifestEntry, readAvroFile } from '../files/avro.ts';
import { currentSchema, PROPERTY, type Snapshot, type TableMetadata, type TableVersion } from '../files/metadata.ts';
import { Workspace } from '../files/parquet.ts';
import { DEFAULT_ROWS_PER_FILE, metadataHome, metadataVersion, TAG } from './keys.ts';
import { liveEntries, loadLive, readManifestList } from './live.ts';
import { type IcebergDeps, type Staged, type StagedExpiry, type StageOptions, stats, type TableSpec } from './types.ts';
import { type Prepared, putMetadata, SnapshotWriter, writeBuckets, writeRanges } from './writer.ts';

/* Compaction and snapshot expiry. */

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
