import { describe, expect, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import { type ManifestEntry, type ManifestFile, readAvroFile } from '../../lib/iceberg/files/avro.ts';
import { stageChanges, stageCompaction, stageReplace, type TableSpec } from '../../lib/iceberg/table/table.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';

/*
 * What sluice writes against apache/iceberg format/spec.md (format v2) and Java's V2Metadata /
 * DataFile / ManifestFile schemas, field by field: the Avro schemas in the manifests' own headers
 * (readers project by these field ids), the header keys, sequence numbers and equality ids per entry,
 * the table metadata keys, and the snapshot operations Java's writer would give the same commits.
 */

const columns: Column[] = [
  { name: 'id', kind: 'int', sqlType: 'int' },
  { name: 'name', kind: 'string', sqlType: 'varchar' },
];
const keyed: TableSpec = { location: 'p/iceberg/shop/items', columns, key: ['id'] };
const keyless: TableSpec = { location: 'p/iceberg/shop/log', columns, key: [] };
const row = (id: number, name: string) => JSON.stringify({ id, name });

type AvroField = { name: string; type: unknown; 'field-id': number; default?: unknown };

/** `[field-id, name, required|optional, type]` of a record schema, types as the spec writes them. */
function describeRecord(record: { name: string; fields: AvroField[] }): unknown[] {
  const typeOf = (type: unknown): unknown => {
    if (typeof type === 'string') return type;
    const t = type as Record<string, unknown>;
    if (t.type === 'record') return { [t.name as string]: describeRecord(t as never) };
    if (t.type === 'array' && t.logicalType === 'map') {
      const entry = t.items as { name: string; fields: AvroField[] };
      const [key, value] = entry.fields as [AvroField, AvroField];
      return `${entry.name}: map<${key['field-id']}: ${key.type}, ${value['field-id']}: ${value.type}>`;
    }
    if (t.type === 'array') return `list<${t['element-id']}: ${typeof t.items === 'string' ? t.items : JSON.stringify(typeOf(t.items))}>`;
    return JSON.stringify(t);
  };
  return record.fields.map((f) => {
    const union = Array.isArray(f.type) ? (f.type as unknown[]) : undefined;
    if (union) {
      expect(union[0], `${f.name} is nullable with null first`).toBe('null');
      expect(f.default, `${f.name} defaults to null`).toBeNull();
    }
    return [f['field-id'], f.name, union ? 'optional' : 'required', typeOf(union ? union[1] : f.type)];
  });
}

describe('manifests and manifest lists', () => {
  it('carry the v2 schemas, header keys and per-entry values the spec and Java’s V2Metadata give', async () => {
    const store = memoryObjectStore('bucket');
    const v1 = await stageChanges({ store }, undefined, keyed, { upserts: [row(1, 'a'), row(2, 'b')], deletes: [] }, { tag: 'm1', timestampMs: 1000 });
    const v2 = await stageChanges(
      { store },
      v1.version,
      keyed,
      { upserts: [row(2, 'B')], deletes: ['{"id":1}'] },
      { tag: 'm2', timestampMs: 2000, deletes: 'equality' },
    );
    const snapshot = v2.version.metadata.snapshots.at(-1);
    const list = readAvroFile<ManifestFile>(store.objects.get(store.keyOf(snapshot?.['manifest-list'] ?? '')) as Uint8Array);
    expect(list.metadata).toMatchObject({
      'snapshot-id': String(snapshot?.['snapshot-id']),
      'parent-snapshot-id': String(v1.version.metadata['current-snapshot-id']),
      'sequence-number': '2',
      'format-version': '2',
    });
    const listSchema = JSON.parse(list.metadata['avro.schema'] as string);
    expect(listSchema.name).toBe('manifest_file');
    expect(describeRecord(listSchema)).toEqual([
      [500, 'manifest_path', 'required', 'string'],
      [501, 'manifest_length', 'required', 'long'],
      [502, 'partition_spec_id', 'required', 'int'],
      [517, 'content', 'required', 'int'],
      [515, 'sequence_number', 'required', 'long'],
      [516, 'min_sequence_number', 'required', 'long'],
      [503, 'added_snapshot_id', 'required', 'long'],
      [504, 'added_files_count', 'required', 'int'],
      [505, 'existing_files_count', 'required', 'int'],
      [506, 'deleted_files_count', 'required', 'int'],
      [512, 'added_rows_count', 'required', 'long'],
      [513, 'existing_rows_count', 'required', 'long'],
      [514, 'deleted_rows_count', 'required', 'long'],
      [
        507,
        'partitions',
        'optional',
        `list<508: ${JSON.stringify({
          r508: [
            [509, 'contains_null', 'required', 'boolean'],
            [518, 'contains_nan', 'optional', 'boolean'],
            [510, 'lower_bound', 'optional', 'bytes'],
            [511, 'upper_bound', 'optional', 'bytes'],
          ],
        })}>`,
      ],
      [519, 'key_metadata', 'optional', 'bytes'],
    ]);

    const deletes = list.records.find((m) => m.content === 1) as ManifestFile;
    const data = list.records.filter((m) => m.content === 0);
    expect(data.map((m) => [m.sequence_number, m.min_sequence_number, m.added_snapshot_id])).toEqual([
      [1, 1, v1.version.metadata['current-snapshot-id']],
      [2, 2, snapshot?.['snapshot-id']],
    ]);
    const manifest = readAvroFile<ManifestEntry>(store.objects.get(store.keyOf(deletes.manifest_path)) as Uint8Array);
    const schema = v2.version.metadata.schemas.at(-1);
    expect(manifest.metadata).toMatchObject({
      schema: JSON.stringify(schema),
      'schema-id': String(schema?.['schema-id']),
      'partition-spec': '[]',
      'partition-spec-id': '0',
      'format-version': '2',
      content: 'deletes',
    });
    const entrySchema = JSON.parse(manifest.metadata['avro.schema'] as string);
    expect(entrySchema.name).toBe('manifest_entry');
    expect(describeRecord(entrySchema)).toEqual([
      [0, 'status', 'required', 'int'],
      [1, 'snapshot_id', 'optional', 'long'],
      [3, 'sequence_number', 'optional', 'long'],
      [4, 'file_sequence_number', 'optional', 'long'],
      [
        2,
        'data_file',
        'required',
        {
          r2: [
            [134, 'content', 'required', 'int'],
            [100, 'file_path', 'required', 'string'],
            [101, 'file_format', 'required', 'string'],
            [102, 'partition', 'required', { r102: [] }],
            [103, 'record_count', 'required', 'long'],
            [104, 'file_size_in_bytes', 'required', 'long'],
            [108, 'column_sizes', 'optional', 'k117_v118: map<117: int, 118: long>'],
            [109, 'value_counts', 'optional', 'k119_v120: map<119: int, 120: long>'],
            [110, 'null_value_counts', 'optional', 'k121_v122: map<121: int, 122: long>'],
            [137, 'nan_value_counts', 'optional', 'k138_v139: map<138: int, 139: long>'],
            [125, 'lower_bounds', 'optional', 'k126_v127: map<126: int, 127: bytes>'],
            [128, 'upper_bounds', 'optional', 'k129_v130: map<129: int, 130: bytes>'],
            [131, 'key_metadata', 'optional', 'bytes'],
            [132, 'split_offsets', 'optional', 'list<133: long>'],
            [135, 'equality_ids', 'optional', 'list<136: int>'],
            [140, 'sort_order_id', 'optional', 'int'],
            [143, 'referenced_data_file', 'optional', 'string'],
          ],
        },
      ],
    ]);
    // An ADDED entry inherits its sequence numbers (null); equality_ids only on the equality-delete file.
    expect(manifest.records.map((e) => [e.status, e.sequence_number, e.file_sequence_number, e.data_file.content, e.data_file.equality_ids])).toEqual([
      [1, null, null, 2, [1]],
    ]);
    expect(manifest.records[0]?.data_file.sort_order_id).toBeNull();
    const added = data[1] as ManifestFile;
    const dataEntries = readAvroFile<ManifestEntry>(store.objects.get(store.keyOf(added.manifest_path)) as Uint8Array);
    expect(dataEntries.metadata.content).toBe('data');
    expect(dataEntries.records.map((e) => [e.status, e.sequence_number, e.data_file.content, e.data_file.equality_ids, e.data_file.sort_order_id])).toEqual([
      [1, null, 0, null, 0],
    ]);
  });

  it('a position-delete file: content 1, no equality ids, no sort order, the one data file it targets named', async () => {
    const store = memoryObjectStore('bucket');
    const v1 = await stageChanges({ store }, undefined, keyed, { upserts: [row(1, 'a'), row(2, 'b')], deletes: [] }, { tag: 'p1', timestampMs: 1000 });
    const v2 = await stageChanges(
      { store },
      v1.version,
      keyed,
      { upserts: [row(2, 'B')], deletes: ['{"id":1}'] },
      { tag: 'p2', timestampMs: 2000, deletes: 'position' },
    );
    const snapshot = v2.version.metadata.snapshots.at(-1);
    const list = readAvroFile<ManifestFile>(store.objects.get(store.keyOf(snapshot?.['manifest-list'] ?? '')) as Uint8Array);
    const deletes = list.records.find((m) => m.content === 1) as ManifestFile;
    const manifest = readAvroFile<ManifestEntry>(store.objects.get(store.keyOf(deletes.manifest_path)) as Uint8Array);
    const dataFile = `${v1.version.metadata.location}/data/p1-data.parquet`;
    expect(
      manifest.records.map((e) => [
        e.status,
        e.sequence_number,
        e.data_file.content,
        e.data_file.equality_ids,
        e.data_file.sort_order_id,
        e.data_file.referenced_data_file,
      ]),
    ).toEqual([[1, null, 1, null, null, dataFile]]);
    expect(manifest.records[0]?.data_file.record_count).toBe(2); // both old rows: key 1 deleted, key 2 replaced
    expect(snapshot?.summary).toMatchObject({ operation: 'overwrite', 'added-position-delete-files': '1', 'added-position-deletes': '2' });
  });

  it('write EXISTING and DELETED entries with both sequence numbers, as the spec requires', async () => {
    const store = memoryObjectStore('bucket');
    const rows = [row(1, 'a'), row(2, 'b'), row(3, 'c'), row(4, 'd')];
    const v1 = await stageChanges({ store }, undefined, keyless, { upserts: rows, deletes: [] }, { tag: 'k1', timestampMs: 1 });
    // One row per bucket, so that a delete rewrites one file of a manifest and keeps the others.
    const v2 = await stageCompaction({ store }, v1.version, { tag: 'k2', timestampMs: 2, rowsPerFile: 1 });
    const v3 = await stageChanges({ store }, v2.version, keyless, { upserts: [], deletes: [row(1, 'a')] }, { tag: 'k3', timestampMs: 3 });
    const list = readAvroFile<ManifestFile>(store.objects.get(store.keyOf(v3.version.metadata.snapshots.at(-1)?.['manifest-list'] ?? '')) as Uint8Array);
    const entries = list.records.flatMap((m) => readAvroFile<ManifestEntry>(store.objects.get(store.keyOf(m.manifest_path)) as Uint8Array).records);
    for (const entry of entries)
      if (entry.status !== 1)
        expect([entry.status, entry.sequence_number, entry.file_sequence_number]).toEqual([entry.status, expect.any(Number), expect.any(Number)]);
      else expect([entry.sequence_number, entry.file_sequence_number]).toEqual([null, null]);
    expect(entries.filter((e) => e.status === 2)).toHaveLength(1);
    expect(entries.filter((e) => e.status === 0).length).toBeGreaterThan(0);
    // Both carry the compaction's numbers (sequence 2), not the rewrite's.
    for (const entry of entries.filter((e) => e.status !== 1)) expect([entry.sequence_number, entry.file_sequence_number]).toEqual([2, 2]);
  });
});

describe('snapshot operations', () => {
  it('are what Java’s writer would call the same commits: append, overwrite, delete', async () => {
    const store = memoryObjectStore('bucket');
    const ops: string[] = [];
    // A first load through stageReplace only adds data files: an append (it was called overwrite).
    let version = (await stageReplace({ store }, undefined, keyed, [row(1, 'a'), row(2, 'b')], { tag: 'a1', timestampMs: 1 })).version;
    ops.push(version.metadata.snapshots.at(-1)?.summary.operation as string);
    version = (await stageChanges({ store }, version, keyed, { upserts: [row(2, 'B')], deletes: [] }, { tag: 'a2', timestampMs: 2 })).version;
    ops.push(version.metadata.snapshots.at(-1)?.summary.operation as string);
    // Only an equality-delete file added: a delete (it was called overwrite).
    version = (await stageChanges({ store }, version, keyed, { upserts: [], deletes: ['{"id":1}'] }, { tag: 'a3', timestampMs: 3 })).version;
    ops.push(version.metadata.snapshots.at(-1)?.summary.operation as string);
    version = (await stageReplace({ store }, version, keyed, [], { tag: 'a4', timestampMs: 4 })).version;
    ops.push(version.metadata.snapshots.at(-1)?.summary.operation as string);
    expect(ops).toEqual(['append', 'overwrite', 'delete', 'delete']);

    // A keyless delete that empties its bucket removes the file and adds none: a delete.
    const log = (await stageChanges({ store }, undefined, keyless, { upserts: [row(1, 'a')], deletes: [] }, { tag: 'b1', timestampMs: 1 })).version;
    const emptied = (await stageChanges({ store }, log, keyless, { upserts: [], deletes: [row(1, 'a')] }, { tag: 'b2', timestampMs: 2 })).version;
    expect([log, emptied].map((v) => v.metadata.snapshots.at(-1)?.summary.operation)).toEqual(['append', 'delete']);
  });
});

describe('table metadata', () => {
  it('has every key format v2 requires, and main pointing at the current snapshot', async () => {
    const store = memoryObjectStore('bucket');
    const { version } = await stageChanges({ store }, undefined, keyed, { upserts: [row(1, 'a')], deletes: [] }, { tag: 't1', timestampMs: 7 });
    const metadata = version.metadata;
    for (const key of [
      'format-version',
      'table-uuid',
      'location',
      'last-sequence-number',
      'last-updated-ms',
      'last-column-id',
      'schemas',
      'current-schema-id',
      'partition-specs',
      'default-spec-id',
      'last-partition-id',
      'sort-orders',
      'default-sort-order-id',
    ])
      expect(metadata, key).toHaveProperty([key]);
    expect(metadata).toMatchObject({
      'format-version': 2,
      'partition-specs': [{ 'spec-id': 0, fields: [] }],
      'default-spec-id': 0,
      'sort-orders': [{ 'order-id': 0, fields: [] }],
      'default-sort-order-id': 0,
      refs: { main: { 'snapshot-id': metadata['current-snapshot-id'], type: 'branch' } },
      'snapshot-log': [{ 'snapshot-id': metadata['current-snapshot-id'], 'timestamp-ms': 7 }],
    });
    expect(metadata.schemas[0]?.['identifier-field-ids']).toEqual([1]);
    // v3-only fields are absent from a v2 table.
    expect(metadata).not.toHaveProperty(['next-row-id']);
    expect(metadata.snapshots[0]).not.toHaveProperty(['first-row-id']);
  });
});
