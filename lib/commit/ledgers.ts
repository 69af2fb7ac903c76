import type { BinlogHistory } from '../core/history.ts';
import type { BinlogPosition } from '../core/position.ts';
import { AssertionError } from '../errors.ts';
import type { MergeAdvance, MergeState, MergeStore } from '../state/iceberg-store.ts';
import type { ChunkState, PageCommit, SnapshotStore } from '../state/snapshot-store.ts';
import type { Fence, SnapshotRequest, SourceChange, SourceState, StateStore } from '../state/store.ts';
import type { Ledger } from './protocol.ts';

/**
 * The ledgers the commit protocol advances. Each binds a writer (lease owner, clock) to one
 * item and fences every write on the version it last saw.
 */

/** What a poller commit moves: the binlog position, and the catalog when the commit saved one. */
export type SourceAdvance = Omit<SourceChange, 'pending' | 'history'>;

/**
 * The poller's: the source's item. A commit moves the binlog position (and the catalog pointer),
 * with the history the position belongs to (`history`, when known: lib/source/mysql/history.ts); a
 * data commit also counts one more `commitSeq`. Settling a commit creates the snapshot jobs its DDL
 * asked for (`createJob` is redone with the same id: for a job that exists it only makes sure the
 * job is active).
 */
export function sourceLedger(
  store: StateStore,
  owner: string,
  clock: () => number,
  createJob?: (request: SnapshotRequest) => Promise<void>,
  history: (position: BinlogPosition) => BinlogHistory | undefined = () => undefined,
): Ledger<SourceState, SourceAdvance> {
  const fence = (state: SourceState): Fence => ({ sourceId: state.sourceId, owner, expectVersion: state.version, now: clock() });
  return {
    commit: (state, advance, pending) => store.commit(fence(state), { ...advance, history: history(advance.position), pending }),
    async settle(state) {
      for (const request of state.pending?.snapshots ?? []) {
        if (!createJob) throw new AssertionError(`commit asks for snapshot ${request.id}, but this writer cannot create snapshot jobs`);
        await createJob(request);
      }
    },
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

/**
 * The Iceberg merge's, for one table: a commit moves the merge offset (commit sequence, cut
 * position, merged snapshot jobs) and makes the staged `<N>-<uuid>.metadata.json` the table's current one in
 * the same write. Settling publishes it (version-hint.text, the catalog) and deletes what an expiry
 * freed; `publish` must be idempotent, as a roll-forward may run it again.
 */
export function mergeLedger(
  merges: MergeStore,
  owner: string,
  clock: () => number,
  publish: (state: MergeState) => Promise<void>,
): Ledger<MergeState, MergeAdvance> {
  const fence = (state: MergeState): Fence => ({ sourceId: state.sourceId, owner, expectVersion: state.version, now: clock() });
  return {
    commit: (state, advance, pending) => merges.commit(fence(state), state, advance, pending),
    settle: publish,
    clear: (state) => merges.clearPending(fence(state), state),
  };
}
