import {
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { ErrorCode, SluiceError } from '../errors.ts';

/*
 * The sources a stack captures besides its own SLUICE_SOURCE_ID, registered at run
 * time in the state table: one item per source (`fleet#<id>`) and one index item (`fleet`) whose
 * string set `ids` names them, so listing the fleet is one GetItem and BatchGets, never a Scan of a
 * table that also holds every lease, snapshot chunk and merge item. The record and the index change
 * together in one TransactWriteItems, conditioned on the record: an id is in the index exactly when
 * its record exists. The index item holds at most 400 KB: about 5,000 ids of 64 characters.
 */

/** A source registered in the state table. */
export interface SourceRecord {
  /** Same rule as SLUICE_SOURCE_ID: 1-64 letters, digits, "-" or "_". */
  readonly id: string;
  /** This source's own SLUICE_* settings (connection, filters, startup, …): see `sourceConfig`. */
  readonly settings: Readonly<Record<string, string>>;
  readonly paused: boolean;
  /** Captured every N minutes of the schedule (1: every tick). */
  readonly everyMinutes: number;
  /** Whether the stack's Iceberg merge covers it (only where the stack runs the merge). */
  readonly iceberg: boolean;
  readonly addedAt: number;
  readonly updatedAt: number;
}

export const SOURCE_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** The longest schedule a source can have: once a day. */
export const MAX_EVERY_MINUTES = 1440;

const INDEX = 'fleet';
const key = (id: string) => `fleet#${id}`;
/** BatchGetItem's limit of keys per request. */
const BATCH = 100;

/** The record's fields as the item stores them, plus `version`, which every write bumps (remove's fence). */
interface RecordItem {
  pk: string;
  id: string;
  settings: Record<string, string>;
  paused: boolean;
  every_minutes: number;
  iceberg: boolean;
  added_at: number;
  updated_at: number;
  version: number;
}

function toRecord(item: RecordItem): SourceRecord {
  return Object.freeze({
    id: item.id,
    settings: Object.freeze({ ...item.settings }),
    paused: item.paused,
    everyMinutes: item.every_minutes,
    iceberg: item.iceberg,
    addedAt: item.added_at,
    updatedAt: item.updated_at,
  });
}

/**
 * Ids a source cannot have: its output goes under `<prefix><id>/`, beside the stack's own source's
 * folders. These would put it inside them (its change log under the staging lifecycle rule, or where
 * the Iceberg role may delete), or them inside it (`sources remove`'s cleanup would take them).
 */
const RESERVED_IDS = new Set(['tables', 'manifests', 'schema', 'iceberg', 'sources']);

/** Refuses an id or a schedule no source can have, naming it. */
function checkRecord(record: Partial<Pick<SourceRecord, 'id' | 'everyMinutes'>>): void {
  if (record.id !== undefined && !SOURCE_ID.test(record.id))
    throw new SluiceError(ErrorCode.CONFIG_INVALID, `"${record.id}" is not a source id: use 1-64 letters, digits, "-" or "_"`);
  if (record.id !== undefined && (record.id.startsWith('_') || RESERVED_IDS.has(record.id.toLowerCase())))
    throw new SluiceError(
      ErrorCode.CONFIG_INVALID,
      `"${record.id}" is not a source id: its output would share the stack's folders (<prefix>_staging/, tables/, manifests/, schema/, iceberg/); choose another`,
    );
  const every = record.everyMinutes;
  if (every !== undefined && !(Number.isInteger(every) && every >= 1 && every <= MAX_EVERY_MINUTES))
    throw new SluiceError(
      ErrorCode.CONFIG_INVALID,
      `every ${every} minutes is not a schedule: give a whole number of minutes from 1 (every tick) to ${MAX_EVERY_MINUTES} (once a day)`,
    );
}

const notRegistered = (id: string) =>
  new SluiceError(ErrorCode.SOURCE_NOT_FOUND, `source ${id} is not registered in this stack: \`sluice sources list\` shows the ones that are`);

/** The fleet's registry: the adapter only maps records to items; every write is conditional. */
export class SourceRegistry {
  constructor(
    private readonly dynamo: DynamoDBClient,
    private readonly table: string,
  ) {}

  /** Every registered source, sorted by id. */
  async list(): Promise<SourceRecord[]> {
    const { Item } = await this.dynamo.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: INDEX } }, ConsistentRead: true }));
    const ids = [...((Item && (unmarshall(Item).ids as Set<string> | undefined)) ?? [])].sort();
    const records: SourceRecord[] = [];
    for (let i = 0; i < ids.length; i += BATCH) records.push(...(await this.batchGet(ids.slice(i, i + BATCH))));
    return records.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Up to 100 records; the keys DynamoDB leaves unprocessed (throughput, the 16 MB answer) are asked again. */
  private async batchGet(ids: readonly string[]): Promise<SourceRecord[]> {
    const records: SourceRecord[] = [];
    let keys = ids.map((id) => ({ pk: { S: key(id) } }));
    for (let attempt = 0; keys.length; attempt++) {
      if (attempt) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
      const { Responses, UnprocessedKeys } = await this.dynamo.send(
        new BatchGetItemCommand({ RequestItems: { [this.table]: { Keys: keys, ConsistentRead: true } } }),
      );
      for (const item of Responses?.[this.table] ?? []) records.push(toRecord(unmarshall(item) as RecordItem));
      keys = (UnprocessedKeys?.[this.table]?.Keys ?? []) as typeof keys;
    }
    return records;
  }

  async get(id: string): Promise<SourceRecord | undefined> {
    const item = await this.item(id);
    return item && toRecord(item);
  }

  private async item(id: string): Promise<RecordItem | undefined> {
    const { Item } = await this.dynamo.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: key(id) } }, ConsistentRead: true }));
    return Item ? (unmarshall(Item) as RecordItem) : undefined;
  }

  /** Registers a source; refuses an id already registered. */
  async add(record: Omit<SourceRecord, 'addedAt' | 'updatedAt'>, now: number): Promise<SourceRecord> {
    checkRecord(record);
    const item: RecordItem = {
      pk: key(record.id),
      id: record.id,
      settings: { ...record.settings },
      paused: record.paused,
      every_minutes: record.everyMinutes,
      iceberg: record.iceberg,
      added_at: now,
      updated_at: now,
      version: 1,
    };
    try {
      await this.dynamo.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: this.table, Item: marshall(item), ConditionExpression: 'attribute_not_exists(pk)' } },
            {
              Update: {
                TableName: this.table,
                Key: { pk: { S: INDEX } },
                UpdateExpression: 'ADD #ids :id',
                ExpressionAttributeNames: { '#ids': 'ids' },
                ExpressionAttributeValues: { ':id': { SS: [record.id] } },
              },
            },
          ],
        }),
      );
    } catch (error) {
      if (cancelledByCondition(error, 0))
        throw new SluiceError(
          ErrorCode.SOURCE_EXISTS,
          `source ${record.id} is already registered: change it with \`sluice sources set ${record.id} …\`, or remove it first`,
          { cause: error },
        );
      throw error;
    }
    return toRecord(item);
  }

  /** Changes a registered source; `change.settings` replaces its settings whole. */
  async update(id: string, change: Partial<Pick<SourceRecord, 'settings' | 'paused' | 'everyMinutes' | 'iceberg'>>, now: number): Promise<SourceRecord> {
    checkRecord({ everyMinutes: change.everyMinutes });
    const fields: [string, string, unknown][] = [
      ['settings', '#settings', change.settings && { ...change.settings }],
      ['paused', '#paused', change.paused],
      ['every_minutes', '#every', change.everyMinutes],
      ['iceberg', '#iceberg', change.iceberg],
    ];
    const set = fields.filter(([, , value]) => value !== undefined);
    try {
      const { Attributes } = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: { S: key(id) } },
          UpdateExpression: `SET #version = #version + :one, #updated = :now${set.map(([, name]) => `, ${name} = :${name.slice(1)}`).join('')}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#version': 'version', '#updated': 'updated_at', ...Object.fromEntries(set.map(([attr, name]) => [name, attr])) },
          ExpressionAttributeValues: marshall({ ':one': 1, ':now': now, ...Object.fromEntries(set.map(([, name, value]) => [`:${name.slice(1)}`, value])) }),
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toRecord(unmarshall(Attributes ?? {}) as RecordItem);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw notRegistered(id);
      throw error;
    }
  }

  /**
   * Unregisters a source and returns its record as it was removed: the delete is conditioned on the
   * version read, so a change in between is not lost from the answer (it is read again).
   */
  async remove(id: string): Promise<SourceRecord> {
    for (;;) {
      const item = await this.item(id);
      if (!item) throw notRegistered(id);
      try {
        await this.dynamo.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              {
                Delete: {
                  TableName: this.table,
                  Key: { pk: { S: key(id) } },
                  ConditionExpression: '#version = :version',
                  ExpressionAttributeNames: { '#version': 'version' },
                  ExpressionAttributeValues: { ':version': { N: String(item.version) } },
                },
              },
              {
                Update: {
                  TableName: this.table,
                  Key: { pk: { S: INDEX } },
                  UpdateExpression: 'DELETE #ids :id',
                  ExpressionAttributeNames: { '#ids': 'ids' },
                  ExpressionAttributeValues: { ':id': { SS: [id] } },
                },
              },
            ],
          }),
        );
        return toRecord(item);
      } catch (error) {
        if (!cancelledByCondition(error, 0)) throw error;
      }
    }
  }
}

/** A transaction cancelled because the condition of its `index`th item failed. */
function cancelledByCondition(error: unknown, index: number): boolean {
  return error instanceof TransactionCanceledException && error.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed';
}
