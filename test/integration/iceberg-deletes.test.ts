import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BucketAlreadyOwnedByYou, CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import { type ManifestEntry, type ManifestFile, readAvroFile } from '../../lib/iceberg/files/avro.ts';
import { boundLiteral } from '../../lib/iceberg/files/metrics.ts';
import { type DeleteMode, publish, type Staged, stageChanges, stageCompaction, type TableSpec, type TableVersion } from '../../lib/iceberg/table/table.ts';
import { type ObjectStore, s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { readWithDuckDb, readWithIcebird } from '../support/iceberg.ts';

/*
 * Position and equality deletes against the S3 emulator: a table laid out in key ranges, merges in
 * both modes and switching between them, read back by the independent readers (DuckDB over the
 * files the manifests list, applying both kinds of delete by the spec's sequence-number rules, and
 * icebird), and the GETs a position merge makes: only the candidate file, only its key column.
 */

const env = inject('stackEnv');
const endpoint = env.AWS_ENDPOINT_URL_S3 as string;
const bucket = env.SLUICE_BUCKET as string;
const s3 = new S3Client({ forcePathStyle: true });
const work = mkdtempSync(join(tmpdir(), 'iceberg-deletes-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
beforeAll(async () => {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou) && (error as { name?: string }).name !== 'BucketAlreadyExists') throw error;
  }
});

const realFetch = globalThis.fetch;
const emulatorFetch: typeof fetch = (input, init) => {
  const url = new URL(String(input));
  return realFetch(`${endpoint}/${url.hostname.replace(/\.s3\.amazonaws\.com$/, '')}${url.pathname}`, init);
};

/** The store with every read counted by key: whole GETs, ranged GETs and the bytes they returned. */
function countingStore(inner: ObjectStore) {
  const reads = new Map<string, { gets: number; ranges: number; bytes: number }>();
  const count = (key: string, kind: 'gets' | 'ranges', bytes: number) => {
    const entry = reads.get(key) ?? { gets: 0, ranges: 0, bytes: 0 };
    entry[kind]++;
    entry.bytes += bytes;
    reads.set(key, entry);
  };
  const store: ObjectStore = {
    ...inner,
    async get(key) {
      const body = await inner.get(key);
      count(key, 'gets', body?.length ?? 0);
      return body;
    },
    async getFile(key, path) {
      await inner.getFile(key, path);
      count(key, 'gets', Number.NaN);
    },
    async getRange(key, start, end) {
      const body = await inner.getRange(key, start, end);
      count(key, 'ranges', body.length);
      return body;
    },
  };
  return { store, reads };
}

const columns: Column[] = [
  { name: 'id', kind: 'int', sqlType: 'bigint' },
  { name: 'pad', kind: 'string', sqlType: 'text' },
  { name: 'n', kind: 'int', sqlType: 'int' },
];
// Wide and incompressible: the key column is a small part of each file.
const pad = (id: number) => Array.from({ length: 40 }, (_, i) => createHash('sha256').update(`${id}/${i}`).digest('hex')).join('');
const row = (id: number, n: number) => JSON.stringify({ id, pad: pad(id), n });

let tables = 0;
function table() {
  const location = `iceberg-deletes-${process.pid}-${Date.now()}-${tables++}/iceberg/db/t`;
  const plain = s3ObjectStore(s3, bucket);
  const spec: TableSpec = { location, columns, key: ['id'] };
  let n = 0;
  const options = (deletes: DeleteMode) => ({ tag: `m${String(++n).padStart(4, '0')}`, timestampMs: 1_800_000_000_000 + n, deletes });
  const commit = async (staged: Staged) => {
    await publish(plain, staged.version);
    return staged.version;
  };
  /** Rows by id as both readers see them: [id, n]. */
  const read = async (version: TableVersion) => {
    const duck = (await readWithDuckDb(plain, version.metadata, mkdtempSync(join(work, 'r-')))).map((r) => [Number(r.id), Number(r.n)]);
    const icebird = (await readWithIcebird(`s3://${bucket}/${location}`, emulatorFetch)).map((r) => [Number(r.id), Number(r.n)]);
    const sort = (rows: number[][]) => rows.sort((a, b) => (a[0] as number) - (b[0] as number));
    return { duck: sort(duck), icebird: sort(icebird) };
  };
  const entries = async (version: TableVersion) => {
    const snapshot = version.metadata.snapshots.at(-1);
    const list = readAvroFile<ManifestFile>((await plain.get(plain.keyOf(snapshot?.['manifest-list'] as string))) as Uint8Array).records;
    const all: ManifestEntry[] = [];
    for (const m of list) all.push(...readAvroFile<ManifestEntry>((await plain.get(plain.keyOf(m.manifest_path))) as Uint8Array).records);
    return all.filter((e) => e.status !== 2);
  };
  return { location, plain, spec, options, commit, read, entries };
}

const expected = (rows: Map<number, number>) => [...rows].sort((a, b) => a[0] - b[0]);

describe('Iceberg deletes (S3 emulator)', () => {
  it('a position merge reads only the key column of the one range file that can hold the changed keys', async () => {
    const t = table();
    const state = new Map(Array.from({ length: 400 }, (_, i) => [i + 1, 0] as [number, number]));
    let version = await t.commit(
      await stageChanges({ store: t.plain }, undefined, t.spec, { upserts: [...state].map(([id, n]) => row(id, n)), deletes: [] }, t.options('position')),
    );
    version = await t.commit(await stageCompaction({ store: t.plain }, version, { ...t.options('position'), rowsPerFile: 100 }));
    // Four sorted ranges with disjoint key bounds, and statistics for every column (the required key too).
    const ranges = (await t.entries(version)).map((e) => e.data_file);
    expect(ranges.map((f) => f.file_path.replace(/.*\//, ''))).toEqual([
      'm0002-r0000.parquet',
      'm0002-r0001.parquet',
      'm0002-r0002.parquet',
      'm0002-r0003.parquet',
    ]);
    const bound = (map: unknown) => Number(boundLiteral('long', (map as { key: number; value: Uint8Array }[]).find((e) => e.key === 1)?.value as Uint8Array));
    expect(ranges.map((f) => [bound(f.lower_bounds), bound(f.upper_bounds)])).toEqual([
      [1, 100],
      [101, 200],
      [201, 300],
      [301, 400],
    ]);
    for (const f of ranges) {
      expect(f.value_counts).toEqual([1, 2, 3].map((key) => ({ key, value: 100 })));
      expect(f.null_value_counts).toEqual([1, 2, 3].map((key) => ({ key, value: 0 })));
      expect((f.column_sizes as { key: number }[]).map((e) => e.key)).toEqual([1, 2, 3]);
    }

    const { store, reads } = countingStore(t.plain);
    const changes = { upserts: [row(150, 1), row(160, 1), row(1000, 1)], deletes: ['{"id":170}'] };
    const staged = await stageChanges({ store }, version, t.spec, changes, t.options('position'));
    version = await t.commit(staged);
    state.set(150, 1).set(160, 1).set(1000, 1).delete(170);
    const dataReads = [...reads].filter(([key]) => key.includes('/data/'));
    // Only r0001 (ids 101-200) is read, by ranged GETs: its footer and its key column, not the wide `pad`.
    expect(dataReads.map(([key]) => key.replace(/.*\//, ''))).toEqual(['m0002-r0001.parquet']);
    const [, r1] = dataReads[0] as [string, { gets: number; ranges: number; bytes: number }];
    expect(r1.gets).toBe(0);
    expect(r1.bytes).toBeLessThan((ranges[1]?.file_size_in_bytes as number) / 2);
    expect(staged.version.metadata.snapshots.at(-1)?.summary).toMatchObject({
      'added-position-delete-files': '1',
      'added-position-deletes': '3',
      'added-equality-delete-files': '0',
      'total-position-deletes': '3',
    });
    const deleteFile = (await t.entries(version)).find((e) => e.data_file.content === 1)?.data_file;
    expect(deleteFile?.referenced_data_file).toBe(ranges[1]?.file_path);
    expect(await t.read(version)).toEqual({ duck: expected(state), icebird: expected(state) });
  });

  it('switching modes keeps every older delete applying, and counts a row an older delete removed as gone', async () => {
    const t = table();
    const state = new Map(Array.from({ length: 50 }, (_, i) => [i + 1, 0] as [number, number]));
    let version = await t.commit(
      await stageChanges({ store: t.plain }, undefined, t.spec, { upserts: [...state].map(([id, n]) => row(id, n)), deletes: [] }, t.options('position')),
    );
    const merge = async (deletes: DeleteMode, upserts: number[], removed: number[], n: number) => {
      const staged = await stageChanges(
        { store: t.plain },
        version,
        t.spec,
        { upserts: upserts.map((id) => row(id, n)), deletes: removed.map((id) => `{"id":${id}}`) },
        t.options(deletes),
      );
      version = await t.commit(staged);
      for (const id of upserts) state.set(id, n);
      for (const id of removed) state.delete(id);
      expect(await t.read(version)).toEqual({ duck: expected(state), icebird: expected(state) });
      return staged.version.metadata.snapshots.at(-1)?.summary ?? {};
    };
    // Position: 5 and 6 replaced in the first file, 7 deleted.
    expect(await merge('position', [5, 6], [7], 1)).toMatchObject({ 'added-position-deletes': '3' });
    // 7 again: its only row is already deleted by position, so nothing is current and nothing is deleted.
    expect(await merge('position', [7], [], 2)).toMatchObject({ 'added-position-delete-files': '0', 'total-position-deletes': '3' });
    // Equality: 5 replaced again (its row in the position merge's file goes by sequence number).
    expect(await merge('equality', [5, 8], [6], 3)).toMatchObject({ 'added-equality-deletes': '3', 'total-position-deletes': '3' });
    // Position again on 5: the rows of 5 in the first file and the first merge's file are gone already
    // (a position delete, an equality delete newer than the file); only the equality merge's row is current.
    expect(await merge('position', [], [5], 4)).toMatchObject({ 'added-position-deletes': '1', 'total-equality-deletes': '3', 'total-position-deletes': '4' });
    expect(await merge('position', [6, 8, 9], [], 5)).toMatchObject({ 'added-position-deletes': '2' });
    // Compaction reads through the writer's own reader: both kinds applied, no delete file left.
    const compacted = await stageCompaction({ store: t.plain }, version, t.options('position'));
    version = await t.commit(compacted);
    expect(version.metadata.snapshots.at(-1)?.summary).toMatchObject({ 'total-delete-files': '0', 'total-records': String(state.size) });
    expect(await t.read(version)).toEqual({ duck: expected(state), icebird: expected(state) });
  });
});
