import type { S3Client } from '@aws-sdk/client-s3';
import type { BinlogPosition } from '../core/position.ts';
import type { Log } from '../log.ts';
import type { Batch } from '../sink/s3/batch.ts';
import { binlogStaging, dataKey, manifestKey } from '../sink/s3/keys.ts';
import { copyObject, deleteObjects, listKeys, putJson } from '../sink/s3/objects.ts';
import type { Fence, PendingCommit, SourceState, StateStore } from '../state/store.ts';
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

/** Manifest v1: what one commit contains (docs/FORMAT.md). */
export interface Manifest {
  format: 'sluice/v1';
  source: string;
  committed_at: string;
  events: number;
  objects: { key: string; db: string; table: string; events: number; bytes: number; seq_min: string; seq_max: string }[];
  tables: Record<string, { key: string[] | null; columns: { name: string; type: string }[] }>;
  /** Binlog commits. */
  commit_seq?: number;
  position?: { from: BinlogPosition; to: BinlogPosition };
  transactions?: number;
  /** Snapshot pages. */
  snapshot?: { id: string; table: string; chunk: number; page: number; watermark: BinlogPosition; after: unknown; last: unknown };
}

/**
 * Step 1, shared: finish a batch's staging objects and write its manifest next to them. Returns the
 * copies that step 3 must make, the manifest's last so a visible manifest implies visible data.
 */
export async function stage(
  ctx: CommitContext,
  batch: Batch,
  sourceId: string,
  finalKey: (db: string, table: string) => string,
  manifestKey: string,
  extra: Partial<Manifest>,
): Promise<PendingCopy[]> {
  await batch.finish();
  const tables = [...batch.tables.values()];
  const manifest: Manifest = {
    format: 'sluice/v1',
    source: sourceId,
    committed_at: new Date(ctx.clock()).toISOString(),
    events: batch.events,
    ...extra,
    objects: tables.map(({ shape, object, seqMin, seqMax }) => ({
      key: finalKey(shape.db, shape.table),
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
  return [...tables.map((t, i) => ({ from: t.object.key, to: manifest.objects[i]?.key ?? '' })), { from: stagedManifest, to: manifestKey }];
}

export type PendingCopy = PendingCommit['copies'][number];

/** Step 3, shared: copy staging → final (idempotent), then delete the staging objects. */
export async function applyCopies(ctx: Pick<CommitContext, 's3' | 'bucket' | 'faults'>, copies: readonly PendingCopy[]): Promise<void> {
  for (const [i, copy] of copies.entries()) {
    await copyObject(ctx.s3, ctx.bucket, copy.from, copy.to);
    if (i === 0) await ctx.faults.hit('mid-rename');
  }
  await ctx.faults.hit('before-clear');
  await deleteObjects(
    ctx.s3,
    ctx.bucket,
    copies.map((c) => c.from),
  );
}

/** Deletes everything under a writer's own staging area (work of runs that never committed). */
export async function cleanStaging(ctx: Pick<CommitContext, 's3' | 'bucket' | 'log'>, root: string): Promise<void> {
  const garbage: string[] = [];
  for await (const key of listKeys(ctx.s3, ctx.bucket, root)) garbage.push(key);
  if (garbage.length) {
    ctx.log.info('deleting staging objects of uncommitted runs', { root, objects: garbage.length });
    await deleteObjects(ctx.s3, ctx.bucket, garbage);
  }
}

/** The poller's commit: stage, one conditional write (offset + pending), renames, clear. */
export async function commitBatch(ctx: CommitContext, state: SourceState, batch: Batch, to: BinlogPosition): Promise<SourceState> {
  const started = ctx.clock();
  const commitSeq = state.commitSeq + 1;
  const copies = await stage(
    ctx,
    batch,
    state.sourceId,
    (db, table) => dataKey(ctx.prefix, db, table, state.sourceId, commitSeq),
    manifestKey(ctx.prefix, state.sourceId, commitSeq),
    {
      commit_seq: commitSeq,
      position: { from: batch.from ?? to, to },
      transactions: batch.transactions,
    },
  );
  const staged = ctx.clock();
  const committed = await ctx.store.commit(fence(ctx, state), { position: to, pending: { commitSeq, copies } });
  const stored = ctx.clock();
  await ctx.faults.hit('after-commit');
  const done = await finishPending(ctx, committed);
  ctx.log.info('committed batch', {
    commitSeq,
    events: batch.events,
    transactions: batch.transactions,
    objects: batch.tables.size,
    size: batch.size,
    position: to,
    ms: { stage: staged - started, commit: stored - staged, rename: ctx.clock() - stored },
  });
  return done;
}

/** Step 3 for the poller, and its roll-forward after a crash. */
async function finishPending(ctx: CommitContext, state: SourceState): Promise<SourceState> {
  if (!state.pending) return state;
  await applyCopies(ctx, state.pending.copies);
  return ctx.store.clearPending(fence(ctx, state));
}

/** Moves the position with no data (heartbeat), so a quiet or filtered source never parks on an old binlog. */
export function commitPosition(ctx: CommitContext, state: SourceState, to: BinlogPosition): Promise<SourceState> {
  return ctx.store.commit(fence(ctx, state), { position: to });
}

/**
 * Recovery, run under the lease before reading: roll a committed batch forward, then delete the
 * poller's staging objects of runs that never committed. Returns the state to continue from.
 */
export async function recover(ctx: CommitContext, state: SourceState): Promise<SourceState> {
  let current = state;
  if (current.pending) {
    ctx.log.info('rolling forward a committed batch', { commitSeq: current.pending.commitSeq });
    current = await finishPending(ctx, current);
  }
  await cleanStaging(ctx, binlogStaging(ctx.prefix, state.sourceId));
  return current;
}
