import type { BinlogHistory } from '../core/history.ts';
import type { BinlogPosition } from '../core/position.ts';
import type { ChunkState, PageCommit, SnapshotStore } from '../state/snapshot-store.ts';
import type { Fence, SourceState, StateStore } from '../state/store.ts';
import type { Ledger } from './protocol.ts';

/**
 * The two ledgers the commit protocol advances. Each binds a writer (lease owner, clock) to one
 * item and fences every write on the version it last saw.
 */

/**
 * The poller's: the source's item. A commit moves the binlog position, with the history it belongs
 * to (`history`, when known: lib/source/mysql/history.ts); a data commit also counts one more `commitSeq`.
 */
export function sourceLedger(
  store: StateStore,
  owner: string,
  clock: () => number,
  history: (position: BinlogPosition) => BinlogHistory | undefined = () => undefined,
): Ledger<SourceState, BinlogPosition> {
  const fence = (state: SourceState): Fence => ({ sourceId: state.sourceId, owner, expectVersion: state.version, now: clock() });
  return {
    commit: (state, position, pending) => store.commit(fence(state), { position, history: history(position), pending }),
    clear: (state) => store.clearPending(fence(state)),
  };
}

/** What a snapshot page moves in its chunk; the chunk's lease is renewed by the ledger. */
export type ChunkAdvance = Omit<PageCommit, 'leaseUntil'>;

/** A snapshot worker's, for one chunk: a commit moves the cursor, adds the page's rows, counts one more page and renews the lease. */
export function chunkLedger(
  snapshots: SnapshotStore,
  job: { readonly sourceId: string; readonly id: string },
  owner: string,
  clock: () => number,
  leaseUntil: () => number,
): Ledger<ChunkState, ChunkAdvance> {
  const fence = (chunk: ChunkState): Fence => ({ sourceId: job.sourceId, owner, expectVersion: chunk.version, now: clock() });
  return {
    commit: (chunk, advance, pending) => snapshots.commitPage(job.sourceId, job.id, chunk, fence(chunk), { ...advance, pending, leaseUntil: leaseUntil() }),
    clear: (chunk) => snapshots.clearPending(job.sourceId, job.id, chunk, fence(chunk)),
  };
}
