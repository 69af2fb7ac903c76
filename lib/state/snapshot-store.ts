import { type DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { BinlogPosition } from '../core/position.ts';
import { acquire, fencedUpdate, type Item, release } from './dynamo-item.ts';
import type { Fence, PendingCommit } from './store.ts';

/** A snapshot request and, once planned, its tables split into chunks. */
export interface SnapshotJob {
  readonly sourceId: string;
  readonly id: string;
  readonly createdAt: number;
  /** `db.table` names asked for; null = every included table. */
  readonly requested: readonly string[] | null;
  readonly status: 'requested' | 'planned' | 'done';
  readonly tables?: readonly PlannedTable[];
  /** The binlog position read before planning (for `initial`, the poller's start). */
  readonly startPosition?: BinlogPosition;
  readonly finishedAt?: number;
}

export interface PlannedTable {
  readonly name: string;
  readonly chunks: number;
  readonly estimatedRows: number;
  readonly key: readonly string[];
}

/** Key values are kept as JSON text: big integers as exact strings, bytes as base64. */
export type KeyValues = readonly unknown[];

export interface ChunkState {
  readonly table: string;
  readonly n: number;
  readonly version: number;
  /** Exclusive lower bound; null = from the start. */
  readonly lo: KeyValues | null;
  /** Inclusive upper bound; null = to the end. */
  readonly hi: KeyValues | null;
  /** Last key committed; paging resumes after it. */
  readonly cursor: KeyValues | null;
  readonly pages: number;
  readonly rows: number;
  readonly done: boolean;
  readonly pending?: PendingCommit;
  readonly lease?: { owner: string; expiresAt: number };
  readonly updatedAt?: number;
}

export function encodeKeyValues(values: KeyValues | null): string | null {
  return values === null ? null : JSON.stringify(values.map((v) => (Buffer.isBuffer(v) ? { $b64: v.toString('base64') } : v)));
}

function decodeKeyValues(text: unknown): KeyValues | null {
  if (typeof text !== 'string') return null;
  return (JSON.parse(text) as unknown[]).map((v) =>
    v && typeof v === 'object' && '$b64' in v ? Buffer.from(String((v as { $b64: string }).$b64), 'base64') : v,
  );
}

const jobKey = (sourceId: string, id: string) => `snapshot#${sourceId}#${id}`;
const latestKey = (sourceId: string) => `snapshots#${sourceId}`;
export const chunkId = (table: string, n: number) => `${table}#${n}`;
const chunkKey = (sourceId: string, id: string, table: string, n: number) => `chunk#${sourceId}#${id}#${chunkId(table, n)}`;

function toChunk(item: Item): ChunkState {
  return {
    table: item.table as string,
    n: item.n as number,
    version: item.version ?? 0,
    lo: decodeKeyValues(item.lo),
    hi: decodeKeyValues(item.hi),
    cursor: decodeKeyValues(item.cursor),
    pages: (item.pages as number) ?? 0,
    rows: (item.rows as number) ?? 0,
    done: item.done === true,
    pending: item.pending as PendingCommit | undefined,
    lease: item.owner ? { owner: item.owner, expiresAt: item.expires ?? 0 } : undefined,
    updatedAt: item.updated_at as number | undefined,
  };
}

/** Snapshot jobs and chunk cursors in the state table; every chunk write is fenced like the poller's. */
export class SnapshotStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  private async getItem(pk: string): Promise<Item | undefined> {
    const { Item } = await this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: pk } }, ConsistentRead: true }));
    return Item ? (unmarshall(Item) as Item) : undefined;
  }

  /** Records a new job and makes it the source's latest; returns false if the id exists. */
  async createJob(job: SnapshotJob): Promise<boolean> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: marshall({ pk: jobKey(job.sourceId, job.id), ...job }, { removeUndefinedValues: true }),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if ((error as { name?: string }).name === 'ConditionalCheckFailedException') return false;
      throw error;
    }
    await this.client.send(new PutItemCommand({ TableName: this.table, Item: marshall({ pk: latestKey(job.sourceId), id: job.id }) }));
    return true;
  }

  async job(sourceId: string, id: string): Promise<SnapshotJob | undefined> {
    const item = await this.getItem(jobKey(sourceId, id));
    if (!item) return undefined;
    const { pk: _pk, ...job } = item;
    return job as unknown as SnapshotJob;
  }

  async latestJob(sourceId: string): Promise<SnapshotJob | undefined> {
    const pointer = await this.getItem(latestKey(sourceId));
    return pointer ? this.job(sourceId, String(pointer.id)) : undefined;
  }

  /** Stores the plan once; a concurrent planner that loses keeps the winner's plan. */
  async markPlanned(sourceId: string, id: string, tables: readonly PlannedTable[]): Promise<SnapshotJob> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: { S: jobKey(sourceId, id) } },
          UpdateExpression: 'SET #status = :planned, #tables = :tables',
          ConditionExpression: '#status = :requested',
          ExpressionAttributeNames: { '#status': 'status', '#tables': 'tables' },
          ExpressionAttributeValues: marshall({ ':planned': 'planned', ':requested': 'requested', ':tables': tables }),
        }),
      );
    } catch (error) {
      if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
    }
    return (await this.job(sourceId, id)) as SnapshotJob;
  }

  async markDone(sourceId: string, id: string, now: number): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: jobKey(sourceId, id) } },
        UpdateExpression: 'SET #status = :done, #finished = :now',
        ExpressionAttributeNames: { '#status': 'status', '#finished': 'finishedAt' },
        ExpressionAttributeValues: marshall({ ':done': 'done', ':now': now }),
      }),
    );
  }

  /** Creates a chunk unless it exists (planning is idempotent). */
  async putChunk(sourceId: string, id: string, chunk: { table: string; n: number; lo: KeyValues | null; hi: KeyValues | null }): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: marshall(
            {
              pk: chunkKey(sourceId, id, chunk.table, chunk.n),
              table: chunk.table,
              n: chunk.n,
              lo: encodeKeyValues(chunk.lo),
              hi: encodeKeyValues(chunk.hi),
              version: 0,
              pages: 0,
              rows: 0,
              done: false,
            },
            { removeUndefinedValues: true },
          ),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
    }
  }

  async chunk(sourceId: string, id: string, table: string, n: number): Promise<ChunkState | undefined> {
    const item = await this.getItem(chunkKey(sourceId, id, table, n));
    return item ? toChunk(item) : undefined;
  }

  /** Takes an unfinished chunk (or a done one with renames pending); throws LeaseLostError if a live worker holds it or nothing is left to do. */
  async claim(sourceId: string, id: string, table: string, n: number, owner: string, expiresAt: number, now: number): Promise<ChunkState> {
    const item = await acquire(
      this.client,
      this.table,
      chunkKey(sourceId, id, table, n),
      `chunk ${chunkId(table, n)}`,
      owner,
      expiresAt,
      now,
      '(#done = :false OR attribute_exists(#pending))',
      { '#done': 'done', '#pending': 'pending' },
      { ':false': false },
    );
    return toChunk(item);
  }

  /** One page's commit: cursor, counters, done flag and pending renames in one fenced write. */
  async commitPage(
    sourceId: string,
    id: string,
    chunk: ChunkState,
    fence: Fence,
    change: { cursor: KeyValues | null; rows: number; done: boolean; pending?: PendingCommit; leaseUntil: number },
  ): Promise<ChunkState> {
    const item = await fencedUpdate(this.client, this.table, chunkKey(sourceId, id, chunk.table, chunk.n), `chunk ${chunkId(chunk.table, chunk.n)}`, fence, {
      set: [
        '#cursor = :cursor',
        '#rows = #rows + :rows',
        '#pages = #pages + :page',
        '#done = :done',
        '#expires = :until',
        ...(change.pending ? ['#pending = :pending'] : []),
      ],
      remove: [],
      condition: 'attribute_not_exists(#pending)',
      names: { '#cursor': 'cursor', '#rows': 'rows', '#pages': 'pages', '#done': 'done', '#pending': 'pending' },
      values: {
        ':until': change.leaseUntil,
        ':cursor': encodeKeyValues(change.cursor),
        ':rows': change.rows,
        ':page': change.pending ? 1 : 0,
        ':done': change.done,
        ...(change.pending ? { ':pending': change.pending } : {}),
      },
    });
    return toChunk(item);
  }

  async clearPending(sourceId: string, id: string, chunk: ChunkState, fence: Fence): Promise<ChunkState> {
    const item = await fencedUpdate(this.client, this.table, chunkKey(sourceId, id, chunk.table, chunk.n), `chunk ${chunkId(chunk.table, chunk.n)}`, fence, {
      set: [],
      remove: ['#pending'],
      names: { '#pending': 'pending' },
      values: {},
    });
    return toChunk(item);
  }

  release(sourceId: string, id: string, table: string, n: number, owner: string): Promise<void> {
    return release(this.client, this.table, chunkKey(sourceId, id, table, n), owner);
  }
}
