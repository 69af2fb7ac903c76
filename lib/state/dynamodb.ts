import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateItemCommand,
  type UpdateItemCommandInput,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { LeaseLostError, OffsetConflictError } from '../errors.ts';
import type { Fence, PendingCommit, SourceState, StateStore } from './store.ts';

interface Item {
  pk: string;
  version: number;
  position?: SourceState['position'];
  commit_seq?: number;
  pending?: PendingCommit;
  lease_owner?: string;
  lease_expires?: number;
  last_commit_at?: number;
  error?: SourceState['error'];
  updated_at?: number;
}

const pk = (sourceId: string) => ({ pk: { S: `source#${sourceId}` } });

function toState(sourceId: string, item: Item): SourceState {
  return {
    sourceId,
    version: item.version ?? 0,
    position: item.position,
    commitSeq: item.commit_seq ?? 0,
    pending: item.pending,
    lease: item.lease_owner ? { owner: item.lease_owner, expiresAt: item.lease_expires ?? 0 } : undefined,
    lastCommitAt: item.last_commit_at,
    error: item.error,
    updatedAt: item.updated_at,
  };
}

/** DynamoDB adapter: one item per source, every write conditional. It only maps; the protocol lives in lib/pipeline. */
export class DynamoDbStateStore implements StateStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  async get(sourceId: string): Promise<SourceState | undefined> {
    const { Item } = await this.client.send(new GetItemCommand({ TableName: this.table, Key: pk(sourceId), ConsistentRead: true }));
    return Item ? toState(sourceId, unmarshall(Item) as Item) : undefined;
  }

  acquireLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<SourceState> {
    return this.update(
      sourceId,
      {
        UpdateExpression: 'SET #v = if_not_exists(#v, :zero) + :one, #owner = :owner, #expires = :expires, #updated = :now',
        ConditionExpression: 'attribute_not_exists(#owner) OR #expires < :now OR #owner = :owner',
        ExpressionAttributeNames: { '#v': 'version', '#owner': 'lease_owner', '#expires': 'lease_expires', '#updated': 'updated_at' },
        ExpressionAttributeValues: marshall({ ':zero': 0, ':one': 1, ':owner': owner, ':expires': expiresAt, ':now': now }),
      },
      (old) => new LeaseLostError(`source ${sourceId} is leased by ${old?.lease_owner} until ${new Date(old?.lease_expires ?? 0).toISOString()}`),
    );
  }

  commit(fence: Fence, change: { position: SourceState['position']; pending?: PendingCommit }): Promise<SourceState> {
    const { pending } = change;
    return this.fenced(fence, {
      set: ['#position = :position', ...(pending ? ['#pending = :pending', '#seq = :seq', '#last = :now'] : [])],
      remove: ['#error'],
      condition: 'attribute_not_exists(#pending)',
      names: { '#position': 'position', '#pending': 'pending', '#error': 'error', ...(pending ? { '#seq': 'commit_seq', '#last': 'last_commit_at' } : {}) },
      values: { ':position': change.position, ...(pending ? { ':pending': pending, ':seq': pending.commitSeq } : {}) },
    });
  }

  clearPending(fence: Fence): Promise<SourceState> {
    return this.fenced(fence, { set: [], remove: ['#pending'], names: { '#pending': 'pending' }, values: {} });
  }

  async recordError(sourceId: string, error: { code: string; message: string }, now: number): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: pk(sourceId),
        UpdateExpression: 'SET #error = :error, #v = if_not_exists(#v, :zero) + :one, #updated = :now',
        ExpressionAttributeNames: { '#error': 'error', '#v': 'version', '#updated': 'updated_at' },
        ExpressionAttributeValues: marshall({ ':error': { ...error, at: now }, ':zero': 0, ':one': 1, ':now': now }),
      }),
    );
  }

  async releaseLease(sourceId: string, owner: string): Promise<void> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: pk(sourceId),
          UpdateExpression: 'REMOVE #owner, #expires',
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: { '#owner': 'lease_owner', '#expires': 'lease_expires' },
          ExpressionAttributeValues: marshall({ ':owner': owner }),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /** A write allowed only to the live lease holder that saw the current version. */
  private fenced(
    fence: Fence,
    write: { set: string[]; remove: string[]; condition?: string; names: Record<string, string>; values: Record<string, unknown> },
  ): Promise<SourceState> {
    const set = ['#v = #v + :one', '#updated = :now', ...write.set].join(', ');
    return this.update(
      fence.sourceId,
      {
        UpdateExpression: `SET ${set}${write.remove.length ? ` REMOVE ${write.remove.join(', ')}` : ''}`,
        ConditionExpression: ['#v = :expect', '#owner = :owner', '#expires > :now', ...(write.condition ? [write.condition] : [])].join(' AND '),
        ExpressionAttributeNames: { ...write.names, '#v': 'version', '#owner': 'lease_owner', '#expires': 'lease_expires', '#updated': 'updated_at' },
        ExpressionAttributeValues: marshall(
          { ...write.values, ':expect': fence.expectVersion, ':owner': fence.owner, ':now': fence.now, ':one': 1 },
          { removeUndefinedValues: true },
        ),
      },
      (old) => {
        if (old?.lease_owner !== fence.owner || (old.lease_expires ?? 0) <= fence.now) {
          return new LeaseLostError(`lease on source ${fence.sourceId} was lost (now held by ${old?.lease_owner ?? 'nobody'}); this run must not commit`);
        }
        return new OffsetConflictError(
          `state of source ${fence.sourceId} changed under this run (expected version ${fence.expectVersion}, found ${old.version}${old.pending ? ' with a pending commit' : ''})`,
        );
      },
    );
  }

  private async update(
    sourceId: string,
    input: Omit<UpdateItemCommandInput, 'TableName' | 'Key'>,
    conflict: (old: Item | undefined) => Error,
  ): Promise<SourceState> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: pk(sourceId),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...input,
        }),
      );
      return toState(sourceId, unmarshall(Attributes ?? {}) as Item);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw conflict(error.Item ? (unmarshall(error.Item) as Item) : undefined);
      }
      throw error;
    }
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
