import { ConditionalCheckFailedException, type DynamoDBClient, UpdateItemCommand, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { LeaseLostError, OffsetConflictError } from '../errors.ts';
import type { Fence } from './store.ts';

export type Item = Record<string, unknown> & { version?: number; owner?: string; expires?: number; pending?: unknown };

/** One conditional UpdateItem returning the new item; a failed condition becomes `conflict(old item)`. */
async function updateItem(
  client: DynamoDBClient,
  table: string,
  pk: string,
  input: Omit<UpdateItemCommandInput, 'TableName' | 'Key'>,
  conflict: (old: Item | undefined) => Error,
): Promise<Item> {
  try {
    const { Attributes } = await client.send(
      new UpdateItemCommand({ TableName: table, Key: { pk: { S: pk } }, ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD', ...input }),
    );
    return unmarshall(Attributes ?? {}) as Item;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw conflict(error.Item ? (unmarshall(error.Item) as Item) : undefined);
    throw error;
  }
}

export interface FencedWrite {
  set: string[];
  remove: string[];
  condition?: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/**
 * A write allowed only to the live lease holder that saw the current version (attributes
 * `version`, `owner`, `expires`); it bumps the version. Conflicts map to LeaseLostError or
 * OffsetConflictError.
 */
export function fencedUpdate(client: DynamoDBClient, table: string, pk: string, what: string, fence: Fence, write: FencedWrite): Promise<Item> {
  const set = ['#v = #v + :one', '#updated = :now', ...write.set].join(', ');
  return updateItem(
    client,
    table,
    pk,
    {
      UpdateExpression: `SET ${set}${write.remove.length ? ` REMOVE ${write.remove.join(', ')}` : ''}`,
      ConditionExpression: ['#v = :expect', '#owner = :owner', '#expires > :now', ...(write.condition ? [write.condition] : [])].join(' AND '),
      ExpressionAttributeNames: { ...write.names, '#v': 'version', '#owner': 'owner', '#expires': 'expires', '#updated': 'updated_at' },
      ExpressionAttributeValues: marshall(
        { ...write.values, ':expect': fence.expectVersion, ':owner': fence.owner, ':now': fence.now, ':one': 1 },
        { removeUndefinedValues: true },
      ),
    },
    (old) => {
      if (old?.owner !== fence.owner || (old.expires ?? 0) <= fence.now) {
        return new LeaseLostError(`lease on ${what} was lost (now held by ${old?.owner ?? 'nobody'}); this run must not commit`);
      }
      return new OffsetConflictError(
        `${what} changed under this run (expected version ${fence.expectVersion}, found ${old.version}${old.pending ? ' with a pending commit' : ''})`,
      );
    },
  );
}

/** Takes a lease on an item if it is free, expired or already ours; bumps the version so older holders are fenced. */
export function acquire(
  client: DynamoDBClient,
  table: string,
  pk: string,
  what: string,
  owner: string,
  expiresAt: number,
  now: number,
  extraCondition?: string,
  extraNames: Record<string, string> = {},
  extraValues: Record<string, unknown> = {},
): Promise<Item> {
  return updateItem(
    client,
    table,
    pk,
    {
      UpdateExpression: 'SET #v = if_not_exists(#v, :zero) + :one, #owner = :owner, #expires = :expires, #updated = :now',
      ConditionExpression: `(attribute_not_exists(#owner) OR #expires < :now OR #owner = :owner)${extraCondition ? ` AND ${extraCondition}` : ''}`,
      ExpressionAttributeNames: { '#v': 'version', '#owner': 'owner', '#expires': 'expires', '#updated': 'updated_at', ...extraNames },
      ExpressionAttributeValues: marshall({ ':zero': 0, ':one': 1, ':owner': owner, ':expires': expiresAt, ':now': now, ...extraValues }),
    },
    (old) => new LeaseLostError(`${what} is leased by ${old?.owner} until ${new Date(old?.expires ?? 0).toISOString()}`),
  );
}

/** Extends a lease its owner still holds, without bumping the version (the holder's fence stays valid). */
export async function renew(client: DynamoDBClient, table: string, pk: string, what: string, owner: string, expiresAt: number, now: number): Promise<void> {
  await updateItem(
    client,
    table,
    pk,
    {
      UpdateExpression: 'SET #expires = :expires',
      ConditionExpression: '#owner = :owner AND #expires > :now',
      ExpressionAttributeNames: { '#owner': 'owner', '#expires': 'expires' },
      ExpressionAttributeValues: marshall({ ':owner': owner, ':expires': expiresAt, ':now': now }),
    },
    (old) => new LeaseLostError(`lease on ${what} was lost (now held by ${old?.owner ?? 'nobody'})`),
  );
}

export async function release(client: DynamoDBClient, table: string, pk: string, owner: string): Promise<void> {
  await updateItem(
    client,
    table,
    pk,
    {
      UpdateExpression: 'REMOVE #owner, #expires',
      ConditionExpression: '#owner = :owner',
      ExpressionAttributeNames: { '#owner': 'owner', '#expires': 'expires' },
      ExpressionAttributeValues: marshall({ ':owner': owner }),
    },
    () => new LeaseLostError(`${pk} is no longer leased by ${owner}`),
  ).catch(() => undefined);
}
