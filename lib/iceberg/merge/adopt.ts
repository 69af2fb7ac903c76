import type { mergeLedger } from '../../commit/ledgers.ts';
import { rollForward } from '../../commit/protocol.ts';
import type { BinlogPosition } from '../../core/position.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { pad } from '../../sink/s3/keys.ts';
import { listKeys } from '../../sink/s3/objects.ts';
import type { MergeAdvance, MergeState } from '../../state/iceberg-store.ts';
import { adoptedMetadata, CatalogMaintainedError, type Maintained } from '../catalog/ancestry.ts';
import { stringifyJson } from '../files/json.ts';
import { currentSnapshot } from '../files/metadata.ts';
import { loadVersion, metadataKey as metadataKeyOf, type TableVersion, versionOf } from '../table/table.ts';
import type { MergeRun } from './run.ts';
import { icebergLocation } from './spec.ts';

/* Building on a catalog's maintenance (SLUICE_ICEBERG_MAINTENANCE=catalog): step 0's roll-forward when the catalog moved, and adopting its table as sluice's next version. */

/**
 * Step 0: publishes a commit a crashed run left pending. When others' maintenance moved the
 * catalog past the version that commit builds on (SLUICE_ICEBERG_MAINTENANCE=catalog), the commit
 * cannot be published as it is (its manifests name files the compaction replaced): the ledger
 * goes back to the cut before it, on the catalog's table, and this run merges the same events
 * again (the change log is immutable). The catalog never had the dropped version, so no reader
 * of it saw anything twice or lost anything.
 */
export async function settled(run: MergeRun, table: TableRef, state: MergeState, ledger: ReturnType<typeof mergeLedger>): Promise<MergeState> {
  try {
    return await rollForward(run.ctx, ledger, state);
  } catch (error) {
    if (!(error instanceof CatalogMaintainedError) || run.config.iceberg.maintenance !== 'catalog' || !state.pending) throw error;
    const base = state.base;
    const before = base?.metadataKey ? await loadVersion(run.store, base.metadataKey) : undefined;
    const built = before && currentSnapshot(before.metadata)?.['snapshot-id'];
    if (!base || !before || error.descent.from !== built)
      throw new SluiceError(
        ErrorCode.ICEBERG_CATALOG_CONFLICT,
        `${error.message}; the pending commit of ${formatTableRef(table)} builds on ${built ?? 'no snapshot'}, not on that, so it cannot be merged again on the catalog's table: drop the table from the catalog (the next run registers sluice's)`,
      );
    run.deps.log.info("the catalog was maintained before a committed merge was published: merging its events again on the catalog's table", {
      table: formatTableRef(table),
      dropped: state.metadataKey,
    });
    const rebased = await adopt(run, table, state, error, base, before);
    // The dropped version's files: named by its merge sequence, listed by no metadata any catalog has.
    const location = icebergLocation(run.config.prefix, table);
    const seq = `m${pad(state.mergeSeq)}_`;
    const keys: string[] = [];
    for (const prefix of [`${location}/data/${seq}`, `${location}/metadata/${seq}`, `${location}/metadata/snap-${seq}`])
      for await (const key of listKeys(run.deps.s3, run.config.bucket, prefix)) keys.push(key);
    await run.store.delete(keys).catch(() => {});
    return rebased;
  }
}

/**
 * Makes the catalog's maintained table sluice's next version: `<N+1>-<uuid>.metadata.json` derived
 * from the catalog's metadata (lib/iceberg/catalog/ancestry.ts), recorded by one fenced ledger write at
 * cut `to` (the ledger's own, or the one before a dropped pending commit), then published. A crash
 * before the write leaves an unreferenced file (the next attempt writes another version); after
 * it, the ledger names a version the catalog already has.
 */
export async function adopt(
  run: MergeRun,
  table: TableRef,
  state: MergeState,
  maintained: Maintained,
  to: Pick<MergeState, 'commitSeq' | 'position' | 'jobs' | 'schemaVersion' | 'gone'>,
  ours?: TableVersion,
): Promise<MergeState> {
  const committed = state.metadataKey;
  if (!committed) throw new SluiceError(ErrorCode.ASSERTION, `${formatTableRef(table)} has no metadata to build on the catalog's`);
  const own = ours ?? (await loadVersion(run.store, committed));
  const version = versionOf(committed) + 1;
  const key = metadataKeyOf(icebergLocation(run.config.prefix, table), version, `${run.tagFor(state)}-a`);
  const metadata = adoptedMetadata(maintained.metadata, own.metadata, run.store.uri(own.metadataKey), run.clock());
  await run.store.put(key, `${stringifyJson(metadata, 1)}\n`);
  run.checkLease();
  const advance: MergeAdvance = {
    commitSeq: to.commitSeq,
    position: to.position as BinlogPosition,
    jobs: to.jobs,
    schemaVersion: to.schemaVersion,
    gone: to.gone,
    metadataKey: key,
  };
  const rebased = await run.deps.merges.rebase(
    { sourceId: run.config.sourceId, owner: run.owner, expectVersion: state.version, now: run.clock() },
    state,
    advance,
  );
  run.deps.log.info("Iceberg merge builds on the catalog's maintenance", {
    table: formatTableRef(table),
    metadata: key,
    catalog: maintained.location,
    replaced: maintained.descent.replaced.length,
    expired: maintained.descent.expired.length,
  });
  await run.catalog.publish(table, { metadataKey: key, ...(committed ? { previousMetadataKey: committed } : {}) });
  return rebased;
}
