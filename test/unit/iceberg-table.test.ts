import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import { type ManifestEntry, type ManifestFile, readAvroFile } from '../../lib/iceberg/files/avro.ts';
import type { TableMetadata } from '../../lib/iceberg/files/metadata.ts';
import {
  type DeleteMode,
  deleteUnreferenced,
  expiredSnapshots,
  publish,
  stageChanges,
  stageCompaction,
  stageExpiry,
  stageTruncate,
  type TableSpec,
  type TableVersion,
} from '../../lib/iceberg/table/table.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';
import { readWithDuckDb, readWithIcebird, storeFetch } from '../support/iceberg.ts';

const dir = mkdtempSync(join(tmpdir(), 'iceberg-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const columns: Column[] = [
  { name: 'id', kind: 'int', sqlType: 'int' },
  { name: 'name', kind: 'string', sqlType: 'varchar' },
];
const keyed: TableSpec = { location: 'p/iceberg/shop/items', columns, key: ['id'] };
const row = (id: number, name: string) => JSON.stringify({ id, name });
// The suite runs in the default delete mode, and once more with SLUICE_ICEBERG_DELETES=equality.
const deletes = (process.env.SLUICE_ICEBERG_DELETES ?? 'position') as DeleteMode;
const byId = (rows: Record<string, unknown>[]) => [...rows].sort((a, b) => Number(a.id) - Number(b.id));

async function duck(store: ReturnType<typeof memoryObjectStore>, version: TableVersion) {
  return byId(await readWithDuckDb(store, version.metadata, mkdtempSync(join(dir, 'r-'))));
}

describe('Iceberg staging (in-memory store)', () => {
  it('turns upserts and deletes into data and equality-delete files that readers apply', async () => {
    const store = memoryObjectStore('bucket');
    const v1 = await stageChanges(
      { store },
      undefined,
      keyed,
      { upserts: [row(1, 'a'), row(2, 'b'), row(3, 'c')], deletes: [] },
      { tag: 'm1', timestampMs: 1000 },
    );
    // Iceberg's own naming (<N:5>-<uuid>), which Trino parses, directly under metadata/ (Trino wants it there).
    expect(v1.version.metadataKey).toMatch(
      /^p\/iceberg\/shop\/items\/metadata\/00001-[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.metadata\.json$/,
    );
    expect(v1.stats).toMatchObject({ rowsWritten: 3, dataFiles: 1, deleteFiles: 0 });
    expect(store.objects.has('p/iceberg/shop/items/metadata/version-hint.text')).toBe(false); // staged, not published
    await publish(store, v1.version);
    const v2 = await stageChanges(
      { store },
      v1.version,
      keyed,
      { upserts: [row(2, 'B'), row(4, 'd')], deletes: ['{"id":3}'] },
      { tag: 'm2', timestampMs: 2000, deletes },
    );
    await publish(store, v2.version);
    const expected = [
      { id: 1, name: 'a' },
      { id: 2, name: 'B' },
      { id: 4, name: 'd' },
    ];
    expect(byId(await readWithIcebird('s3://bucket/p/iceberg/shop/items', storeFetch(store)))).toEqual(expected);
    expect(await duck(store, v2.version)).toEqual(expected.map((r) => ({ id: String(r.id), name: r.name })));

    const metadata = v2.version.metadata;
    expect(metadata).toMatchObject({ 'format-version': 2, 'last-sequence-number': 2, 'current-schema-id': 0, 'last-column-id': 2 });
    expect(metadata.snapshots.map((s) => [s['sequence-number'], s.summary.operation])).toEqual([
      [1, 'append'],
      [2, 'overwrite'],
    ]);
    expect(metadata['metadata-log'].map((e) => e['metadata-file'])).toEqual([`s3://bucket/${v1.version.metadataKey}`]);
    const list = readAvroFile<ManifestFile>(store.objects.get('p/iceberg/shop/items/metadata/snap-m2.avro') as Uint8Array);
    expect(list.records.map((m) => [m.content, m.sequence_number, m.added_files_count])).toEqual([
      [0, 1, 1],
      [0, 2, 1],
      [1, 2, 1],
    ]);
    const manifest = readAvroFile<ManifestEntry>(store.objects.get('p/iceberg/shop/items/metadata/m2-m-deletes.avro') as Uint8Array);
    expect(manifest.metadata).toMatchObject({ content: 'deletes', 'format-version': '2', 'partition-spec': '[]' });
    // Equality: the 3 changed keys; position: the current rows of the 2 keys that had one (2 and 3).
    const file = deletes === 'equality' ? { content: 2, equality_ids: [1], record_count: 3 } : { content: 1, equality_ids: null, record_count: 2 };
    expect(manifest.records[0]).toMatchObject({ status: 1, sequence_number: null, data_file: file });
    // Readers project manifests by field id: the ids must be in the file's own schema.
    expect(manifest.metadata['avro.schema']).toContain('"field-id":135');
  });

  it('rewrites identical bytes when a stage is redone', async () => {
    const stage = async () => {
      const store = memoryObjectStore('bucket');
      const v1 = await stageChanges(
        { store },
        undefined,
        keyed,
        { upserts: Array.from({ length: 2000 }, (_, i) => row(i, `n${i}`)), deletes: [] },
        { tag: 'a', timestampMs: 5 },
      );
      await stageChanges({ store }, v1.version, keyed, { upserts: [row(7, 'x')], deletes: ['{"id":8}'] }, { tag: 'b', timestampMs: 6, deletes });
      return store.objects;
    };
    const first = await stage();
    const again = await stage();
    expect([...again.keys()]).toEqual([...first.keys()]);
    for (const [key, bytes] of first) expect([key, Buffer.from(again.get(key) as Uint8Array).equals(Buffer.from(bytes))]).toEqual([key, true]);
  });

  it('refuses a change set that names a key twice', async () => {
    const store = memoryObjectStore();
    await expect(stageChanges({ store }, undefined, keyed, { upserts: [row(1, 'a')], deletes: ['{"id":1}'] }, { tag: 'x', timestampMs: 1 })).rejects.toThrow(
      /more than once/,
    );
  });

  it('keeps keyless tables as multisets: a delete removes one equal row, in its bucket only', async () => {
    const store = memoryObjectStore('bucket');
    const spec: TableSpec = { location: 'p/iceberg/shop/log', columns, key: [] };
    const many = Array.from({ length: 300 }, (_, i) => row(i, 'x'));
    const v1 = await stageChanges({ store }, undefined, spec, { upserts: [...many, row(1, 'x'), row(1, 'x')], deletes: [] }, { tag: 'k1', timestampMs: 1 });
    // Lay the table out in 4 buckets, then delete one of the three equal rows and a row that does not exist.
    const compacted = await stageCompaction({ store }, v1.version, { tag: 'k2', timestampMs: 2, rowsPerFile: 80 });
    expect(compacted.stats.dataFiles).toBe(4);
    const v3 = await stageChanges(
      { store },
      compacted.version,
      spec,
      { upserts: [row(1000, 'y')], deletes: [row(1, 'x'), row(5000, 'z')] },
      { tag: 'k3', timestampMs: 3 },
    );
    expect(v3.stats.unmatchedDeletes).toBe(1);
    expect(v3.version.metadata.snapshots.at(-1)?.summary['sluice.removed-files']).toBe('1'); // only the bucket that lost a row
    await publish(store, v3.version);
    const rows = await readWithIcebird('s3://bucket/p/iceberg/shop/log', storeFetch(store));
    expect(rows).toHaveLength(302);
    expect(rows.filter((r) => r.id === 1)).toHaveLength(2);
    expect(rows.filter((r) => r.id === 1000)).toEqual([{ id: 1000, name: 'y' }]);
    expect(await duck(store, v3.version)).toHaveLength(302);
  });

  it('truncates, compacts and expires, listing exactly the files no retained snapshot needs', async () => {
    const store = memoryObjectStore('bucket');
    let version = (await stageChanges({ store }, undefined, keyed, { upserts: [row(1, 'a'), row(2, 'b')], deletes: [] }, { tag: 'e1', timestampMs: 1 }))
      .version;
    version = (await stageChanges({ store }, version, keyed, { upserts: [row(1, 'A')], deletes: [] }, { tag: 'e2', timestampMs: 2, deletes })).version;
    version = (await stageCompaction({ store }, version, { tag: 'e3', timestampMs: 3 })).version;
    expect(version.metadata.snapshots.at(-1)?.summary).toMatchObject({ operation: 'replace', 'total-delete-files': '0', 'total-records': '2' });
    expect(await duck(store, version)).toEqual([
      { id: '1', name: 'A' },
      { id: '2', name: 'b' },
    ]);
    const expiry = await stageExpiry({ store }, version, { retainLast: 1, nowMs: 10, tag: 'e3-x' });
    expect(expiry.expiredSnapshots).toHaveLength(2);
    expect(expiry.unreferenced.filter((k) => k.includes('/data/'))).toEqual([
      'p/iceberg/shop/items/data/e1-data.parquet',
      'p/iceberg/shop/items/data/e2-data.parquet',
      `p/iceberg/shop/items/data/e2-${deletes === 'equality' ? 'eq' : 'pos'}-deletes.parquet`,
    ]);
    await publish(store, expiry.version);
    await deleteUnreferenced(store, expiry);
    expect(await duck(store, expiry.version)).toHaveLength(2);
    const truncated = await stageTruncate({ store }, expiry.version, keyed, { tag: 'e4', timestampMs: 11 });
    expect(truncated.version.metadata.snapshots.at(-1)?.summary).toMatchObject({ operation: 'delete', 'total-records': '0', 'total-data-files': '0' });
    expect(await duck(store, truncated.version)).toEqual([]);
  });
});

describe('Iceberg expiry rule', () => {
  const HOUR = 3_600_000;
  /** Snapshots 1..n committed at the given hours; the last is current. */
  const history = (...hours: number[]) =>
    ({
      'current-snapshot-id': hours.length,
      snapshots: hours.map((h, i) => ({ 'snapshot-id': i + 1, 'sequence-number': i + 1, 'timestamp-ms': h * HOUR })),
    }) as unknown as TableMetadata;
  const expired = (metadata: TableMetadata, rule: { retainLast: number; maxAgeHours?: number; nowHours: number }) =>
    [
      ...expiredSnapshots(metadata, {
        retainLast: rule.retainLast,
        maxAgeMs: rule.maxAgeHours === undefined ? undefined : rule.maxAgeHours * HOUR,
        nowMs: rule.nowHours * HOUR,
      }),
    ].sort();

  it('keeps a snapshot for the retention after the next one replaced it, however old it is itself', () => {
    // Idle for 100 hours, then one merge an hour ago: the snapshot it replaced stays, a query may have planned on it.
    expect(expired(history(0, 1, 101), { retainLast: 1, maxAgeHours: 24, nowHours: 102 })).toEqual([1]);
    expect(expired(history(0, 1, 101), { retainLast: 1, maxAgeHours: 24, nowHours: 126 })).toEqual([1, 2]);
  });

  it('keeps the newest retainLast snapshots and always the current one', () => {
    expect(expired(history(0, 1, 2, 3), { retainLast: 3, maxAgeHours: 1, nowHours: 100 })).toEqual([1]);
    expect(expired(history(0, 1, 2, 3), { retainLast: 0, nowHours: 100 })).toEqual([1, 2, 3]);
    const replaced = { ...history(0, 1, 2), 'current-snapshot-id': 1 } as TableMetadata; // rolled back to snapshot 1
    expect(expired(replaced, { retainLast: 1, nowHours: 100 })).toEqual([2]);
  });
});
