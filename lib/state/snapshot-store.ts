import type { KeyValues } from '../core/key-values.ts';
import type { BinlogPosition } from '../core/position.ts';
import type { TableRef } from '../core/table-ref.ts';
import type { Fence, PendingCommit, RecordedError } from './store.ts';

/** A snapshot request and, once planned, its tables split into chunks. */
export interface SnapshotJob {
  readonly sourceId: string;
  readonly id: string;
  readonly createdAt: number;
  /** The tables asked for; null = every included table. */
  readonly requested: readonly TableRef[] | null;
  readonly status: 'requested' | 'planned' | 'done';
  readonly tables?: readonly PlannedTable[];
  /** The binlog position read before planning (for `initial`, the poller's start). */
  readonly startPosition?: BinlogPosition;
  readonly finishedAt?: number;
  /** A fatal error a worker hit, for `sluice status`; kept until the job is done. */
  readonly error?: RecordedError;
  /** Why the poller asked for it (the DDL that needs it, `include`, `schema mismatch`…), for `sluice status`; absent on a copy asked for by hand. */
  readonly reason?: string;
}

export interface PlannedTable extends TableRef {
  /**
   * The table's identity in its chunks (`ChunkState.table`, chunk keys, snapshot seqs): an opaque
   * string, `<db-seg>/<table-seg>@<attempt>` (lib/sink/s3/keys.ts `tablePath`, and the planning
   * attempt whose plan the job kept: lib/snapshot/plan.ts), which no two tables share.
   */
  readonly id: string;
  readonly chunks: number;
  readonly estimatedRows: number;
  readonly key: readonly string[];
}

/** One key range of a table: the unit workers claim, with its cursor and page count. */
export interface ChunkState {
  /** The planned table's `id`. */
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

/** What one page commit writes to its chunk besides the pending renames. */
export interface PageCommit {
  readonly cursor: KeyValues | null;
  readonly rows: number;
  readonly done: boolean;
  /** The chunk's lease is renewed to this by every page commit. */
  readonly leaseUntil: number;
}

export const chunkId = (table: string, n: number) => `${table}#${n}`;

/** Whether a job copies `table` (its request, or its plan, names it; a request of every table does). */
export function jobCovers(job: SnapshotJob, table: TableRef): boolean {
  const same = (t: TableRef) => t.db === table.db && t.table === table.table;
  return job.requested === null || job.requested.some(same) || (job.tables ?? []).some(same);
}

/**
 * Port for snapshot jobs and chunk cursors. Chunk writes are fenced like the source's (lease +
 * version); adapters translate a failed condition into LeaseLostError / OffsetConflictError.
 */
export interface SnapshotStore {
  /**
   * Records a new job, makes it the source's latest and one of its active jobs; returns false if the
   * id exists (then it is made active again if not done: a redo of a creation that stopped half-way).
   */
  createJob(job: SnapshotJob): Promise<boolean>;
  job(sourceId: string, id: string): Promise<SnapshotJob | undefined>;
  latestJob(sourceId: string): Promise<SnapshotJob | undefined>;
  /** Every job not done yet, oldest first (several run at once: the initial copy, re-snapshots DDL asked for, on-demand ones). */
  activeJobs(sourceId: string): Promise<SnapshotJob[]>;
  /** Stores the plan once; a concurrent planner that loses keeps the winner's plan. */
  markPlanned(sourceId: string, id: string, tables: readonly PlannedTable[]): Promise<SnapshotJob>;
  markDone(sourceId: string, id: string, now: number): Promise<void>;
  /** Records a fatal error a worker hit, for `sluice status`. */
  recordError(sourceId: string, id: string, error: { code: string; message: string }, now: number): Promise<void>;
  /** Creates a chunk unless it exists (planning is idempotent). */
  putChunk(sourceId: string, id: string, chunk: { table: string; n: number; lo: KeyValues | null; hi: KeyValues | null }): Promise<void>;
  chunk(sourceId: string, id: string, table: string, n: number): Promise<ChunkState | undefined>;
  /** Takes an unfinished chunk (or a done one with renames pending); throws LeaseLostError if a live worker holds it or nothing is left to do. */
  claim(sourceId: string, id: string, table: string, n: number, owner: string, expiresAt: number, now: number): Promise<ChunkState>;
  /** One page's commit: cursor, counters, done flag and (with `pending`) one more page and its renames, in one fenced write. */
  commitPage(sourceId: string, id: string, chunk: ChunkState, fence: Fence, change: PageCommit & { pending?: PendingCommit }): Promise<ChunkState>;
  clearPending(sourceId: string, id: string, chunk: ChunkState, fence: Fence): Promise<ChunkState>;
  release(sourceId: string, id: string, table: string, n: number, owner: string): Promise<void>;
}
