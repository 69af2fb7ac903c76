import type { BinlogHistory } from '../core/history.ts';
import type { BinlogPosition } from '../core/position.ts';
import type { TableRef } from '../core/table-ref.ts';

/**
 * The state of one source, held in a single item so that one conditional write can move the
 * offset and record the pending renames together (see lib/commit/protocol.ts for the protocol).
 */
export interface SourceState {
  readonly sourceId: string;
  /** Bumped by every write; each write names the version it read (optimistic concurrency). */
  readonly version: number;
  readonly position?: BinlogPosition;
  /** The binlog history `position` belongs to (lib/core/history.ts); absent on items written before it was recorded. */
  readonly history?: BinlogHistory;
  /**
   * The history epoch of `position` (0 when never changed): advanced by every write that puts the
   * position anywhere but where reading forward left it, so that everything read after it sorts
   * after everything read before (lib/format/seq.ts).
   */
  readonly epoch: number;
  /** Set by a change of position that skipped transactions: the next run resets and re-copies the tables they wrote (or every table). */
  readonly resync?: Resync;
  /** The last time a capture run followed the transactions to another binlog history by itself (kept until the next one). */
  readonly lastReposition?: Reposition;
  /** How many data commits the source has made; final object keys are derived from it. */
  readonly commitSeq: number;
  readonly pending?: PendingCommit;
  /** The commit whose catalog object describes the tables at `position` (lib/schema/catalog.ts); absent before the first. */
  readonly catalog?: number;
  readonly lease?: { readonly owner: string; readonly expiresAt: number };
  readonly lastCommitAt?: number;
  /** When the stored position last moved (a data commit, a heartbeat, an import or reset). */
  readonly positionAt?: number;
  readonly error?: RecordedError;
  readonly updatedAt?: number;
}

/** Which tables the next run must reset and copy again after a change of position that may have skipped transactions, why, and since when. */
export interface Resync {
  /** What moved the position, in words (for status and the log). */
  readonly reason: string;
  readonly at: number;
  /** The tables the skipped transactions wrote; absent: every captured table (another history, a purge, DDL skipped). */
  readonly tables?: readonly TableRef[];
}

/**
 * What a capture run did when the stored position's binlog history was another one and the
 * server's GTID state proved that it carries every transaction read and every one after them (a
 * promoted replica, a Blue/Green target): it moved the position by GTID, in a new history epoch,
 * with nothing to copy again (lib/capture/follow.ts).
 */
export interface Reposition {
  readonly at: number;
  /** What showed the history had changed (the POSITION_FOREIGN evidence), as a sentence part. */
  readonly evidence: string;
  /** The GTID state the position moved on: MariaDB every domain's last GTID read, MySQL the set executed. */
  readonly gtid: string;
  /** The history epoch the position moved into. */
  readonly epoch: number;
  readonly from: RepositionEnd;
  readonly to: RepositionEnd;
}

/** One side of a reposition: the position and the server it is on. */
export interface RepositionEnd {
  readonly position: BinlogPosition;
  readonly serverId?: number;
  readonly serverUuid?: string;
}

/** A fatal error as recorded for `sluice status`. */
export interface RecordedError {
  readonly code: string;
  readonly message: string;
  readonly at: number;
}

/**
 * A committed commit whose staging objects still have to be copied to their final keys. It needs
 * no number of its own: the item that holds it counted the commit (a source's `commitSeq`, a
 * chunk's `pages`) in the same write. Items written before this shape also carry `commitSeq`;
 * it is ignored, and their copies roll forward the same way.
 */
export interface PendingCommit {
  /** Copies in order; the manifest's copy comes last so a visible manifest implies visible data. */
  readonly copies: readonly PendingCopy[];
  /** Snapshot jobs the commit's DDL asked for (a re-snapshot, a table renamed into the set), created by its roll-forward. */
  readonly snapshots?: readonly SnapshotRequest[];
}

/** A snapshot job to create; its id is fixed at commit, so creating it again is a no-op. */
export interface SnapshotRequest {
  readonly id: string;
  readonly tables: readonly { readonly db: string; readonly table: string }[];
  /** Why (the DDL kind), for status. */
  readonly reason: string;
  /** The position the job's watermark argument starts from (the commit's position). */
  readonly startPosition: BinlogPosition;
}

export interface PendingCopy {
  readonly from: string;
  readonly to: string;
}

/** What every state write is conditional on: this writer holds a live lease and saw the current version. */
export interface Fence {
  readonly sourceId: string;
  readonly owner: string;
  /** The version this writer last saw; the write fails if anyone wrote since. */
  readonly expectVersion: number;
  readonly now: number;
}

/** What one source commit writes. */
export interface SourceChange {
  readonly position: BinlogPosition;
  /** The binlog history `position` belongs to; a commit without it removes the stored one. */
  readonly history?: BinlogHistory;
  readonly pending?: PendingCommit;
  readonly catalog?: number;
  /** The commit carries the resets and snapshot requests a `resync` asked for: it is cleared in the same write. */
  readonly resynced?: boolean;
}

/** What `overwrite` writes: a position set by other means than reading forward, which starts a new history epoch. */
export interface PositionOverwrite {
  readonly position: BinlogPosition;
  readonly history?: BinlogHistory;
  readonly commitSeq: number;
  /** Must be greater than the stored epoch. */
  readonly epoch: number;
  /** Absent: the new position continues the old one's transactions (nothing to re-copy). */
  readonly resync?: Resync;
  /** A capture run's own move to another history (kept as `lastReposition`); absent: the one recorded stays. */
  readonly reposition?: Reposition;
}

/**
 * Port for the offset/lease store. Adapters only map: they translate a failed condition into
 * LeaseLostError (the lease is gone) or OffsetConflictError (someone wrote since).
 */
export interface StateStore {
  get(sourceId: string): Promise<SourceState | undefined>;
  /** Takes the lease if it is free, expired or already ours; throws LeaseLostError when a live other holds it. */
  acquireLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<SourceState>;
  /**
   * Moves the position and sets its history (removes it when not given); with `pending`, also
   * counts the commit (commitSeq + 1) and records its renames; with `catalog`, points the source at
   * the catalog the commit saved. One write, refused while a commit is pending.
   */
  commit(fence: Fence, change: SourceChange): Promise<SourceState>;
  /** Clears a pending record once its renames are done. */
  clearPending(fence: Fence): Promise<SourceState>;
  /**
   * Replaces position (with its history, removed when not given), commit sequence and epoch (state
   * import / reset, and a capture run following a failover under its own lease, which records it as
   * `lastReposition`), refused while a commit is pending.
   */
  overwrite(fence: Fence, change: PositionOverwrite): Promise<SourceState>;
  /** Records a fatal error for `status`; cleared by the next successful commit. */
  recordError(sourceId: string, error: { code: string; message: string }, now: number): Promise<void>;
  /** Extends this owner's live lease to `expiresAt` without bumping the version; throws LeaseLostError when it is gone. */
  renewLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<void>;
  releaseLease(sourceId: string, owner: string): Promise<void>;
}
