import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import { deletesInBucketOnly } from '../../lib/iceberg/merge/fenced-store.ts';
import { publish, stageChanges, stageCompaction, stageExpiry, type TableSpec } from '../../lib/iceberg/table/table.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';
import { readWithDuckDb } from '../support/iceberg.ts';

/*
 * A table whose files live where a REST catalog placed it (SLUICE_ICEBERG_REST_LOCATION=catalog):
 * data and delete files, manifests and manifest lists under the absolute location in another
 * bucket, sluice's metadata chain under its own key prefix in the store's bucket, and deletes
 * never sent outside that bucket.
 */

const dir = mkdtempSync(join(tmpdir(), 'iceberg-location-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOME = 'p/iceberg/shop/items';
const PLACED = 's3://abc--table-s3';
const columns: Column[] = [
  { name: 'id', kind: 'int', sqlType: 'int' },
  { name: 'name', kind: 'string', sqlType: 'varchar' },
];
const placed: TableSpec = { location: HOME, files: PLACED, columns, key: ['id'] };
const row = (id: number, name: string) => JSON.stringify({ id, name });

describe('a table at a location a catalog assigned', () => {
  it('maps keys of its own bucket to relative keys and any other s3:// location to itself', () => {
    const store = memoryObjectStore('lake');
    expect(store.uri('a/b')).toBe('s3://lake/a/b');
    expect(store.uri('s3://other/a/b')).toBe('s3://other/a/b');
    expect(store.keyOf('s3://lake/a/b')).toBe('a/b');
    expect(store.keyOf('s3://other/a/b')).toBe('s3://other/a/b');
    expect(() => store.keyOf('gs://other/a')).toThrow(/not an s3:\/\/ location/);
  });

  it('deletes only in its own bucket and hands the rest to the caller', async () => {
    const inner = memoryObjectStore('lake');
    await inner.put('a', 'x');
    await inner.put('s3://other/b', 'y');
    const left: string[] = [];
    const store = deletesInBucketOnly(inner, (keys) => left.push(...keys));
    await store.delete(['a', 's3://other/b']);
    expect([...inner.objects.keys()]).toEqual(['s3://other/b']);
    expect(left).toEqual(['s3://other/b']);
  });

  it('stages data, delete files, manifests and lists under the assigned location, its metadata chain at home; readers and the position lookup read across both', async () => {
    const store = memoryObjectStore('lake');
    const v1 = await stageChanges(
      { store },
      undefined,
      placed,
      { upserts: [row(1, 'a'), row(2, 'b'), row(3, 'c')], deletes: [] },
      { tag: 'm1', timestampMs: 1000 },
    );
    await publish(store, v1.version);
    // Position deletes: the lookup reads the key column of v1's data file from the other bucket.
    const v2 = await stageChanges(
      { store },
      v1.version,
      placed,
      { upserts: [row(2, 'B'), row(4, 'd')], deletes: ['{"id":3}'] },
      { tag: 'm2', timestampMs: 2000, deletes: 'position' },
    );
    await publish(store, v2.version);
    expect(v2.stats).toMatchObject({ deleteFiles: 1 });
    expect(v2.version.metadata.location).toBe(PLACED);
    expect(v2.version.metadataKey.startsWith(`${HOME}/metadata/`)).toBe(true);
    const keys = [...store.objects.keys()];
    const outside = keys.filter((k) => k.startsWith('s3://'));
    expect(outside.length).toBeGreaterThanOrEqual(6);
    for (const key of outside) expect(key).toMatch(/^s3:\/\/abc--table-s3\/(data\/m\d-.*\.parquet|metadata\/(snap-)?m\d.*\.avro)$/);
    for (const key of keys.filter((k) => !k.startsWith('s3://'))) expect(key).toMatch(/^p\/iceberg\/shop\/items\/metadata\/.*\.(json|text)$/);
    expect(v2.version.metadata['metadata-log'].map((e) => e['metadata-file'])).toEqual([`s3://lake/${v1.version.metadataKey}`]);
    const rows = await readWithDuckDb(store, v2.version.metadata, mkdtempSync(join(dir, 'r-')));
    expect(rows.sort((a, b) => Number(a.id) - Number(b.id))).toEqual([
      { id: '1', name: 'a' },
      { id: '2', name: 'B' },
      { id: '4', name: 'd' },
    ]);

    // Compaction and expiry keep both places: files under the assigned location, metadata at home.
    const v3 = await stageCompaction({ store }, v2.version, { tag: 'm3', timestampMs: 3000 });
    expect(v3.written.filter((k) => !k.startsWith(`${PLACED}/`))).toEqual([v3.version.metadataKey]);
    expect(v3.version.metadataKey.startsWith(`${HOME}/metadata/`)).toBe(true);
    const expiry = await stageExpiry({ store }, v3.version, { retainLast: 1, nowMs: 10_000, tag: 'm4' });
    expect(expiry.version.metadataKey.startsWith(`${HOME}/metadata/`)).toBe(true);
    expect(expiry.unreferenced.some((k) => k.startsWith(`${PLACED}/data/m1-`))).toBe(true);
    expect(expiry.unreferenced.every((k) => k.startsWith(`${PLACED}/`) || k.startsWith(`${HOME}/metadata/`))).toBe(true);
  });
});
