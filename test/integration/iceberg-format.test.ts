import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BucketAlreadyOwnedByYou, CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import {
  type DeleteMode,
  loadVersion,
  publish,
  type Staged,
  stageChanges,
  stageCompaction,
  stageTruncate,
  type TableSpec,
  type TableVersion,
} from '../../lib/iceberg/table/table.ts';
import { s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { readWithDuckDb, readWithIcebird } from '../support/iceberg.ts';

/*
 * The Iceberg layer against the S3 emulator: a table written through several commits (inserts,
 * upserts, deletes, a schema change, a truncate, a compaction), read back after each by icebird
 * (an independent Iceberg reader, over HTTP from the emulator) and by DuckDB over the Parquet files
 * the current snapshot lists, with equality deletes applied.
 */

const env = inject('stackEnv');
const endpoint = env.AWS_ENDPOINT_URL_S3 as string;
const bucket = env.SLUICE_BUCKET as string;
const s3 = new S3Client({ forcePathStyle: true });
const store = s3ObjectStore(s3, bucket);
const location = `iceberg-it-${process.pid}-${Date.now()}/iceberg/shop/orders`;
const work = mkdtempSync(join(tmpdir(), 'iceberg-it-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** icebird asks https://<bucket>.s3.amazonaws.com/<key>; the emulator serves it path-style. */
const realFetch = globalThis.fetch;
const emulatorFetch: typeof fetch = (input, init) => {
  const url = new URL(String(input));
  const host = url.hostname.replace(/\.s3\.amazonaws\.com$/, '');
  return realFetch(`${endpoint}/${host}${url.pathname}`, init);
};

const columns: Column[] = [
  { name: 'id', kind: 'int', sqlType: 'bigint unsigned' },
  { name: 'amount', kind: 'decimal', sqlType: 'decimal(38,10)' },
  { name: 'placed', kind: 'datetime', sqlType: 'datetime(6)', fsp: 6 },
  { name: 'paid', kind: 'timestamp', sqlType: 'timestamp(6)', fsp: 6 },
  { name: 'day', kind: 'date', sqlType: 'date' },
  { name: 'took', kind: 'time', sqlType: 'time(6)', fsp: 6 },
  { name: 'blob', kind: 'binary', sqlType: 'blob' },
  { name: 'doc', kind: 'string', sqlType: 'json' },
  { name: 'ratio', kind: 'float', sqlType: 'float' },
  { name: 'small', kind: 'int', sqlType: 'tinyint' },
];
const spec: TableSpec = { location, columns, key: ['id'] };
const MAX = '18446744073709551615';
// Rows as the change log encodes them (docs/FORMAT.md): exact integers unquoted, decimals as strings.
const r1 = `{"id":${MAX},"amount":"-1234567890123456789012345678.0123456789","placed":"2024-02-29 23:59:59.123456","paid":"2024-01-01T00:00:00.000001Z","day":"2024-02-29","took":"-838:59:59.000000","blob":"3q2+7w==","doc":"{\\"a\\": [1, 2.50]}","ratio":1.1,"small":-128}`;
const r2 = `{"id":9007199254740993,"amount":"0.0000000001","placed":"0000-00-00 00:00:00.000000","paid":"0000-00-00 00:00:00","day":"0000-00-00","took":"00:00:00.000001","blob":"","doc":null,"ratio":null,"small":127}`;
const r3 =
  '{"id":3,"amount":"99999999999999999999999999.9999999999","placed":"1000-01-01 00:00:00.000000","paid":"1970-01-01T00:00:01.000000Z","day":"9999-12-31","took":"12:00:00.500000","blob":"AA==","doc":"[]","ratio":-0.5,"small":0}';

const d1 = {
  id: MAX,
  amount: '-1234567890123456789012345678.0123456789',
  placed: '2024-02-29 23:59:59.123456',
  paid: '2024-01-01 00:00:00.000001+00',
  day: '2024-02-29',
  took: '-838:59:59.000000',
  blob: 'DEADBEEF',
  doc: '{"a": [1, 2.50]}',
  ratio: '1.1',
  small: '-128',
};
const d2 = {
  id: '9007199254740993',
  amount: '0.0000000001',
  placed: null,
  paid: null,
  day: null,
  took: '00:00:00.000001',
  blob: '',
  doc: null,
  ratio: null,
  small: '127',
};
const d3 = {
  id: '3',
  amount: '99999999999999999999999999.9999999999',
  placed: '1000-01-01 00:00:00',
  paid: '1970-01-01 00:00:01+00',
  day: '9999-12-31',
  took: '12:00:00.500000',
  blob: '00',
  doc: '[]',
  ratio: '-0.5',
  small: '0',
};

let step = 0;
async function commit(stage: Promise<Staged>): Promise<TableVersion> {
  const staged = await stage;
  // The caller's commit (DynamoDB) stores the location; here we reload it from S3 as a reader would.
  const version = await loadVersion(store, staged.version.metadataKey);
  await publish(store, version);
  return version;
}
const duck = async (version: TableVersion) =>
  (await readWithDuckDb(store, version.metadata, mkdtempSync(join(work, `s${step++}-`)))).sort((a, b) => (BigInt(a.id ?? 0) < BigInt(b.id ?? 0) ? -1 : 1));
const icebird = async () => readWithIcebird(`s3://${bucket}/${location}`, emulatorFetch);
// The default delete mode, and once more with SLUICE_ICEBERG_DELETES=equality.
const deletes = (process.env.SLUICE_ICEBERG_DELETES ?? 'position') as DeleteMode;
const options = (n: number) => ({ tag: `merge-${String(n).padStart(6, '0')}`, timestampMs: 1_800_000_000_000 + n, deletes });

describe('Iceberg tables on S3 (emulator)', () => {
  it('reads back exactly through icebird and DuckDB across inserts, upserts, deletes, schema changes, truncate and compaction', async () => {
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    } catch (error) {
      if (!(error instanceof BucketAlreadyOwnedByYou) && (error as { name?: string }).name !== 'BucketAlreadyExists') throw error;
    }
    // 1. First load.
    let version = await commit(stageChanges({ store }, undefined, spec, { upserts: [r1, r2, r3], deletes: [] }, options(1)));
    expect(await duck(version)).toEqual([d3, d2, d1]);

    // 2. Upsert one row, delete another, insert a new one.
    const r3b = r3.replace('"small":0', '"small":1');
    const r4 = '{"id":4,"amount":"4","placed":null,"paid":null,"day":null,"took":null,"blob":null,"doc":null,"ratio":null,"small":null}';
    version = await commit(stageChanges({ store }, version, spec, { upserts: [r3b, r4], deletes: [`{"id":9007199254740993}`] }, options(2)));
    const d4 = { id: '4', amount: '4.0000000000', placed: null, paid: null, day: null, took: null, blob: null, doc: null, ratio: null, small: null };
    expect(await duck(version)).toEqual([{ ...d3, small: '1' }, d4, d1]);
    // icebird reads decimals as doubles and temporals as Dates (its limits); keys and values still line up.
    const read2 = await icebird();
    expect(read2.map((r) => [Number(r.id), r.small]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [3, 1],
      [4, null],
      [Number(MAX), -128],
    ]);
    const big = read2.find((r) => r.id === Number(MAX)) as Record<string, unknown>;
    expect(big.amount).toBe(Number('-1234567890123456789012345678.0123456789'));
    expect(big.placed).toEqual(new Date('2024-02-29T23:59:59.123Z'));
    expect(big.paid).toEqual(new Date('2024-01-01T00:00:00.000Z'));
    expect(big.ratio).toBe(Math.fround(1.1));
    expect(big.took).toBe('-838:59:59.000000');

    // 3. Schema change: `blob` renamed to `payload`, `doc` dropped, `note` added; tinyint widened to int (same Iceberg type).
    const evolved: TableSpec = {
      location,
      key: ['id'],
      renamed: new Map([['payload', 'blob']]),
      columns: [
        ...columns.filter((c) => c.name !== 'doc' && c.name !== 'blob'),
        { name: 'payload', kind: 'binary', sqlType: 'blob' },
        { name: 'note', kind: 'string', sqlType: 'varchar' },
      ],
    };
    const r5 =
      '{"id":5,"amount":"5.5","placed":"2030-01-01 00:00:00.000000","paid":"2030-01-01T00:00:00.000000Z","day":"2030-01-01","took":"01:02:03.000000","ratio":1,"small":5,"payload":"AQI=","note":"new"}';
    const staged3 = await stageChanges({ store }, version, evolved, { upserts: [r5], deletes: ['{"id":4}'] }, options(3));
    expect(staged3.schema).toMatchObject({ changed: true, added: ['note'], dropped: ['doc'] });
    version = await commit(Promise.resolve(staged3));
    const fieldIds = Object.fromEntries(version.metadata.schemas.at(-1)?.fields.map((f) => [f.name, f.id]) ?? []);
    expect(fieldIds).toMatchObject({ id: 1, payload: 7, note: 11 });
    const { doc: _d1, blob: b1, ...k1 } = d1;
    const { doc: _d3, blob: b3, ...k3 } = d3;
    const d5 = {
      id: '5',
      amount: '5.5000000000',
      placed: '2030-01-01 00:00:00',
      paid: '2030-01-01 00:00:00+00',
      day: '2030-01-01',
      took: '01:02:03.000000',
      ratio: '1.0',
      small: '5',
    };
    expect(await duck(version)).toEqual([
      { ...k3, small: '1', payload: b3, note: null },
      { ...d5, payload: '0102', note: 'new' },
      { ...k1, payload: b1, note: null },
    ]);
    const read3 = await icebird();
    expect(read3.map((r) => [Number(r.id), r.note, Object.keys(r).includes('doc')]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [3, undefined, false],
      [5, 'new', false],
      [Number(MAX), undefined, false],
    ]);
    // The renamed column is found by field id in old files too.
    expect(read3.find((r) => Number(r.id) === 3)?.payload).toBe('\u0000');

    // 4. Compaction: about 2 rows per bucket (2 buckets by key hash), no delete files left, same rows.
    const compacted = await stageCompaction({ store }, version, { ...options(4), rowsPerFile: 2 });
    version = await commit(Promise.resolve(compacted));
    expect(version.metadata.snapshots.at(-1)?.summary).toMatchObject({ operation: 'replace', 'total-delete-files': '0', 'total-records': '3' });
    expect(version.metadata.properties['sluice.bucket-count']).toBe('2');
    expect(await duck(version)).toEqual([
      { ...k3, small: '1', payload: b3, note: null },
      { ...d5, payload: '0102', note: 'new' },
      { ...k1, payload: b1, note: null },
    ]);
    expect((await icebird()).map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual([3, 5, Number(MAX)]);

    // 5. Truncate, then rows again. (icebird cannot read a snapshot with no data files: DuckDB checks the empty table.)
    version = await commit(stageTruncate({ store }, version, evolved, options(5)));
    expect(await duck(version)).toEqual([]);
    expect(version.metadata.snapshots.at(-1)?.summary).toMatchObject({ operation: 'delete', 'total-records': '0' });
    version = await commit(stageChanges({ store }, version, evolved, { upserts: [r5], deletes: [] }, options(6)));
    expect(await duck(version)).toEqual([{ ...d5, payload: '0102', note: 'new' }]);
    expect(await icebird()).toEqual([
      {
        id: 5,
        amount: 5.5,
        placed: new Date('2030-01-01T00:00:00Z'),
        paid: new Date('2030-01-01T00:00:00Z'),
        day: new Date('2030-01-01T00:00:00Z'),
        took: '01:02:03.000000',
        ratio: 1,
        small: 5,
        payload: '\u0001\u0002',
        note: 'new',
      },
    ]);
    expect(version.version).toBe(6);
  });
});
