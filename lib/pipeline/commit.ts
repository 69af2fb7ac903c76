import type { S3Client } from '@aws-sdk/client-s3';
import type { Log } from '../log.ts';
import { dataKey, manifestKey, stagingRoot } from '../sink/s3/keys.ts';
import { copyObject, deleteObjects, listKeys, putJson } from '../sink/s3/objects.ts';
import type { BinlogPosition } from '../source/mysql/position.ts';
import type { Fence, PendingCommit, SourceState, StateStore } from '../state/store.ts';
import type { Batch } from './batch.ts';
import type { Faults } from './faults.ts';

/*
 * The commit protocol — shared by the poller (and, later, the snapshot).
 *
 *   1. stage    Write the batch's data objects and its manifest under _staging/<source>/<run>/.
 *               Nothing a reader lists (tables/, manifests/) changes.
 *   2. commit   ONE conditional write on the source's state item: position := batch end,
 *               commitSeq := commitSeq + 1, pending := [staging → final copies], on condition that
 *               version = the version we read, we hold an unexpired lease, and no pending exists.
 *   3. rename   Copy each staging object to its final key (manifest last), delete the staging
 *               objects, then clear `pending` (another conditional write).
 *
 * Invariants:
 *   - A batch's events become visible iff its commit (2) succeeded, and the offset moved past them in
 *     the same write; so no event is both re-read and visible, and none is skipped.
 *   - Final keys are a function of (source, commitSeq, table), fixed in (2); redoing (3) any number
 *     of times rewrites identical objects and never duplicates.
 *   - A pending record blocks further commits until (3) completes, so renames happen in commit order.
 *
 * Crash anywhere: before (2) → staging garbage, deleted by the next run's recovery; the next run
 * re-reads the batch from the old offset. After (2) → the next run finds `pending` and rolls (3)
 * forward before reading anything.
 */

export interface CommitContext {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly prefix: string;
  readonly store: StateStore;
  readonly owner: string;
  readonly faults: Faults;
  readonly log: Log;
  readonly clock: () => number;
}

const fence = (ctx: CommitContext, state: SourceState): Fence => ({
  sourceId: state.sourceId,
  owner: ctx.owner,
  expectVersion: state.version,
  now: ctx.clock(),
});

/** Manifest v1: what one commit contains. Listing manifests in key order is the ordered change feed. */
export interface Manifest {
  format: 'sluice/v1';
  source: string;
  commit_seq: number;
  committed_at: string;
  position: { from: BinlogPosition; to: BinlogPosition };
  events: number;
  transactions: number;
  objects: { key: string; db: string; table: string; events: number; bytes: number; seq_min: string; seq_max: string }[];
  tables: Record<string, { key: string[] | null; columns: { name: string; type: string }[] }>;
}

/** Stages, commits and renames one batch; returns the new state. */
export async function commitBatch(ctx: CommitContext, state: SourceState, batch: Batch, to: BinlogPosition): Promise<SourceState> {
  const started = ctx.clock();
  await batch.finish();
  const commitSeq = state.commitSeq + 1;
  const tables = [...batch.tables.values()];
  const manifest: Manifest = {
    format: 'sluice/v1',
    source: state.sourceId,
    commit_seq: commitSeq,
    committed_at: new Date(ctx.clock()).toISOString(),
    position: { from: batch.from, to },
    events: batch.events,
    transactions: batch.transactions,
    objects: tables.map(({ shape, object, seqMin, seqMax }) => ({
      key: dataKey(ctx.prefix, shape.db, shape.table, state.sourceId, commitSeq),
      db: shape.db,
      table: shape.table,
      events: object.events,
      bytes: object.bytes,
      seq_min: seqMin,
      seq_max: seqMax,
    })),
    tables: Object.fromEntries(
      tables.map(({ shape }) => [
        `${shape.db}.${shape.table}`,
        { key: shape.key?.map((i) => shape.columns[i]?.name ?? '') ?? null, columns: shape.columns.map((c) => ({ name: c.name, type: c.sqlType })) },
      ]),
    ),
  };
  const stagedManifest = batch.stagingKey('manifest.json');
  await putJson(ctx.s3, ctx.bucket, stagedManifest, manifest);
  await ctx.faults.hit('after-staging');

  const pending: PendingCommit = {
    commitSeq,
    copies: [
      ...tables.map((t, i) => ({ from: t.object.key, to: manifest.objects[i]?.key ?? '' })),
      { from: stagedManifest, to: manifestKey(ctx.prefix, state.sourceId, commitSeq) },
    ],
  };
  const staged = ctx.clock();
  const committed = await ctx.store.commit(fence(ctx, state), { position: to, pending });
  const stored = ctx.clock();
  await ctx.faults.hit('after-commit');
  const done = await finishPending(ctx, committed);
  ctx.log.info('committed batch', {
    commitSeq,
    events: batch.events,
    transactions: batch.transactions,
    objects: tables.length,
    size: batch.size,
    position: to,
    ms: { stage: staged - started, commit: stored - staged, rename: ctx.clock() - stored },
  });
  return done;
}

/** Step 3: copy staging → final (idempotent), delete staging, clear `pending`. Also the roll-forward. */
export async function finishPending(ctx: CommitContext, state: SourceState): Promise<SourceState> {
  const pending = state.pending;
  if (!pending) return state;
  for (const [i, copy] of pending.copies.entries()) {
    await copyObject(ctx.s3, ctx.bucket, copy.from, copy.to);
    if (i === 0) await ctx.faults.hit('mid-rename');
  }
  await ctx.faults.hit('before-clear');
  await deleteObjects(
    ctx.s3,
    ctx.bucket,
    pending.copies.map((c) => c.from),
  );
  return ctx.store.clearPending(fence(ctx, state));
}

/** Moves the position with no data (heartbeat), so a quiet or filtered source never parks on an old binlog. */
export function commitPosition(ctx: CommitContext, state: SourceState, to: BinlogPosition): Promise<SourceState> {
  return ctx.store.commit(fence(ctx, state), { position: to });
}

/**
 * Recovery, run under the lease before reading: roll a committed batch forward, then delete staging
 * objects of runs that never committed. Returns the state to continue from.
 */
export async function recover(ctx: CommitContext, state: SourceState): Promise<SourceState> {
  let current = state;
  if (current.pending) {
    ctx.log.info('rolling forward a committed batch', { commitSeq: current.pending.commitSeq });
    current = await finishPending(ctx, current);
  }
  const garbage: string[] = [];
  for await (const key of listKeys(ctx.s3, ctx.bucket, stagingRoot(ctx.prefix, state.sourceId))) garbage.push(key);
  if (garbage.length) {
    ctx.log.info('deleting staging objects of uncommitted runs', { objects: garbage.length });
    await deleteObjects(ctx.s3, ctx.bucket, garbage);
  }
  return current;
}
