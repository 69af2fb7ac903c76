import { type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { BinlogPosition } from '../core/position.ts';
import { tablePath } from '../core/table-path.ts';
import type { TableRef } from '../core/table-ref.ts';
import { acquire, fencedUpdate, type Item, release, renew } from './dynamo-item.ts';
import type { Fence, PendingCommit, RecordedError } from './store.ts';

/**
 * The Iceberg merge's ledger for one table (lib/iceberg/merge/merge.ts): where in the change log the
 * Iceberg table stands and which metadata file is current. One item per table in the state table,
 * so that one conditional write moves both (the merge's commit).
 */
export interface MergeState {
  readonly sourceId: string;
  readonly table: TableRef;
  /** Bumped by every write; each write names the version it read. */
  readonly version: number;
  /** Iceberg commits made so far; the next one's files are tagged with it (plus one). */
  readonly mergeSeq: number;
  /** The last binlog commit (`commitSeq`) merged. */
  readonly commitSeq: number;
  /** The cut: every event of the table before this binlog position is merged, none after it. */
  readonly position?: BinlogPosition;
  /** The history epoch of `position` (lib/format/seq.ts); 0 on items written before epochs. */
  readonly epoch: number;
  /** Snapshot jobs every page of which (for this table) is merged. */
  readonly jobs: readonly string[];
  /** The sluice schema version the Iceberg table is at; absent before the first merge. */
  readonly schemaVersion?: number;
  /** The table was dropped, renamed away or excluded: its Iceberg table is empty. */
  readonly gone: boolean;
  /** The committed metadata file (object key); absent before the first merge. */
  readonly metadataKey?: string;
  /** The one before it (catalogs record it as `previous_metadata_location`). */
  readonly previousMetadataKey?: string;
  /** An object listing files to delete once the committed version is published (an expiry). */
  readonly cleanup?: string;
  /** Set by a commit, removed once it is published: the commit protocol's pending record (no copies). */
  readonly pending?: PendingCommit;
  readonly lease?: { readonly owner: string; readonly expiresAt: number };
  /** The last merge of the table that failed, for `sluice status`; cleared by its next commit. */
  readonly error?: RecordedError;
  readonly updatedAt?: number;
  /** A first load split into buckets, in progress (lib/iceberg/merge/rewrite.ts); the commit that adds them removes it. */
  readonly rewrite?: RewriteRecord;
  /** Set with `pending`, removed with it: the ledger as it was before that commit, which a rebase on the catalog's maintenance returns to. */
  readonly base?: MergeAdvance;
}

/** A rewrite's fixed part: what its buckets read, how its files are named, and what its one commit writes. */
export interface RewriteRecord {
  /** Names its files (`m<merge seq>_<attempt>`) and its bucket items. */
  readonly tag: string;
  /** Object key of the plan: the change-log objects every bucket reads. */
  readonly plan: string;
  readonly buckets: number;
  /** The snapshot's timestamp: a redo of the final staging writes the same bytes. */
  readonly timestampMs: number;
  /** What the commit moves the ledger to (the cut as it was when the rewrite started). */
  readonly advance: MergeAdvance;
}

/** What one merge commit writes. */
export interface MergeAdvance {
  readonly commitSeq: number;
  readonly position: BinlogPosition;
  /** The history epoch of `position`; absent on records written before epochs (0). */
  readonly epoch?: number;
  readonly jobs: readonly string[];
  readonly schemaVersion: number | undefined;
  readonly gone: boolean;
  /** The table's metadata file after the commit (undefined: the table has none yet). */
  readonly metadataKey: string | undefined;
  readonly cleanup?: string;
}

/** Port for the merge ledgers; adapters map failed conditions to LeaseLostError / OffsetConflictError. */
export interface MergeStore {
  get(sourceId: string, table: TableRef): Promise<MergeState | undefined>;
  /** Takes the table's merge lease if it is free, expired or ours. */
  acquire(sourceId: string, table: TableRef, owner: string, expiresAt: number, now: number): Promise<MergeState>;
  /** Moves the ledger and records the new metadata in one write, refused while a commit is pending; with `pending`, counts one more Iceberg commit. */
  commit(fence: Fence, state: MergeState, advance: MergeAdvance, pending: PendingCommit | undefined): Promise<MergeState>;
  /** Records a rewrite split into buckets, refused while a commit is pending or another rewrite is in progress. */
  startRewrite(fence: Fence, state: MergeState, rewrite: RewriteRecord): Promise<MergeState>;
  /**
   * Moves the ledger to `to` (a cut it held before, or the one it holds) with the metadata built on
   * the catalog's maintenance, dropping a pending commit that could not be published on it.
   */
  rebase(fence: Fence, state: MergeState, to: MergeAdvance): Promise<MergeState>;
  /** Removes the pending record (and the cleanup list) once the version is published. */
  clearPending(fence: Fence, state: MergeState): Promise<MergeState>;
  /** Extends the lease its live holder `owner` has, without bumping the version (the holder's fence stays valid); LeaseLostError if it is gone. */
  renew(sourceId: string, table: TableRef, owner: string, expiresAt: number, now: number): Promise<void>;
  release(sourceId: string, table: TableRef, owner: string): Promise<void>;
  /** Records a failed merge of the table for `sluice status` (unfenced: it moves nothing); its next commit clears it. */
  recordError(sourceId: string, table: TableRef, error: { code: string; message: string }, now: number): Promise<void>;
}

const key = (sourceId: string, table: TableRef) => `iceberg#${sourceId}#${tablePath(table)}`;

/** The ledger's cut and metadata as `state` has them (what a commit records as its base). */
const baseOf = (state: MergeState): MergeAdvance => ({
  commitSeq: state.commitSeq,
  position: state.position as BinlogPosition,
  epoch: state.epoch,
  jobs: [...state.jobs],
  schemaVersion: state.schemaVersion,
  gone: state.gone,
  metadataKey: state.metadataKey,
});

function toState(sourceId: string, table: TableRef, item: Item): MergeState {
  return {
    sourceId,
    table,
    version: item.version ?? 0,
    mergeSeq: (item.merge_seq as number | undefined) ?? 0,
    commitSeq: (item.commit_seq as number | undefined) ?? 0,
    position: item.position as BinlogPosition | undefined,
    epoch: (item.epoch as number | undefined) ?? 0,
    jobs: (item.jobs as string[] | undefined) ?? [],
    schemaVersion: item.schema_version as number | undefined,
    gone: item.gone === true,
    metadataKey: item.metadata_key as string | undefined,
    previousMetadataKey: item.previous_metadata_key as string | undefined,
    cleanup: item.cleanup as string | undefined,
    pending: item.pending as PendingCommit | undefined,
    lease: item.owner ? { owner: item.owner, expiresAt: item.expires ?? 0 } : undefined,
    error: item.error as RecordedError | undefined,
    updatedAt: item.updated_at as number | undefined,
    rewrite: item.rewrite as RewriteRecord | undefined,
    base: item.base as MergeAdvance | undefined,
  };
}

/** DynamoDB adapter: one item per (source, table), `iceberg#<source>#<db-seg>/<table-seg>`, every write fenced. */
export class DynamoDbMergeStore implements MergeStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async get(sourceId: string, table: TableRef): Promise<MergeState | undefined> {
    const { Item } = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: { pk: { S: key(sourceId, table) } }, ConsistentRead: true }));
    return Item ? toState(sourceId, table, unmarshall(Item) as Item) : undefined;
  }

  async acquire(sourceId: string, table: TableRef, owner: string, expiresAt: number, now: number): Promise<MergeState> {
    const what = `Iceberg merge of ${tablePath(table)}`;
    return toState(sourceId, table, await acquire(this.client, this.tableName, key(sourceId, table), what, owner, expiresAt, now));
  }

  async commit(fence: Fence, state: MergeState, advance: MergeAdvance, pending: PendingCommit | undefined): Promise<MergeState> {
    const moved = state.metadataKey !== undefined && advance.metadataKey !== undefined && state.metadataKey !== advance.metadataKey;
    const meta = advance.metadataKey !== undefined;
    const item = await fencedUpdate(this.client, this.tableName, key(fence.sourceId, state.table), `Iceberg merge of ${tablePath(state.table)}`, fence, {
      set: [
        '#db = :db',
        '#tbl = :tbl',
        '#cseq = :cseq',
        '#position = :position',
        '#epoch = :epoch',
        '#jobs = :jobs',
        '#gone = :gone',
        ...(meta ? ['#meta = :meta'] : []),
        ...(moved ? ['#prev = :prev'] : []),
        ...(advance.schemaVersion !== undefined ? ['#schema = :schema'] : []),
        ...(advance.cleanup ? ['#cleanup = :cleanup'] : []),
        ...(pending ? ['#pending = :pending', '#mseq = if_not_exists(#mseq, :zero) + :one', '#base = :base'] : []),
      ],
      // A commit always ends a rewrite in progress: the rewrite's own commit is the only one made while it is.
      remove: ['#error', '#rewrite', ...(advance.cleanup ? [] : ['#cleanup'])],
      condition: 'attribute_not_exists(#pending)',
      names: {
        '#error': 'error',
        '#rewrite': 'rewrite',
        '#db': 'db',
        '#tbl': 'table',
        '#cseq': 'commit_seq',
        '#position': 'position',
        '#epoch': 'epoch',
        '#jobs': 'jobs',
        '#gone': 'gone',
        '#cleanup': 'cleanup',
        '#pending': 'pending',
        ...(meta ? { '#meta': 'metadata_key' } : {}),
        ...(moved ? { '#prev': 'previous_metadata_key' } : {}),
        ...(advance.schemaVersion !== undefined ? { '#schema': 'schema_version' } : {}),
        ...(pending ? { '#mseq': 'merge_seq', '#base': 'base' } : {}),
      },
      values: {
        ':db': state.table.db,
        ':tbl': state.table.table,
        ':cseq': advance.commitSeq,
        ':position': advance.position,
        ':epoch': advance.epoch ?? 0,
        ':jobs': [...advance.jobs],
        ':gone': advance.gone,
        ...(meta ? { ':meta': advance.metadataKey } : {}),
        ...(moved ? { ':prev': state.metadataKey } : {}),
        ...(advance.schemaVersion !== undefined ? { ':schema': advance.schemaVersion } : {}),
        ...(advance.cleanup ? { ':cleanup': advance.cleanup } : {}),
        ...(pending ? { ':pending': pending, ':zero': 0, ':base': baseOf(state) } : {}),
      },
    });
    return toState(fence.sourceId, state.table, item);
  }

  async rebase(fence: Fence, state: MergeState, to: MergeAdvance): Promise<MergeState> {
    const item = await fencedUpdate(this.client, this.tableName, key(fence.sourceId, state.table), `Iceberg merge of ${tablePath(state.table)}`, fence, {
      set: [
        '#cseq = :cseq',
        '#jobs = :jobs',
        '#gone = :gone',
        '#meta = :meta',
        '#epoch = :epoch',
        ...(to.position ? ['#position = :position'] : []),
        ...(to.schemaVersion !== undefined ? ['#schema = :schema'] : []),
        ...(state.metadataKey ? ['#prev = :prev'] : []),
      ],
      remove: ['#pending', '#base', '#cleanup', ...(to.position ? [] : ['#position']), ...(to.schemaVersion !== undefined ? [] : ['#schema'])],
      names: {
        '#cseq': 'commit_seq',
        '#jobs': 'jobs',
        '#gone': 'gone',
        '#meta': 'metadata_key',
        '#epoch': 'epoch',
        '#position': 'position',
        '#schema': 'schema_version',
        '#pending': 'pending',
        '#base': 'base',
        '#cleanup': 'cleanup',
        ...(state.metadataKey ? { '#prev': 'previous_metadata_key' } : {}),
      },
      values: {
        ':cseq': to.commitSeq,
        ':jobs': [...to.jobs],
        ':gone': to.gone,
        ':meta': to.metadataKey,
        ':epoch': to.epoch ?? 0,
        ...(to.position ? { ':position': to.position } : {}),
        ...(to.schemaVersion !== undefined ? { ':schema': to.schemaVersion } : {}),
        ...(state.metadataKey ? { ':prev': state.metadataKey } : {}),
      },
    });
    return toState(fence.sourceId, state.table, item);
  }

  async startRewrite(fence: Fence, state: MergeState, rewrite: RewriteRecord): Promise<MergeState> {
    const item = await fencedUpdate(this.client, this.tableName, key(fence.sourceId, state.table), `Iceberg merge of ${tablePath(state.table)}`, fence, {
      set: ['#rewrite = :rewrite'],
      remove: [],
      condition: 'attribute_not_exists(#pending) AND attribute_not_exists(#rewrite)',
      names: { '#rewrite': 'rewrite', '#pending': 'pending' },
      values: { ':rewrite': rewrite },
    });
    return toState(fence.sourceId, state.table, item);
  }

  async clearPending(fence: Fence, state: MergeState): Promise<MergeState> {
    const item = await fencedUpdate(this.client, this.tableName, key(fence.sourceId, state.table), `Iceberg merge of ${tablePath(state.table)}`, fence, {
      set: [],
      remove: ['#pending', '#cleanup', '#base'],
      names: { '#pending': 'pending', '#cleanup': 'cleanup', '#base': 'base' },
      values: {},
    });
    return toState(fence.sourceId, state.table, item);
  }

  renew(sourceId: string, table: TableRef, owner: string, expiresAt: number, now: number): Promise<void> {
    return renew(this.client, this.tableName, key(sourceId, table), `the Iceberg merge of ${tablePath(table)}`, owner, expiresAt, now);
  }

  release(sourceId: string, table: TableRef, owner: string): Promise<void> {
    return release(this.client, this.tableName, key(sourceId, table), owner);
  }

  async recordError(sourceId: string, table: TableRef, error: { code: string; message: string }, now: number): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: key(sourceId, table) } },
        // No version bump: a run that holds the lease meanwhile keeps its fence.
        UpdateExpression: 'SET #error = :error, #updated = :now',
        ExpressionAttributeNames: { '#error': 'error', '#updated': 'updated_at' },
        ExpressionAttributeValues: marshall({ ':error': { ...error, at: now }, ':now': now }),
      }),
    );
  }
}
