import type { BinlogPosition } from '../core/position.ts';

/**
 * The state of one source, held in a single item so that one conditional write can move the
 * offset and record the pending renames together (see lib/commit/protocol.ts for the protocol).
 */
export interface SourceState {
  readonly sourceId: string;
  /** Bumped by every write; each write names the version it read (optimistic concurrency). */
  readonly version: number;
  readonly position?: BinlogPosition;
  /** Sequence number of the last data commit; final object keys are derived from it. */
  readonly commitSeq: number;
  readonly pending?: PendingCommit;
  readonly lease?: { readonly owner: string; readonly expiresAt: number };
  readonly lastCommitAt?: number;
  readonly error?: { readonly code: string; readonly message: string; readonly at: number };
  readonly updatedAt?: number;
}

/** A committed batch whose staging objects still have to be copied to their final keys. */
export interface PendingCommit {
  readonly commitSeq: number;
  /** Copies in order; the manifest's copy comes last so a visible manifest implies visible data. */
  readonly copies: readonly { readonly from: string; readonly to: string }[];
}

export interface Fence {
  readonly sourceId: string;
  readonly owner: string;
  /** The version this writer last saw; the write fails if anyone wrote since. */
  readonly expectVersion: number;
  readonly now: number;
}

/** Port for the offset/lease store. Adapters translate storage conflicts into LeaseLostError / OffsetConflictError. */
export interface StateStore {
  get(sourceId: string): Promise<SourceState | undefined>;
  /** Takes the lease if it is free, expired or already ours; throws LeaseLostError when a live other holds it. */
  acquireLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<SourceState>;
  /** Moves the position; with `pending`, also bumps commitSeq and records the renames (one atomic write). */
  commit(fence: Fence, change: { position: BinlogPosition; pending?: PendingCommit }): Promise<SourceState>;
  /** Clears a pending record once its renames are done. */
  clearPending(fence: Fence): Promise<SourceState>;
  /** Replaces position and commit sequence (state import / reset), refused while a commit is pending. */
  overwrite(fence: Fence, change: { position: BinlogPosition; commitSeq: number }): Promise<SourceState>;
  /** Records a fatal error for `status`; cleared by the next successful commit. */
  recordError(sourceId: string, error: { code: string; message: string }, now: number): Promise<void>;
  releaseLease(sourceId: string, owner: string): Promise<void>;
}
