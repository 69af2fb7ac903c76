import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { mergeLedger } from '../../commit/ledgers.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { type EventFiles, loadEventsSql } from '../../materialize/events.ts';
import { GONE_KINDS } from '../../materialize/rule.ts';
import { tableHistory } from '../../materialize/table.ts';
import type { RewriteBuckets } from '../../state/iceberg-buckets.ts';
import type { MergeAdvance, MergeState, RewriteRecord } from '../../state/iceberg-store.ts';
import { loadVersion, stageBuckets, versionOf } from '../table/table.ts';
import { commit } from './commit.ts';
import {
  bucketCount,
  deleteUnrecorded,
  doneBuckets,
  planKey,
  type RewriteBase,
  type RewriteDeps,
  type RewritePlan,
  readPlan,
  removeRewrite,
  rewriteCleanup,
  rewriteTarget,
  writeBuckets,
} from './rewrite.ts';
import type { MergeRun } from './run.ts';
import { icebergLocation } from './spec.ts';
import { discardUncommitted } from './stage.ts';
import { KEEP_COLUMNS, type StagedMerge, type TableMergeResult } from './types.ts';

/* The merge's side of a rewrite split into buckets (lib/iceberg/merge/rewrite.ts): whether to split, recording it, writing buckets and committing them once. */

/** What lib/iceberg/merge/rewrite.ts needs of this run. */
function rewriteDeps(run: MergeRun, buckets: RewriteBuckets): RewriteDeps {
  const { config, s3, merges, log, faults, workDir, invoke } = run.deps;
  return { config, s3, merges, buckets, log, clock: run.clock, faults, workDir, invoke };
}

/**
 * Whether the new events of a table with a committed version rewrite it (`stage` would: after a
 * reset, or for a new table under a name that was gone), read from their control events alone,
 * and if so what the rewrite builds on; undefined when they are merged another way, or the table
 * is one a split cannot replace (its files where a catalog placed them, or others' maintenance
 * moving it while the buckets are written).
 */
export async function resetBase(run: MergeRun, table: TableRef, state: MergeState, files: EventFiles, work: string): Promise<RewriteBase | undefined> {
  const metadataKey = state.metadataKey;
  if (!metadataKey || run.config.iceberg.maintenance === 'catalog') return undefined;
  const current = await loadVersion(run.store, metadataKey);
  if (run.store.keyOf(current.metadata.location) !== icebergLocation(run.config.prefix, table)) return undefined;
  const dir = join(work, 'markers');
  mkdirSync(dir, { recursive: true });
  const instance = await DuckDBInstance.create(join(dir, 'markers.duckdb'), { temp_directory: join(dir, 'spill') });
  const duck = await instance.connect();
  try {
    await duck.run(loadEventsSql('m_ev', files, 'markers'));
    const last = (await duck.runAndReadAll(`SELECT kind FROM m_ev WHERE op = 't' ORDER BY seq DESC LIMIT 1`)).getRowObjects()[0];
    const kind = last === undefined ? undefined : last.kind === null ? null : String(last.kind);
    // As `stage`: a table emptied (dropped, renamed away) is truncated whole; no reset, an incremental merge.
    if (kind !== undefined && GONE_KINDS.has(kind ?? '')) return undefined;
    if (kind === undefined && !state.gone) return undefined;
    const recreate = kind !== undefined && !KEEP_COLUMNS.has(kind ?? '');
    return { metadataKey, from: recreate ? undefined : state.schemaVersion, recreate };
  } finally {
    duck.closeSync();
    instance.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A first load, or a reset of an existing table (`plan.base`), of more than
 * SLUICE_ICEBERG_BUCKET_ROWS events: records a rewrite split into buckets and works on it;
 * undefined when it is written whole.
 */
export async function planRewrite(
  run: MergeRun,
  table: TableRef,
  state: MergeState,
  ledger: ReturnType<typeof mergeLedger>,
  plan: RewritePlan,
  events: number,
  advance: MergeAdvance,
): Promise<TableMergeResult | undefined> {
  const { config } = run.deps;
  const history = await tableHistory(
    { s3: run.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
    { table, keys: [...plan.keys], shape: plan.shape },
  );
  if (!history) return undefined;
  const count = bucketCount(config, events, history);
  if (count <= 1) return undefined;
  const location = icebergLocation(config.prefix, table);
  const tag = run.tagFor(state);
  await discardUncommitted(run, location, state, state.metadataKey ? versionOf(state.metadataKey) : 0);
  const rewrite: RewriteRecord = { tag, plan: planKey(location, tag), buckets: count, timestampMs: run.clock(), advance };
  await run.store.put(rewrite.plan, JSON.stringify(plan));
  const started = await run.deps.merges.startRewrite(
    { sourceId: config.sourceId, owner: run.owner, expectVersion: state.version, now: run.clock() },
    state,
    rewrite,
  );
  run.deps.log.info(plan.base ? 'Iceberg rewrite after a reset split into buckets' : 'Iceberg first load split into buckets', {
    table: formatTableRef(table),
    buckets: count,
    events,
    workers: config.iceberg.workers,
  });
  return continueRewrite(run, table, started, ledger);
}

/** Writes buckets of the rewrite in progress (with the workers it invokes) and, once every one is done, commits them as one snapshot. */
export async function continueRewrite(run: MergeRun, table: TableRef, state: MergeState, ledger: ReturnType<typeof mergeLedger>): Promise<TableMergeResult> {
  const { config, log } = run.deps;
  const rewrite = state.rewrite as RewriteRecord;
  const buckets = run.deps.buckets;
  if (!buckets) throw new SluiceError(ErrorCode.ASSERTION, `${formatTableRef(table)} has a rewrite in progress but this run has no bucket store`);
  const deps = rewriteDeps(run, buckets);
  if (run.deps.invoke)
    for (let w = 1; w < Math.min(config.iceberg.workers, rewrite.buckets); w++) await run.deps.invoke({ rewrite: { db: table.db, table: table.table } });
  const max = run.options.maxBuckets ?? Number.POSITIVE_INFINITY;
  const outOfTime = () => run.options.budgetMs !== undefined && run.clock() - run.started >= run.options.budgetMs;
  let total = 0;
  for (;;) {
    run.checkLease();
    const { written, open } = await writeBuckets(deps, table, rewrite, run.owner, (w) => total + w < max && (total + w === 0 || !outOfTime()));
    total += written;
    if (!open) break;
    if (total >= max || outOfTime())
      return {
        table,
        status: 'busy',
        mode: 'rewrite',
        reason: `rewrite in progress (${open} of ${rewrite.buckets} buckets left); the next run continues it`,
      };
    await new Promise((resolve) => setTimeout(resolve, 500)); // others hold the rest
  }
  const records = await doneBuckets(deps, table, rewrite);
  if (!records) throw new SluiceError(ErrorCode.ASSERTION, `a bucket of the rewrite ${rewrite.tag} of ${formatTableRef(table)} is not done after all were`);
  const location = icebergLocation(config.prefix, table);
  const stray = await deleteUnrecorded(deps, run.store, location, rewrite, records);
  if (stray) log.info('deleted files of rewrite bucket attempts that did not record', { table: formatTableRef(table), objects: stray });
  const gone = records.every((r) => r.gone);
  if ((!gone || state.metadataKey) && records.some((r) => r.gone))
    throw new SluiceError(ErrorCode.ASSERTION, `buckets of the rewrite ${rewrite.tag} say the table is gone, which only a first load may find`);
  const to = Math.max(...records.map((r) => r.to));
  let staged: StagedMerge = { version: undefined, schemaVersion: to, gone: true, mode: 'empty', stats: [] };
  if (!gone) {
    const plan = await readPlan(run.store, rewrite);
    const history = await tableHistory(
      { s3: run.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
      { table, keys: [...plan.keys], shape: plan.shape },
    );
    if (!history) throw new SluiceError(ErrorCode.MATERIALIZE_HISTORY, `${formatTableRef(table)} has events but no schema history`);
    // As each bucket was staged: on the version the rewrite replaces (nothing else commits
    // meanwhile), in the newest version's schema (every version has its columns, `bucketCount`).
    const target = await rewriteTarget(run.store, plan, history, location);
    if (target.current?.metadataKey !== state.metadataKey)
      throw new SluiceError(
        ErrorCode.ASSERTION,
        `the rewrite ${rewrite.tag} of ${formatTableRef(table)} replaces ${plan.base?.metadataKey}, not the committed ${state.metadataKey}`,
      );
    // An overwrite on top of the committed snapshot: every current file is replaced, older snapshots stay readable.
    const version = await stageBuckets(
      { store: run.store },
      target.current,
      target.spec,
      records.map((r) => r.staged),
      { tag: rewrite.tag, timestampMs: rewrite.timestampMs, summary: { 'sluice.commit-seq': String(rewrite.advance.commitSeq) } },
    );
    staged = { version: version.version, schemaVersion: to, gone: false, mode: version.stats.rowsWritten ? 'rewrite' : 'empty', stats: [version] };
  }
  // No housekeeping here: a compaction would rewrite in this one invocation the whole table the
  // buckets split (a table of more than compactFiles buckets has that many files at least), and an
  // expiry staged under this run's tag would replace the rewrite's own cleanup list and outlive a
  // crash before the commit; the next merge expires.
  const cleanup = await rewriteCleanup(run.store, location, rewrite, records);
  const result = await commit(run, table, state, ledger, staged, { ...rewrite.advance, schemaVersion: to, gone, cleanup }, false);
  await removeRewrite(deps, run.store, table, rewrite, records);
  return result;
}
