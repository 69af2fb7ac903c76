import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import { recordKey } from '../../lib/iceberg/merge/rewrite.ts';
import { type BucketFiles, DEFAULT_ROWS_PER_FILE, stageBucket } from '../../lib/iceberg/table/table.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';
import { DynamoDbRewriteBuckets } from '../../lib/state/iceberg-buckets.ts';

/*
 * How big a split first load's bucket item is (lib/state/iceberg-buckets.ts), by the table's
 * width: the bucket's files carry per-column statistics, so they live in an S3 record the item
 * names, and the item stays small however wide the table. DynamoDB refuses items over 400 KB.
 */

const ITEM_LIMIT = 400 * 1024;
const location = 'sluice/iceberg/shop/wide';
const tag = 'm000000000001_3f9c2a7b';
/** Files per bucket at the default SLUICE_ICEBERG_BUCKET_ROWS (4M) and rows per file. */
const FILES = Math.ceil(4_000_000 / DEFAULT_ROWS_PER_FILE);

/** An item's size as DynamoDB counts it: names and values in UTF-8, a number one byte per two significant digits plus one. */
function itemBytes(item: Record<string, string | number>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    bytes += Buffer.byteLength(name);
    bytes += typeof value === 'string' ? Buffer.byteLength(value) : Math.ceil(String(Math.abs(value)).replace(/^0+|\.|0+$/g, '').length / 2) + 1;
  }
  return bytes;
}

/** A done bucket's item at its largest (the lease still on it): the attributes the adapter writes, `extra` its record. */
const item = (extra: Record<string, string>) => ({
  pk: `iceberg#production-db#shop/wide#rewrite#${tag}#0003`,
  version: 3,
  owner: 'a2f1c3de-5b6a-4f1e-9d2c-0b1a2c3d4e5f',
  expires: 1_767_225_600_000,
  updated_at: 1_767_225_570_000,
  ...extra,
});

const kinds: [Column['kind'], string, (row: number, column: number) => unknown][] = [
  ['int', 'int', (r, c) => r * 1000 + c],
  ['string', 'varchar(64)', (r, c) => `text of column ${c} in row ${r}, longer than a bound`],
  ['decimal', 'decimal(12,2)', (r, c) => `${r * 31 + c}.25`],
  ['double', 'double', (r, c) => r / (c + 1)],
  ['datetime', 'datetime(6)', (r) => `2024-05-${String(1 + (r % 28)).padStart(2, '0')} 12:34:56.123456`],
];

/** Each width's bucket, staged once for both tests (a 1,000-column Parquet file takes seconds to write). */
const buckets = new Map<number, Promise<BucketFiles>>();
const bucketOf = (width: number): Promise<BucketFiles> => {
  let bucket = buckets.get(width);
  if (!bucket) {
    bucket = stagedBucket(width);
    buckets.set(width, bucket);
  }
  return bucket;
};

/** A bucket of a `width`-column table as stageBucket states it: one file written, its counts set to a full file's, repeated to a bucket's files. */
async function stagedBucket(width: number): Promise<BucketFiles> {
  const columns: Column[] = [{ name: 'id', kind: 'int', sqlType: 'int' }];
  for (let c = 1; c < width; c++) {
    const [kind, sqlType] = kinds[c % kinds.length] as (typeof kinds)[number];
    columns.push({ name: `c${c}`, kind, sqlType });
  }
  const rows = Array.from({ length: 20 }, (_, r) =>
    JSON.stringify(Object.fromEntries(columns.map((column, c) => [column.name, c ? (kinds[c % kinds.length] as (typeof kinds)[number])[2](r, c) : r]))),
  );
  const staged = await stageBucket({ store: memoryObjectStore('lake') }, undefined, { location, columns, key: ['id'] }, rows, {
    tag: `${tag}-k0003-0a1b2c`,
    timestampMs: 1,
  });
  const [file] = staged.files;
  if (!file) throw new Error('no file staged');
  const full = DEFAULT_ROWS_PER_FILE;
  const scaled = (pairs: [number, number][], by: number) => pairs.map(([id, n]): [number, number] => [id, Math.round(n * by)]);
  const files = Array.from({ length: FILES }, (_, i) => ({
    ...file,
    key: file.key.replace(/r0000/, `r${String(i).padStart(4, '0')}`),
    records: full,
    bytes: Math.round((file.bytes * full) / file.records),
    metrics: {
      ...file.metrics,
      valueCounts: scaled(file.metrics.valueCounts, full / file.records),
      nullValueCounts: file.metrics.nullValueCounts,
      columnSizes: scaled(file.metrics.columnSizes, full / file.records),
    },
  }));
  return { rows: full * FILES, nulled: {}, files };
}

describe('a split first load bucket item, by table width', () => {
  it('stays a few hundred bytes at any width, the files and their statistics in the S3 record it names', async () => {
    const sizes: Record<number, { inline: number; item: number; record: number }> = {};
    for (const width of [10, 100, 1000]) {
      const staged = await bucketOf(width);
      const key = recordKey(location, tag, 3, '0a1b2c');
      const record = JSON.stringify({ key, gone: false, to: 1, staged });
      // Before: the item carried the record itself; now it names its key.
      sizes[width] = {
        inline: itemBytes(item({ files: JSON.stringify({ gone: false, to: 1, staged }) })),
        item: itemBytes(item({ record: key })),
        record: Buffer.byteLength(record),
      };
    }
    const at = (width: number) => sizes[width] as { inline: number; item: number; record: number };
    // The inline record grows with the width and passed the limit before 1,000 columns.
    expect(at(100).inline).toBeGreaterThan(5 * at(10).inline);
    expect(at(1000).inline).toBeGreaterThan(ITEM_LIMIT);
    // The item does not grow at all; the record does, in S3.
    expect(new Set([at(10).item, at(100).item, at(1000).item]).size).toBe(1);
    expect(at(1000).item).toBeLessThan(1024);
    expect(at(1000).record).toBeGreaterThan(at(1000).inline - 1024);
  });

  it('is what the adapter writes: the record call of a 1,000-column bucket sends its key, not its files', async () => {
    const sent: { ExpressionAttributeValues?: Record<string, never> }[] = [];
    const client = {
      send: async (command: { input: (typeof sent)[number] }) => {
        sent.push(command.input);
        return {};
      },
    } as unknown as DynamoDBClient;
    const key = recordKey(location, tag, 3, '0a1b2c');
    await new DynamoDbRewriteBuckets(client, 'state').record('production-db', { db: 'shop', table: 'wide' }, tag, { n: 3, version: 2 }, 'owner', key, 1);
    const values = unmarshall(sent[0]?.ExpressionAttributeValues ?? {}) as Record<string, string | number>;
    expect(Object.values(values)).toContain(key);
    expect(itemBytes(values)).toBeLessThan(1024);
    // The record itself, at that width, would not fit an item.
    const staged = await bucketOf(1000);
    expect(Buffer.byteLength(JSON.stringify({ key, gone: false, to: 1, staged }))).toBeGreaterThan(ITEM_LIMIT);
  });
});
