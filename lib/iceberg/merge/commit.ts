import { mergeLedger } from '../../commit/ledgers.ts';
import { commitInPlace } from '../../commit/protocol.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import type { MergeAdvance, MergeState } from '../../state/iceberg-store.ts';
import { DEFAULT_ROWS_PER_FILE, expiredSnapshots, loadVersion, stageCompaction, stageExpiry, type TableVersion } from '../table/table.ts';
import type { MergeRun } from './run.ts';
import { icebergLocation } from './spec.ts';
import { discardUncommitted } from './stage.ts';
import type { StagedMerge, TableMergeResult } from './types.ts';

/* Step 3 and the ledger's settle, with housekeeping (compaction, expiry) chained on. */

/**
 * Compaction and expiry, when due, chained onto `staged` (or the committed version): a
 * compaction once the snapshot holds more than `compactFiles` files, an expiry once a snapshot
 * other than the current one is older than the retention. `beforeStaging` runs once, before the
 * first file is staged.
 */
async function housekeeping(run: MergeRun, location: string, version: TableVersion, tag: string, beforeStaging?: () => Promise<void>, compact = true) {
  const { compactFiles, retentionMs, keepSnapshots, maintenance } = run.config.iceberg;
  // The catalog's maintenance compacts and expires; sluice's would delete files the catalog's table still lists.
  if (maintenance === 'catalog') return { version, compacted: false, expired: 0, cleanup: undefined };
  const deps = { store: run.store };
  const now = run.clock();
  let prepared = false;
  const prepare = async () => {
    if (!prepared && beforeStaging) await beforeStaging();
    prepared = true;
  };
  let result = version;
  let compacted = false;
  const snapshot = result.metadata.snapshots.find((s) => s['snapshot-id'] === result.metadata['current-snapshot-id']);
  const files = Number(snapshot?.summary['total-data-files'] ?? 0) + Number(snapshot?.summary['total-delete-files'] ?? 0);
  // A compacted table holds one file per bucket of DEFAULT_ROWS_PER_FILE rows: count files beyond those.
  const buckets = Math.ceil(Number(snapshot?.summary['total-records'] ?? 0) / DEFAULT_ROWS_PER_FILE);
  if (compact && files > compactFiles + buckets) {
    await prepare();
    result = (await stageCompaction(deps, result, { tag: `${tag}-c`, timestampMs: now })).version;
    compacted = true;
  }
  const rule = { retainLast: keepSnapshots, maxAgeMs: retentionMs, nowMs: now };
  if (!expiredSnapshots(result.metadata, rule).size) return { version: result, compacted, expired: 0, cleanup: undefined };
  await prepare();
  const expiry = await stageExpiry(deps, result, { ...rule, tag: `${tag}-x` });
  const cleanup = expiry.unreferenced.length ? `${location}/metadata/${tag}-unreferenced.json` : undefined;
  if (cleanup) await run.store.put(cleanup, JSON.stringify(expiry.unreferenced));
  return { version: expiry.version, compacted, expired: expiry.expiredSnapshots.length, cleanup };
}

/** Step 3, with housekeeping chained on. */
export async function commit(
  run: MergeRun,
  table: TableRef,
  state: MergeState,
  ledger: ReturnType<typeof mergeLedger>,
  staged: StagedMerge,
  advance: MergeAdvance,
  housekeep = true,
): Promise<TableMergeResult> {
  const tag = run.tagFor(state);
  const kept = staged.version && housekeep ? await housekeeping(run, icebergLocation(run.config.prefix, table), staged.version, tag, undefined) : undefined;
  const metadataKey = kept?.version.metadataKey ?? staged.version?.metadataKey ?? state.metadataKey;
  const committed = await commitInPlace(run.ctx, ledger, state, { ...advance, metadataKey, cleanup: kept?.cleanup ?? advance.cleanup });
  const result: TableMergeResult = {
    table,
    status: 'merged',
    mode: staged.mode,
    commitSeq: committed.commitSeq,
    mergeSeq: committed.mergeSeq,
    metadataKey,
    rowsWritten: staged.stats.reduce((n, s) => n + s.stats.rowsWritten, 0),
    deletes: staged.stats.reduce((n, s) => n + s.stats.deletes, 0),
    compacted: kept?.compacted ?? false,
    expiredSnapshots: kept?.expired ?? 0,
  };
  run.deps.log.info('Iceberg merge committed', { ...result, table: formatTableRef(table) });
  return result;
}

/** No new events: compaction or expiry may still be due (time passes). Undefined when neither is. */
export async function maintain(run: MergeRun, table: TableRef, state: MergeState, advance: MergeAdvance): Promise<TableMergeResult | undefined> {
  if (!state.metadataKey) return undefined;
  const tag = run.tagFor(state);
  const current = await loadVersion(run.store, state.metadataKey);
  const location = await run.locationOf(table, current);
  // What an earlier attempt of this maintenance staged is named by its own run: delete it first.
  const kept = await housekeeping(run, location.home, current, tag, () => discardUncommitted(run, location, state, current.version));
  if (kept.version === current) return undefined;
  const ledger = mergeLedger(run.deps.merges, run.owner, run.clock, (s) => settle(run, s));
  const committed = await commitInPlace(run.ctx, ledger, state, { ...advance, metadataKey: kept.version.metadataKey, cleanup: kept.cleanup });
  return {
    table,
    status: 'merged',
    commitSeq: committed.commitSeq,
    mergeSeq: committed.mergeSeq,
    metadataKey: kept.version.metadataKey,
    rowsWritten: 0,
    deletes: 0,
    compacted: kept.compacted,
    expiredSnapshots: kept.expired,
  };
}

/** The ledger's settle: publish the committed version, then delete what its expiry freed. Idempotent. */
export async function settle(run: MergeRun, state: MergeState): Promise<void> {
  // A gone table's rewrite commits no version, but still leaves its plan and records to delete.
  if (state.metadataKey) await run.catalog.publish(state.table, { metadataKey: state.metadataKey, previousMetadataKey: state.previousMetadataKey });
  if (!state.cleanup) return;
  const body = await run.store.get(state.cleanup);
  if (!body) return; // a roll-forward after the deletes
  await run.store.delete(JSON.parse(new TextDecoder().decode(body)) as string[]);
  await run.store.delete([state.cleanup]);
}
