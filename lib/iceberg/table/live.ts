import { basename, join } from 'node:path';
import { AssertionError, ErrorCode, SluiceError } from '../../errors.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { type DataFileRecord, type ManifestEntry, type ManifestFile, readAvroFile } from '../files/avro.ts';
import { currentSnapshot, type Snapshot, type TableMetadata } from '../files/metadata.ts';
import { col, type Workspace } from '../files/parquet.ts';
import type { IcebergField } from '../files/schema.ts';

import { FILE_PATH, POS, POSITION_DELETE_FIELDS } from './types.ts';

/* Reading the current snapshot: its manifests, live data and delete files, and its rows in a workspace. */

export interface LiveEntry {
  readonly file: DataFileRecord;
  /** Data sequence number (inherited when the manifest left it null). */
  readonly seq: number;
  readonly fileSeq: number;
  readonly snapshotId: number;
  readonly manifest: ManifestFile;
}

export async function readManifestList(store: ObjectStore, snapshot: Snapshot | undefined): Promise<ManifestFile[]> {
  if (!snapshot) return [];
  const body = await store.get(store.keyOf(snapshot['manifest-list']));
  if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `manifest list ${snapshot['manifest-list']} is missing`);
  return readAvroFile<ManifestFile>(body).records;
}

export async function readEntries(store: ObjectStore, manifest: ManifestFile): Promise<LiveEntry[]> {
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

export async function liveEntries(store: ObjectStore, metadata: TableMetadata | undefined) {
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
export async function loadLive(
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
