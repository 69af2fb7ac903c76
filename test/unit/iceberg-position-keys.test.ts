import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import { stageChanges, stageReplace, type TableSpec, type TableVersion } from '../../lib/iceberg/table/table.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';
import { readWithDuckDb } from '../support/iceberg.ts';

/*
 * Position-delete merges on keys that are not a plain integer: they must find each changed key's
 * current row exactly once, whatever the key's columns look like in the files.
 */

const dir = mkdtempSync(join(tmpdir(), 'sluice-poskeys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const position = (tag: string, timestampMs: number) => ({ tag, timestampMs, deletes: 'position' as const });
const rowsOf = async (store: ReturnType<typeof memoryObjectStore>, version: TableVersion) =>
  (await readWithDuckDb(store, version.metadata, mkdtempSync(join(dir, 'read-')))).map((r) => JSON.stringify(r)).sort();

describe('position deletes on composite and NULL-mapped keys', () => {
  it('a composite key whose low-cardinality part is dictionary-encoded (with a bloom filter) in a wide file', async () => {
    // 40 dictionary-encoded columns of 3,000 values each put their bloom filters before the footer, beyond the 64 KiB tail
    // the key-column fetch starts with; DuckDB probes the tenant column's filter when every changed key shares a tenant.
    const extra: Column[] = Array.from({ length: 40 }, (_, i) => ({ name: `c${i}`, kind: 'string', sqlType: 'varchar' }));
    const columns: Column[] = [{ name: 'tenant', kind: 'int', sqlType: 'int' }, { name: 'id', kind: 'int', sqlType: 'bigint' }, ...extra];
    const spec: TableSpec = { location: 'p/iceberg/shop/wide', columns, key: ['tenant', 'id'] };
    const row = (id: number, v: string) =>
      JSON.stringify({ tenant: id % 5, id, ...Object.fromEntries(extra.map((c, i) => [c.name, `${v}${(id * 7 + i) % 3000}`])) });
    const store = memoryObjectStore('bucket');
    const base = await stageReplace(
      { store },
      undefined,
      spec,
      Array.from({ length: 20_000 }, (_, i) => row(i, 'v')),
      position('w1', 1),
    );
    const merged = await stageChanges({ store }, base.version, spec, { upserts: [row(13, 'new'), row(18, 'new')], deletes: [] }, position('w2', 2));
    expect(merged.version.metadata.snapshots.at(-1)?.summary).toMatchObject({ 'added-position-deletes': '2' });
    const rows = await rowsOf(store, merged.version);
    expect(rows).toHaveLength(20_000);
    expect(rows.filter((r) => r.includes('"new'))).toHaveLength(2);
  });

  it('a key part that maps to NULL (a zero date) is found and replaced, not duplicated', async () => {
    const columns: Column[] = [
      { name: 'id', kind: 'int', sqlType: 'int' },
      { name: 'd', kind: 'date', sqlType: 'date' },
      { name: 'v', kind: 'string', sqlType: 'varchar' },
    ];
    const spec: TableSpec = { location: 'p/iceberg/shop/days', columns, key: ['id', 'd'] };
    const store = memoryObjectStore('bucket');
    const rows = [
      { id: 1, d: '0000-00-00', v: 'zero' },
      { id: 1, d: '2024-02-29', v: 'leap' },
      { id: 2, d: '2024-03-01', v: 'two' },
    ].map((r) => JSON.stringify(r));
    const base = await stageReplace({ store }, undefined, spec, rows, position('d1', 1));
    const upsert = JSON.stringify({ id: 1, d: '0000-00-00', v: 'zero again' });
    const merged = await stageChanges({ store }, base.version, spec, { upserts: [upsert], deletes: [] }, position('d2', 2));
    const read = (await readWithDuckDb(store, merged.version.metadata, mkdtempSync(join(dir, 'read-')))).map((r) => Object.values(r)[2]).sort();
    expect(read).toEqual(['leap', 'two', 'zero again']);
    const gone = await stageChanges({ store }, merged.version, spec, { upserts: [], deletes: [JSON.stringify({ id: 1, d: '0000-00-00' })] }, position('d3', 3));
    expect((await readWithDuckDb(store, gone.version.metadata, mkdtempSync(join(dir, 'read-')))).map((r) => Object.values(r)[2]).sort()).toEqual([
      'leap',
      'two',
    ]);
  });
});
