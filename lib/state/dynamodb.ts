import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateItemCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { acquire, fencedUpdate, type Item, release, renew } from './dynamo-item.ts';
import type { Fence, PendingCommit, PositionOverwrite, Reposition, Resync, SourceChange, SourceState, StateStore } from './store.ts';

const key = (sourceId: string) => `source#${sourceId}`;

function toState(sourceId: string, item: Item): SourceState {
  return {
    sourceId,
    version: item.version ?? 0,
    position: item.position as SourceState['position'],
    history: item.history as SourceState['history'],
    epoch: (item.epoch as number | undefined) ?? 0,
    ...(item.resync ? { resync: item.resync as Resync } : {}),
    ...(item.last_reposition ? { lastReposition: item.last_reposition as Reposition } : {}),
    commitSeq: (item.commit_seq as number | undefined) ?? 0,
    pending: item.pending as PendingCommit | undefined,
    catalog: item.catalog as number | undefined,
    lease: item.owner ? { owner: item.owner, expiresAt: item.expires ?? 0 } : undefined,
    lastCommitAt: item.last_commit_at as number | undefined,
    positionAt: item.position_at as number | undefined,
    error: item.error as SourceState['error'],
    updatedAt: item.updated_at as number | undefined,
  };
}

/** DynamoDB adapter: one item per source, every write conditional. It only maps; the protocol lives in lib/commit. */
export class DynamoDbStateStore implements StateStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  async get(sourceId: string): Promise<SourceState | undefined> {
    const { Item } = await this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: key(sourceId) } }, ConsistentRead: true }));
    return Item ? toState(sourceId, unmarshall(Item) as Item) : undefined;
  }

  async acquireLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<SourceState> {
    return toState(sourceId, await acquire(this.client, this.table, key(sourceId), `source ${sourceId}`, owner, expiresAt, now));
  }

  async commit(fence: Fence, change: SourceChange): Promise<SourceState> {
    const { pending, catalog, history } = change;
    const item = await fencedUpdate(this.client, this.table, key(fence.sourceId), `source ${fence.sourceId}`, fence, {
      set: [
        '#position = :position',
        '#posat = :now',
        ...(history ? ['#history = :history'] : []),
        ...(pending ? ['#pending = :pending', '#seq = if_not_exists(#seq, :zero) + :one', '#last = :now'] : []),
        ...(catalog !== undefined ? ['#catalog = :catalog'] : []),
      ],
      remove: ['#error', ...(history ? [] : ['#history']), ...(change.resynced ? ['#resync'] : [])],
      condition: 'attribute_not_exists(#pending)',
      names: {
        ...(change.resynced ? { '#resync': 'resync' } : {}),
        '#position': 'position',
        '#posat': 'position_at',
        '#history': 'history',
        '#pending': 'pending',
        '#error': 'error',
        ...(pending ? { '#seq': 'commit_seq', '#last': 'last_commit_at' } : {}),
        ...(catalog !== undefined ? { '#catalog': 'catalog' } : {}),
      },
      values: {
        ':position': change.position,
        ...(history ? { ':history': history } : {}),
        ...(pending ? { ':pending': pending, ':zero': 0 } : {}),
        ...(catalog !== undefined ? { ':catalog': catalog } : {}),
      },
    });
    return toState(fence.sourceId, item);
  }

  async overwrite(fence: Fence, change: PositionOverwrite): Promise<SourceState> {
    const { history, resync, reposition } = change;
    const item = await fencedUpdate(this.client, this.table, key(fence.sourceId), `source ${fence.sourceId}`, fence, {
      set: [
        '#position = :position',
        '#posat = :now',
        '#seq = :seq',
        '#epoch = :epoch',
        ...(history ? ['#history = :history'] : []),
        ...(resync ? ['#resync = :resync'] : []),
        ...(reposition ? ['#reposition = :reposition'] : []),
      ],
      remove: ['#error', ...(history ? [] : ['#history']), ...(resync ? [] : ['#resync'])],
      condition: 'attribute_not_exists(#pending)',
      names: {
        '#position': 'position',
        '#posat': 'position_at',
        '#history': 'history',
        '#seq': 'commit_seq',
        '#epoch': 'epoch',
        '#resync': 'resync',
        '#error': 'error',
        '#pending': 'pending',
        ...(reposition ? { '#reposition': 'last_reposition' } : {}),
      },
      values: {
        ':position': change.position,
        ':seq': change.commitSeq,
        ':epoch': change.epoch,
        ...(history ? { ':history': history } : {}),
        ...(resync ? { ':resync': resync } : {}),
        ...(reposition ? { ':reposition': reposition } : {}),
      },
    });
    return toState(fence.sourceId, item);
  }

  async clearPending(fence: Fence): Promise<SourceState> {
    const item = await fencedUpdate(this.client, this.table, key(fence.sourceId), `source ${fence.sourceId}`, fence, {
      set: [],
      remove: ['#pending'],
      names: { '#pending': 'pending' },
      values: {},
    });
    return toState(fence.sourceId, item);
  }

  async recordError(sourceId: string, error: { code: string; message: string }, now: number): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: key(sourceId) } },
        UpdateExpression: 'SET #error = :error, #v = if_not_exists(#v, :zero) + :one, #updated = :now',
        ExpressionAttributeNames: { '#error': 'error', '#v': 'version', '#updated': 'updated_at' },
        ExpressionAttributeValues: marshall({ ':error': { ...error, at: now }, ':zero': 0, ':one': 1, ':now': now }),
      }),
    );
  }

  renewLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<void> {
    return renew(this.client, this.table, key(sourceId), `source ${sourceId}`, owner, expiresAt, now);
  }

  releaseLease(sourceId: string, owner: string): Promise<void> {
    return release(this.client, this.table, key(sourceId), owner);
  }
}

/** Creates the state table (on-demand) if it does not exist. For local stacks; serverless.yml creates it in AWS. */
export async function ensureStateTable(client: DynamoDBClient, table: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: table }));
    return;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (error) {
    // Another `init` (or a test running in parallel) created it first: fine, wait until it is ACTIVE.
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: table });
}
