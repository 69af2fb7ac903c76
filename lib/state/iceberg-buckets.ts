import { ConditionalCheckFailedException, DeleteItemCommand, type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { tablePath } from '../core/table-path.ts';
import type { TableRef } from '../core/table-ref.ts';
import { LeaseLostError } from '../errors.ts';
import { acquire, fencedUpdate, type Item, release } from './dynamo-item.ts';

/**
 * The buckets of a rewrite in progress (lib/iceberg/merge/rewrite.ts): one item per bucket, leased by
 * whichever invocation writes it (as snapshot chunks are), and marked done in the same write that
 * names the bucket's record (its files and their statistics, an S3 object: they grow with the
 * table's width, and an item stops at 400 KB). Items are named by the rewrite's tag, so a later
 * rewrite of the table never sees an earlier one's buckets.
 */
export interface BucketState {
  readonly n: number;
  readonly version: number;
  /** The object key of the bucket's record (lib/iceberg/merge/rewrite.ts); present once the bucket is done. */
  readonly record?: string;
  readonly lease?: { readonly owner: string; readonly expiresAt: number };
}

/** Port for the bucket items; adapters map failed conditions to LeaseLostError. */
export interface RewriteBuckets {
  get(sourceId: string, table: TableRef, tag: string, n: number): Promise<BucketState | undefined>;
  /** Takes bucket `n` if it is not done and its lease is free, expired or `owner`'s; LeaseLostError otherwise. */
  claim(sourceId: string, table: TableRef, tag: string, n: number, owner: string, expiresAt: number, now: number): Promise<BucketState>;
  /** Extends the claim `bucket` while it is current (this owner's, unexpired, not taken or done since); LeaseLostError otherwise. */
  renew(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string, expiresAt: number, now: number): Promise<void>;
  /** Marks the bucket done with its record's key, only while `bucket` (as claimed) is still this owner's. */
  record(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string, record: string, now: number): Promise<void>;
  release(sourceId: string, table: TableRef, tag: string, n: number, owner: string): Promise<void>;
  /** Deletes the item of claim `bucket` while it is still current and not done (a claim that re-created the item of a committed rewrite). */
  abandon(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string): Promise<void>;
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
    record: item.record as string | undefined,
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
      'attribute_not_exists(#record)',
      { '#record': 'record' },
    );
    return toBucket(n, item);
  }

  async renew(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string, expiresAt: number, now: number): Promise<void> {
    // Not the shared renew: this one also requires the claim's version, so a claim taken over and
    // given back, or re-created after the rewrite's commit deleted the item, is never current again.
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: key(sourceId, table, tag, bucket.n) } },
          UpdateExpression: 'SET #expires = :expires',
          ConditionExpression: '#owner = :owner AND #expires > :now AND #v = :v AND attribute_not_exists(#record)',
          ExpressionAttributeNames: { '#owner': 'owner', '#expires': 'expires', '#v': 'version', '#record': 'record' },
          ExpressionAttributeValues: marshall({ ':owner': owner, ':expires': expiresAt, ':now': now, ':v': bucket.version }),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new LeaseLostError(`the claim of ${owner} on ${what(table, bucket.n)} is no longer current`);
      throw error;
    }
  }

  async record(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string, record: string, now: number): Promise<void> {
    await fencedUpdate(
      this.client,
      this.tableName,
      key(sourceId, table, tag, bucket.n),
      what(table, bucket.n),
      { sourceId, owner, expectVersion: bucket.version, now },
      { set: ['#record = :record'], remove: [], condition: 'attribute_not_exists(#record)', names: { '#record': 'record' }, values: { ':record': record } },
    );
  }

  async abandon(sourceId: string, table: TableRef, tag: string, bucket: BucketState, owner: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: key(sourceId, table, tag, bucket.n) } },
          ConditionExpression: '#owner = :owner AND #v = :v AND attribute_not_exists(#record)',
          ExpressionAttributeNames: { '#owner': 'owner', '#v': 'version', '#record': 'record' },
          ExpressionAttributeValues: marshall({ ':owner': owner, ':v': bucket.version }),
        }),
      );
    } catch (error) {
      // Someone else's by now: not this claim's to delete.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  release(sourceId: string, table: TableRef, tag: string, n: number, owner: string): Promise<void> {
    return release(this.client, this.tableName, key(sourceId, table, tag, n), owner);
  }

  async remove(sourceId: string, table: TableRef, tag: string, buckets: number): Promise<void> {
    for (let n = 0; n < buckets; n++)
      await this.client.send(new DeleteItemCommand({ TableName: this.tableName, Key: { pk: { S: key(sourceId, table, tag, n) } } }));
  }
}
