import { DeleteItemCommand, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { TableRef } from '../core/table-ref.ts';
import { tablePath } from '../sink/s3/keys.ts';
import { acquire, fencedUpdate, type Item, release, renew } from './dynamo-item.ts';

/**
 * The buckets of a rewrite in progress (lib/iceberg/rewrite.ts): one item per bucket, leased by
 * whichever invocation writes it (as snapshot chunks are), and marked done in the same write that
 * records the data files it staged. Items are named by the rewrite's tag, so a later rewrite of
 * the table never sees an earlier one's buckets.
 */
export interface BucketState {
  readonly n: number;
  readonly version: number;
  /** The staged files (lib/iceberg/table.ts `BucketFiles`, as JSON); present once the bucket is done. */
  readonly files?: string;
  readonly lease?: { readonly owner: string; readonly expiresAt: number };
}

/** Port for the bucket items; adapters map failed conditions to LeaseLostError. */
export interface RewriteBuckets {
  get(sourceId: string, table: TableRef, tag: string, n: number): Promise<BucketState | undefined>;
  /** Takes bucket `n` if it is not done and its lease is free, expired or `owner`'s; LeaseLostError otherwise. */
  claim(sourceId: string, table: TableRef, tag: string, n: number, owner: string, expiresAt: number, now: number): Promise<BucketState>;
  renew(sourceId: string, table: TableRef, tag: string, n: number, owner: string, expiresAt: number, now: number): Promise<void>;
  /** Marks the bucket done with its files, only while `bucket` (as claimed) is still this owner's. */
  record(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string, files: string, now: number): Promise<void>;
  release(sourceId: string, table: TableRef, tag: string, n: number, owner: string): Promise<void>;
  /** Deletes the items of a committed rewrite. */
  remove(sourceId: string, table: TableRef, tag: string, buckets: number): Promise<void>;
}

const key = (sourceId: string, table: TableRef, tag: string, n: number) =>
  `iceberg#${sourceId}#${tablePath(table)}#rewrite#${tag}#${String(n).padStart(4, '0')}`;
const what = (table: TableRef, n: number) => `bucket ${n} of the Iceberg rewrite of ${tablePath(table)}`;

function toBucket(n: number, item: Item): BucketState {
  return {
    n,
    version: item.version ?? 0,
    files: item.files as string | undefined,
    lease: item.owner ? { owner: item.owner, expiresAt: item.expires ?? 0 } : undefined,
  };
}

/** DynamoDB adapter: items `iceberg#<source>#<db-seg>/<table-seg>#rewrite#<tag>#<n>` in the state table. */
export class DynamoDbRewriteBuckets implements RewriteBuckets {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async get(sourceId: string, table: TableRef, tag: string, n: number): Promise<BucketState | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: { pk: { S: key(sourceId, table, tag, n) } }, ConsistentRead: true }),
    );
    return Item ? toBucket(n, unmarshall(Item) as Item) : undefined;
  }

  async claim(sourceId: string, table: TableRef, tag: string, n: number, owner: string, expiresAt: number, now: number): Promise<BucketState> {
    const item = await acquire(
      this.client,
      this.tableName,
      key(sourceId, table, tag, n),
      what(table, n),
      owner,
      expiresAt,
      now,
      'attribute_not_exists(#files)',
      {
        '#files': 'files',
      },
    );
    return toBucket(n, item);
  }

  renew(sourceId: string, table: TableRef, tag: string, n: number, owner: string, expiresAt: number, now: number): Promise<void> {
    return renew(this.client, this.tableName, key(sourceId, table, tag, n), what(table, n), owner, expiresAt, now);
  }

  async record(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string, files: string, now: number): Promise<void> {
    await fencedUpdate(
      this.client,
      this.tableName,
      key(sourceId, table, tag, bucket.n),
      what(table, bucket.n),
      { sourceId, owner, expectVersion: bucket.version, now },
      { set: ['#files = :files'], remove: [], condition: 'attribute_not_exists(#files)', names: { '#files': 'files' }, values: { ':files': files } },
    );
  }

  release(sourceId: string, table: TableRef, tag: string, n: number, owner: string): Promise<void> {
    return release(this.client, this.tableName, key(sourceId, table, tag, n), owner);
  }

  async remove(sourceId: string, table: TableRef, tag: string, buckets: number): Promise<void> {
    for (let n = 0; n < buckets; n++)
      await this.client.send(new DeleteItemCommand({ TableName: this.tableName, Key: { pk: { S: key(sourceId, table, tag, n) } } }));
  }
}
