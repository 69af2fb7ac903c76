import { ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { decodeKeyValues, encodeKeyValues, type KeyValues } from '../core/key-values.ts';
import type { TableRef } from '../core/table-ref.ts';
import { acquire, fencedUpdate, type Item, release } from './dynamo-item.ts';
import { type ChunkState, chunkId, type PageCommit, type PlannedTable, type SnapshotJob, type SnapshotStore } from './snapshot-store.ts';
import type { Fence, PendingCommit } from './store.ts';

const jobKey = (sourceId: string, id: string) => `snapshot#${sourceId}#${id}`;
const latestKey = (sourceId: string) => `snapshots#${sourceId}`;
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

/**
 * A job item as stored. Jobs written before tables were named by two names (sluice/v1) hold
 * `requested` as `db.table` strings and planned tables as `{ name: "db.table" }`, whose chunks are
 * keyed by that name. They are read the way v1 wrote them (the name split at its first dot, the
 * name itself as the chunk identity), so an unfinished v1 job continues as v1 would have run it
 * — exact for every table without a dot in its database name, which v1 mis-split anyway.
 */
function toJob(item: Item): SnapshotJob {
  const { pk: _pk, ...job } = item;
  const v1Name = (name: string) => {
    const dot = name.indexOf('.');
    return { db: name.slice(0, dot), table: name.slice(dot + 1) };
  };
  const requested = (job.requested as (TableRef | string)[] | null | undefined)?.map((r) => (typeof r === 'string' ? v1Name(r) : r)) ?? null;
  const tables = (job.tables as (PlannedTable | { name: string; chunks: number; estimatedRows: number; key: string[] })[] | undefined)?.map((t) =>
    'name' in t ? { ...v1Name(t.name), id: t.name, chunks: t.chunks, estimatedRows: t.estimatedRows, key: t.key } : t,
  );
  return { ...(job as unknown as SnapshotJob), requested, ...(tables ? { tables } : {}) };
}

/** DynamoDB adapter for snapshot jobs and chunks, in the state table; it only maps (the protocol lives in lib/commit). */
export class DynamoDbSnapshotStore implements SnapshotStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  private async getItem(pk: string): Promise<Item | undefined> {
    const { Item } = await this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: pk } }, ConsistentRead: true }));
    return Item ? (unmarshall(Item) as Item) : undefined;
  }

  async createJob(job: SnapshotJob): Promise<boolean> {
    let created = true;
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: marshall({ pk: jobKey(job.sourceId, job.id), ...job }, { removeUndefinedValues: true }),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      created = false;
    }
    // The pointer is a second write: a run that stopped between the two (a crash, a failed request)
    // left a job that nothing would run nor hold its tables back for. Its redo (the same id) adds it
    // to the active set now — unless it is done — but leaves `id`, the latest job, as it is.
    if (!created && (await this.job(job.sourceId, job.id))?.status === 'done') return false;
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: latestKey(job.sourceId) } },
        UpdateExpression: created ? 'SET #id = :id ADD #active :ids' : 'ADD #active :ids',
        ExpressionAttributeNames: created ? { '#id': 'id', '#active': 'active' } : { '#active': 'active' },
        ExpressionAttributeValues: created ? { ':id': { S: job.id }, ':ids': { SS: [job.id] } } : { ':ids': { SS: [job.id] } },
      }),
    );
    return created;
  }

  async activeJobs(sourceId: string): Promise<SnapshotJob[]> {
    const pointer = await this.getItem(latestKey(sourceId));
    if (!pointer) return [];
    // A pointer written before jobs could run side by side names only the latest.
    const ids = pointer.active instanceof Set ? [...(pointer.active as Set<string>)].sort() : [String(pointer.id)];
    const jobs = await Promise.all(ids.map((id) => this.job(sourceId, id)));
    return jobs.filter((job): job is SnapshotJob => job !== undefined && job.status !== 'done');
  }

  async job(sourceId: string, id: string): Promise<SnapshotJob | undefined> {
    const item = await this.getItem(jobKey(sourceId, id));
    return item ? toJob(item) : undefined;
  }

  async latestJob(sourceId: string): Promise<SnapshotJob | undefined> {
    const pointer = await this.getItem(latestKey(sourceId));
    return pointer ? this.job(sourceId, String(pointer.id)) : undefined;
  }

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
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    return (await this.job(sourceId, id)) as SnapshotJob;
  }

  async markDone(sourceId: string, id: string, now: number): Promise<void> {
    await this.updateJob(sourceId, id, 'SET #status = :done, #finished = :now REMOVE #error', { ':done': 'done', ':now': now });
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: latestKey(sourceId) } },
        UpdateExpression: 'DELETE #active :ids',
        ExpressionAttributeNames: { '#active': 'active' },
        ExpressionAttributeValues: { ':ids': { SS: [id] } },
      }),
    );
  }

  async recordError(sourceId: string, id: string, error: { code: string; message: string }, now: number): Promise<void> {
    await this.updateJob(sourceId, id, 'SET #error = :error', { ':error': { ...error, at: now } });
  }

  private async updateJob(sourceId: string, id: string, expression: string, values: Record<string, unknown>): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: jobKey(sourceId, id) } },
        UpdateExpression: expression,
        ExpressionAttributeNames: Object.fromEntries(
          Object.entries({ '#status': 'status', '#finished': 'finishedAt', '#error': 'error' }).filter(([name]) => expression.includes(name)),
        ),
        ExpressionAttributeValues: marshall(values),
      }),
    );
  }

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
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async chunk(sourceId: string, id: string, table: string, n: number): Promise<ChunkState | undefined> {
    const item = await this.getItem(chunkKey(sourceId, id, table, n));
    return item ? toChunk(item) : undefined;
  }

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

  async commitPage(sourceId: string, id: string, chunk: ChunkState, fence: Fence, change: PageCommit & { pending?: PendingCommit }): Promise<ChunkState> {
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
