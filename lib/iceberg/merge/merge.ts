import { formatTableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { jobCovers } from '../../state/snapshot-store.ts';
import { MergeRun } from './run.ts';
import { mergeTable } from './table-merge.ts';
import type { Cut, MergeDeps, MergeOptions, MergeResult, TableMergeResult } from './types.ts';

export type { Cut, MergeDeps, MergeOptions, MergeResult, TableMergeResult } from './types.ts';

/*
 * The Iceberg merge: per captured table, an Iceberg v2 table under `<prefix>iceberg/<db>/<table>/`
 * equal to the source table as of a committed point of the change log, kept exactly once.
 *
 * Each table has a ledger item (lib/state/iceberg-store.ts): the cut it is merged to (the last
 * binlog commit `commitSeq`, the binlog position X before which every event is merged, the snapshot
 * jobs whose pages are all in), the table's schema version and its current metadata file. A merge:
 *
 *   0. leases the table's ledger and rolls forward a commit a crashed run left unpublished;
 *   1. reads the cut (N, X) from the source's state: every binlog event before X is in commits ≤ N
 *      (when the source's newest commit is still pending, N−1 and that commit's end);
 *   2. reads the table's events after its own cut: the objects of binlog commits (old N, N] and of
 *      snapshot pages of finished jobs whose watermark L ≤ X, and applies the materialization rule
 *      incrementally (lib/materialize/changes.ts) — or, after a reset, on a first merge, or when a
 *      schema change rewrites existing values, the whole rule — and stages the new snapshot(s) with
 *      lib/iceberg (files named by the merge sequence and the run: a redo first deletes what earlier
 *      attempts of the same merge staged);
 *   3. commits through the commit protocol (lib/commit/protocol.ts, `commitInPlace`): ONE fenced
 *      write moves the ledger to (N, X) and makes the staged metadata current; settling publishes it
 *      (version-hint.text, the Glue catalog) and deletes what an expiry freed; then clears.
 *
 * A first load, or a reset of an existing table, too large for one invocation is staged in buckets by several (lib/iceberg/merge/rewrite.ts)
 * and committed by the same step 3, once, from the cut its rewrite recorded.
 *
 * Exactly once. The events merged are always a prefix, in seq order, of the table's events: those
 * before X. Binlog events before X are in commits ≤ N (the source's state says so), in order; every
 * event not yet captured belongs to a transaction whose first event ends after X, so its seq sorts
 * after X's. A snapshot page's rows sort at its low watermark L (docs/FORMAT.md), after every binlog
 * event before L and before every one after it: a page is merged once L ≤ X and its job is done (a
 * done job's pages are all visible: a chunk is done only after its last rename). Pages with L > X
 * wait for a later cut. A job created after the cut was read has L ≥ X (L is the binlog end when a
 * page is read, X at most the binlog end when the cut was read — so the jobs are read after the
 * cut), and while it runs the table is held back (below), so nothing after X is merged before its
 * pages; a page of it at exactly L = X, merged after another job's page at the same L, is the newer
 * read and rightly replaces it. The ledger's write is the only step that makes
 * anything current, and it moves the offset in the same write; files staged before it are invisible
 * (no metadata names them) and a redo discards them; after it, the roll-forward publishes
 * the committed version, idempotently. So no event is applied twice and none is skipped.
 *
 * Hold-back rule. A table with a snapshot job that is not done (an initial copy, a re-snapshot a
 * DDL asked for, an on-demand one) is not merged at all until the job is done: the change log holds
 * only part of its rows meanwhile (after a `t resnapshot` the table "grows back" page by page), and
 * its pages may still commit below the cut. The Iceberg table keeps its last complete state. A
 * source commit that requests a job is not merged while it is pending either (the cut stops before
 * it), so the reset and its job are seen together.
 */

/** Merges every table (or `options.tables`) up to the source's committed position. */
export async function runIcebergMerge(deps: MergeDeps, options: MergeOptions = {}): Promise<MergeResult> {
  const run = new MergeRun(deps, options);
  return mergeAll(run);
}

async function mergeAll(run: MergeRun): Promise<MergeResult> {
  // Order matters (see the header): the cut first, then the jobs.
  const cut = await readCut(run);
  const tables = run.options.tables ?? (await run.changeLog.tables());
  if (!cut) return { tables: tables.map((table) => ({ table, status: 'up-to-date', reason: 'the source has not committed yet' })) };
  const active = await run.deps.snapshots.activeJobs(run.config.sourceId);
  const results: TableMergeResult[] = [];
  for (const table of tables) {
    if (run.options.budgetMs !== undefined && run.clock() - run.started >= run.options.budgetMs) {
      results.push({ table, status: 'busy', reason: 'out of time; the next run merges it' });
      continue;
    }
    const job = active.find((j) => jobCovers(j, table));
    if (job) {
      results.push({ table, status: 'held-back', reason: `snapshot ${job.id} is copying it (${job.status})` });
      continue;
    }
    try {
      results.push(await mergeTable(run, table, cut));
    } catch (error) {
      run.deps.log.error('Iceberg merge failed', { table: formatTableRef(table), error: error as Error });
      const code = error instanceof SluiceError ? error.code : 'UNEXPECTED';
      await run.deps.merges.recordError(run.config.sourceId, table, { code, message: (error as Error).message }, run.clock()).catch(() => {});
      results.push({ table, status: 'failed', reason: (error as Error).message, error: error as Error });
    }
  }
  return { cut, tables: results };
}

/** Step 1: the cut, from the source's state. */
async function readCut(run: MergeRun): Promise<Cut | undefined> {
  const state = await run.deps.store.get(run.config.sourceId);
  if (!state?.position) return undefined;
  if (!state.pending) return { commitSeq: state.commitSeq, position: state.position, epoch: state.epoch };
  // The newest commit may not be renamed yet: cut at the one before, at its end.
  const previous = state.commitSeq - 1;
  if (previous < 1) return undefined;
  const manifest = await run.changeLog.commit(previous);
  if (!manifest?.position) throw new SluiceError(ErrorCode.ASSERTION, `manifest ${previous} of a committed commit is missing`);
  return { commitSeq: previous, position: manifest.position.to, epoch: manifest.epoch ?? 0 };
}
