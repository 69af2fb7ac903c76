import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireLease, mergeLease } from '../../commit/lease.ts';
import { mergeLedger } from '../../commit/ledgers.ts';
import { advance as moveLedger } from '../../commit/protocol.ts';
import { compareEpochPositions } from '../../core/position.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { downloadObjects, type EventFiles, loadEventsSql } from '../../materialize/events.ts';
import { tableHistory } from '../../materialize/table.ts';
import type { MergeAdvance, MergeState } from '../../state/iceberg-store.ts';
import { CatalogMaintainedError } from '../catalog/ancestry.ts';
import { publish, versionOf } from '../table/table.ts';
import { adopt, settled } from './adopt.ts';
import { commit, maintain, settle } from './commit.ts';
import { pageObjects } from './pages.ts';
import { bucketCount, type RewriteBase } from './rewrite.ts';
import type { MergeRun } from './run.ts';
import { continueRewrite, planRewrite, resetBase } from './split.ts';
import { Duck, stage } from './stage.ts';
import { type Cut, MAINTAINED_ROUNDS, type TableMergeResult } from './types.ts';

/* Steps 0–3 for one table: its lease, what the change log holds for it past its cut, and how it is merged. */

/** Steps 0–3 for one table. */
export async function mergeTable(run: MergeRun, table: TableRef, cut: Cut): Promise<TableMergeResult> {
  const { config, merges, log } = run.deps;
  const lease = await acquireLease(mergeLease(merges, config.sourceId, table), {
    owner: run.owner,
    clock: run.clock,
    leaseMs: config.iceberg.leaseMs,
    waitMs: run.options.waitForLeaseMs,
    waitClock: Date.now,
    // Renewed while the merge works, without bumping the version: a killed run blocks the table for one lease at most.
    heartbeat: {
      log,
      warning: 'could not renew the Iceberg merge lease; the merge stops writing once it may have run out',
      fields: { table: formatTableRef(table) },
    },
  });
  if ('busy' in lease) return { table, status: 'busy', reason: lease.busy };
  let state = lease.held;
  run.lease = { table, lease };
  const work = mkdtempSync(join(run.deps.workDir ?? tmpdir(), 'sluice-iceberg-'));
  try {
    const ledger = mergeLedger(merges, run.owner, run.clock, (s) => settle(run, s));
    // The catalog's maintenance may move the table between this run's load and its publish: the
    // publish then fails with CatalogMaintainedError, and the table is merged again on it.
    for (let round = 0; ; round++) {
      try {
        return await mergeLeased(run, table, cut, state, ledger, join(work, String(round)));
      } catch (error) {
        if (!(error instanceof CatalogMaintainedError) || config.iceberg.maintenance !== 'catalog' || round >= MAINTAINED_ROUNDS) throw error;
        log.info('the catalog was maintained under the merge: merging again on it', { table: formatTableRef(table), error: error.message });
        state = (await merges.get(config.sourceId, table)) ?? state;
      }
    }
  } finally {
    lease.stop();
    run.lease = undefined;
    rmSync(work, { recursive: true, force: true });
    await lease.release();
  }
}

/** Steps 0–3 for one table under its lease, scratch files in `work`. */
async function mergeLeased(
  run: MergeRun,
  table: TableRef,
  cut: Cut,
  leased: MergeState,
  ledger: ReturnType<typeof mergeLedger>,
  work: string,
): Promise<TableMergeResult> {
  const { config, log } = run.deps;
  let state = leased;
  mkdirSync(work, { recursive: true });
  if (state.pending) log.info('publishing an Iceberg commit a crashed merge left behind', { table: formatTableRef(table), metadata: state.metadataKey });
  state = await settled(run, table, state, ledger);
  // A late write of a run that lost its lease can have moved version-hint.text back: put it right.
  if (state.metadataKey) await publish(run.store, { metadataKey: state.metadataKey, version: versionOf(state.metadataKey) }, true);
  // A rewrite in progress fixed its cut: it is finished before anything else is merged.
  if (state.rewrite) return await continueRewrite(run, table, state, ledger);
  // Others' compactions and expiries (SLUICE_ICEBERG_MAINTENANCE=catalog): the merge builds on them.
  if (config.iceberg.maintenance === 'catalog' && state.metadataKey) {
    const maintained = await run.catalog.maintained?.(table, { metadataKey: state.metadataKey });
    if (maintained) state = await adopt(run, table, state, maintained, state);
  }
  // A run that read its cut earlier (runs may overlap) must not move the ledger back to it.
  if (state.commitSeq > cut.commitSeq || (state.position && compareEpochPositions({ epoch: state.epoch, position: state.position }, cut) > 0))
    return { table, status: 'up-to-date', commitSeq: state.commitSeq, metadataKey: state.metadataKey };
  const binlog = await run.changeLog.binlogObjects(table, state.commitSeq, cut.commitSeq);
  const pages = await pageObjects(run, table, cut, new Set(state.jobs));
  if (pages.waiting.length)
    return {
      table,
      status: 'held-back',
      reason: `snapshot ${pages.waiting.join(', ')} has pages past the committed position; merged once the poller passes them`,
    };
  const keys = [...binlog.keys, ...pages.keys];
  const moved = (extra: Partial<MergeAdvance> = {}): MergeAdvance => ({
    commitSeq: cut.commitSeq,
    position: cut.position,
    epoch: cut.epoch,
    jobs: [...state.jobs, ...pages.complete],
    schemaVersion: state.schemaVersion,
    gone: state.gone,
    metadataKey: state.metadataKey,
    ...extra,
  });
  if (!keys.length) {
    const maintained = await maintain(run, table, state, moved());
    if (maintained) return maintained;
    // Nothing of this table in the new commits: move its offset so the next run starts there.
    const position = state.position && compareEpochPositions(cut, { epoch: state.epoch, position: state.position }) === 0;
    if (!position || cut.commitSeq !== state.commitSeq || pages.complete.length) await moveLedger(ledger, state, moved());
    return { table, status: 'up-to-date', commitSeq: cut.commitSeq, metadataKey: state.metadataKey };
  }
  const events = binlog.events + pages.events;
  const dir = join(work, 'events');
  let files: EventFiles | undefined;
  // A catalog that places tables gets its rewrites written whole: rewrite buckets are staged under sluice's own location.
  if (run.deps.buckets && !run.catalog.locate && events > config.iceberg.bucketRows) {
    let base: RewriteBase | undefined;
    // Only a table the buckets can split is scanned for a reset (a keyless table, or one whose key
    // or columns changed in its history, is written whole anyway).
    const splittable = async () => {
      const history = await tableHistory(
        { s3: run.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
        { table, keys, shape: binlog.shape },
      );
      return history !== undefined && bucketCount(config, events, history) > 1;
    };
    if (state.metadataKey && (await splittable())) {
      mkdirSync(dir, { recursive: true });
      files = await downloadObjects(run.deps.s3, config.bucket, keys, dir);
      base = await resetBase(run, table, state, files, work);
    }
    if (!state.metadataKey ? !state.gone : base) {
      // The buckets download what they read themselves: one copy of the log on local disk, not two.
      if (files) {
        rmSync(dir, { recursive: true, force: true });
        files = undefined;
      }
      const split = await planRewrite(run, table, state, ledger, { keys, shape: binlog.shape, ...(base ? { base } : {}) }, events, moved());
      if (split) return split;
    }
  }
  const duck = await Duck.open(work);
  try {
    const history = await tableHistory(
      { s3: run.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
      { table, keys, shape: binlog.shape },
    );
    if (!history) throw new SluiceError(ErrorCode.MATERIALIZE_HISTORY, `${formatTableRef(table)} has events but no schema history`);
    if (!files) {
      mkdirSync(dir, { recursive: true });
      files = await downloadObjects(run.deps.s3, config.bucket, keys, dir);
    }
    await duck.conn.run(loadEventsSql('e_ev', files));
    const staged = await stage(run, table, state, cut, duck.conn, history, work, new Set(moved().jobs));
    return await commit(run, table, state, ledger, staged, moved({ schemaVersion: staged.schemaVersion, gone: staged.gone }));
  } finally {
    duck.close();
  }
}
