import type { S3Client } from '@aws-sdk/client-s3';
import type { Faults } from '../../commit/faults.ts';
import type { Config } from '../../config/config.ts';
import type { BinlogPosition } from '../../core/position.ts';
import type { TableRef } from '../../core/table-ref.ts';
import type { SluiceError } from '../../errors.ts';
import type { Log } from '../../log.ts';
import type { RewriteBuckets } from '../../state/iceberg-buckets.ts';
import type { MergeStore } from '../../state/iceberg-store.ts';
import type { SnapshotStore } from '../../state/snapshot-store.ts';
import type { StateStore } from '../../state/store.ts';
import type { IcebergCatalog } from '../catalog/port.ts';
import type { Staged, TableVersion } from '../table/table.ts';
import type { RewriteEvent } from './rewrite.ts';

/* What a merge run takes and reports. */

/** What a merge run needs; clients are injected (lib/aws.ts builds the real ones). */
export interface MergeDeps {
  readonly config: Config;
  readonly s3: S3Client;
  readonly store: StateStore;
  readonly snapshots: SnapshotStore;
  readonly merges: MergeStore;
  readonly log: Log;
  /** Where committed versions are published; the file catalog (version-hint.text) when absent. */
  readonly catalog?: IcebergCatalog;
  readonly clock?: () => number;
  readonly faults?: Faults;
  /** Parent folder for scratch files (DuckDB, downloads); the OS temp folder by default. */
  readonly workDir?: string;
  /** The buckets of first loads split across invocations (lib/iceberg/merge/rewrite.ts); without it a first load is written whole. */
  readonly buckets?: RewriteBuckets;
  /** Starts a rewrite worker invocation (SLUICE_ICEBERG_WORKERS > 1): the Lambda Invoke API, or an in-process stand-in. */
  readonly invoke?: (event: RewriteEvent) => Promise<void>;
}

export interface MergeOptions {
  /** Only these tables (default: every table with a schema history). */
  readonly tables?: readonly TableRef[];
  /** The lease owner (the Lambda request id); a random one by default. */
  readonly owner?: string;
  /** No table is started once this much time has passed. */
  readonly budgetMs?: number;
  /**
   * How long to wait for a table whose lease another run holds (a killed run's lease expires after
   * `SLUICE_ICEBERG_LEASE_SECONDS`); 0 (the schedule's choice): report it busy, the next tick merges it.
   */
  readonly waitForLeaseMs?: number;
  /** A rewrite split into buckets writes at most this many here, leaving the rest to the next run (tests). */
  readonly maxBuckets?: number;
}

/** What a merge did to one table. */
export interface TableMergeResult {
  readonly table: TableRef;
  readonly status: 'merged' | 'up-to-date' | 'held-back' | 'busy' | 'failed';
  /** Why held back, busy or failed. */
  readonly reason?: string;
  /** How the rows were applied: incrementally, as a full rewrite, or emptied (truncate / gone). */
  readonly mode?: 'incremental' | 'rewrite' | 'empty';
  readonly commitSeq?: number;
  readonly mergeSeq?: number;
  readonly metadataKey?: string;
  readonly rowsWritten?: number;
  readonly deletes?: number;
  readonly compacted?: boolean;
  readonly expiredSnapshots?: number;
  readonly error?: SluiceError | Error;
}

export interface MergeResult {
  /** The cut the run merged to; undefined when the source has not committed yet. */
  readonly cut?: Cut;
  readonly tables: readonly TableMergeResult[];
}

/** Where a run merges to: every binlog event before `position` is in commits ≤ `commitSeq`. */
export interface Cut {
  readonly commitSeq: number;
  readonly position: BinlogPosition;
  /** The history epoch of `position`: positions of different epochs compare by it alone. */
  readonly epoch: number;
}

/** Reset kinds after which the table is the same one, its columns keeping their identity (others: a new table under the name). */
export const KEEP_COLUMNS = new Set(['truncate', 'resnapshot', 'snapshot']);

/** How often one table's merge starts again on a catalog that others' maintenance moved under it. */
export const MAINTAINED_ROUNDS = 4;

export const sameTable = (a: TableRef, b: TableRef) => a.db === b.db && a.table === b.table;

/** What `stage` produced: the version to commit (none when a gone table never had one). */
export interface StagedMerge {
  readonly version: TableVersion | undefined;
  readonly schemaVersion: number | undefined;
  readonly gone: boolean;
  readonly mode: NonNullable<TableMergeResult['mode']>;
  readonly stats: readonly Staged[];
}
