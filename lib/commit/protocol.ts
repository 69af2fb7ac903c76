import type { S3Client } from '@aws-sdk/client-s3';
import { buildManifest, type ManifestPlacement } from '../format/manifest.ts';
import type { Log } from '../log.ts';
import type { Batch } from '../sink/s3/batch.ts';
import { copyObject, deleteObjects, listKeys, putJson } from '../sink/s3/objects.ts';
import type { StagingSweep } from '../sink/s3/staging-sweep.ts';
import type { PendingCommit } from '../state/store.ts';
import type { Faults } from './faults.ts';

/*
 * The commit protocol: the one way anything sluice writes becomes visible. Two callers go through
 * it — the poller committing binlog batches (lib/capture/) and the snapshot committing pages
 * (lib/snapshot/) — and differ only in the Ledger they pass: what a commit advances (the source's
 * position and commit count, or a chunk's cursor and page count).
 *
 *   1. stage    Write the commit's data objects and its manifest under _staging/. Nothing a reader
 *               lists (tables/, manifests/) changes.
 *   2. commit   ONE conditional write on the ledger's item: advance it, count one more commit, and
 *               record `pending` := [staging → final copies], on condition that its version is the
 *               one we read, we hold an unexpired lease on it, and no pending record exists.
 *   3. rename   Copy each staging object to its final key (manifest last), settle what else the
 *               commit promised (the snapshot jobs its DDL asked for), delete the staging objects —
 *               at once, or (the poller, ctx.sweep) in bulk later: once copied they are never read
 *               again, and whatever a crash leaves is deleted by the next writer's recovery.
 *   4. clear    Remove `pending` (another fenced write).
 *
 * Invariants:
 *   - A commit's events become visible iff (2) succeeded, and the ledger moved past them in the same
 *     write; so no event is both re-read and visible, and none is skipped.
 *   - Final keys are a function of the ledger's count, fixed before (2) and taken by (2); redoing (3)
 *     any number of times rewrites identical objects and never duplicates.
 *   - A pending record blocks the ledger's next commit until (4), so renames happen in commit order.
 *     (The snapshot overlaps (3) of page N with reading page N+1; it must finish (3)–(4) before
 *     committing N+1, and the no-pending condition enforces that anyway.)
 *
 * Crash anywhere: before (2) → staging garbage, deleted by the next writer's recovery, which re-reads
 * the data from the ledger's old position. After (2) → the next writer finds `pending` and rolls
 * (3)–(4) forward (rollForward) before reading anything.
 *
 * A third caller, the Iceberg merge (lib/iceberg/merge/merge.ts), stages its files at their final keys
 * (deterministic names nobody reads until a metadata file that lists them is current), so its
 * commit has nothing to copy: `commitInPlace` runs steps 2–4 with an empty copy list, and the
 * ledger's settle publishes the committed metadata.
 *
 * Fault points (lib/commit/faults.ts) sit here and nowhere else, so tests and the chaos suite crash
 * both callers at the same steps.
 */

/** What a commit advances, kept in one item that the protocol's writes are fenced on. */
export interface Ledger<S extends { readonly pending?: PendingCommit }, A> {
  /**
   * Step 2: moves the ledger by `advance` in one conditional write, fenced by `state`'s version and
   * the lease, refused while a commit is pending. With `pending`, it also counts one more commit
   * (the number the staged keys were made with) and records the renames.
   */
  commit(state: S, advance: A, pending?: PendingCommit): Promise<S>;
  /**
   * Step 3, after the copies: what else the committed commit promised (the snapshot jobs its DDL
   * asked for). Idempotent, like the copies: a roll-forward may run it again.
   */
  settle?(state: S): Promise<void>;
  /** Step 4: removes the pending record once its renames are done (fenced the same way). */
  clear(state: S): Promise<S>;
}

export interface CommitContext {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly faults: Faults;
  readonly log: Log;
  readonly clock: () => number;
  /** Takes a commit's staging objects once copied, to delete them in bulk; without it they are deleted at once. */
  readonly sweep?: StagingSweep;
}

/** Where a commit lands: its manifest's placement and the final keys of its objects. */
export interface CommitTarget {
  readonly source: string;
  readonly placement: ManifestPlacement;
  dataKey(db: string, table: string): string;
  readonly manifestKey: string;
  /** More objects the commit makes visible with its data (schema history, catalog): staged and copied the same way. */
  readonly documents?: readonly { readonly key: string; readonly body: unknown }[];
  /** Snapshot jobs the commit asks for; created when it settles (see Ledger.settle). */
  readonly snapshots?: PendingCommit['snapshots'];
}

/** Step 1: finishes the batch's staging objects and writes its manifest next to them. */
export async function stage(ctx: CommitContext, batch: Batch, target: CommitTarget): Promise<PendingCommit> {
  await batch.finish();
  const tables = [...batch.tables.values()].map(({ shape, object, seqMin, seqMax }) => ({
    shape,
    from: object.key,
    key: target.dataKey(shape.db, shape.table),
    events: object.events,
    bytes: object.bytes,
    seqMin,
    seqMax,
  }));
  const documents = target.documents ?? [];
  for (const [i, document] of documents.entries()) await putJson(ctx.s3, ctx.bucket, batch.stagingKey(`document-${i}.json`), document.body);
  const stagedManifest = batch.stagingKey('manifest.json');
  await putJson(ctx.s3, ctx.bucket, stagedManifest, buildManifest(target.source, ctx.clock(), target.placement, tables));
  await ctx.faults.hit('after-staging');
  // The manifest's copy comes last, so a visible manifest implies visible data (and schema).
  return {
    copies: [
      ...tables.map((t) => ({ from: t.from, to: t.key })),
      ...documents.map((d, i) => ({ from: batch.stagingKey(`document-${i}.json`), to: d.key })),
      { from: stagedManifest, to: target.manifestKey },
    ],
    ...(target.snapshots?.length ? { snapshots: target.snapshots } : {}),
  };
}

/** Step 2: the one conditional write that makes a staged commit real. */
export async function commitStaged<S extends { readonly pending?: PendingCommit }, A>(
  ctx: CommitContext,
  ledger: Ledger<S, A>,
  state: S,
  advance: A,
  staged: PendingCommit,
): Promise<S> {
  const committed = await ledger.commit(state, advance, staged);
  await ctx.faults.hit('after-commit');
  return committed;
}

/**
 * Steps 3–4 for a committed commit: the one just made, or one a crashed writer left behind. Copies
 * are idempotent (lib/sink/s3/objects.ts), so this may run any number of times.
 */
export async function rollForward<S extends { readonly pending?: PendingCommit }>(ctx: CommitContext, ledger: Ledger<S, unknown>, state: S): Promise<S> {
  if (!state.pending) return state;
  const { copies } = state.pending;
  for (const [i, copy] of copies.entries()) {
    await copyObject(ctx.s3, ctx.bucket, copy.from, copy.to);
    if (i === 0) await ctx.faults.hit('mid-rename');
  }
  await ledger.settle?.(state);
  await ctx.faults.hit('before-clear');
  const staging = copies.map((c) => c.from);
  if (ctx.sweep) await ctx.sweep.add(staging);
  else await deleteObjects(ctx.s3, ctx.bucket, staging);
  return ledger.clear(state);
}

/** Steps 1–4 in one go, for a caller that does not overlap renames with reading (the poller). */
export async function commit<S extends { readonly pending?: PendingCommit }, A>(
  ctx: CommitContext,
  ledger: Ledger<S, A>,
  state: S,
  batch: Batch,
  target: CommitTarget,
  advance: A,
  details: Record<string, unknown>,
): Promise<S> {
  const started = ctx.clock();
  const staged = await stage(ctx, batch, target);
  const stagedAt = ctx.clock();
  const committed = await commitStaged(ctx, ledger, state, advance, staged);
  const committedAt = ctx.clock();
  const done = await rollForward(ctx, ledger, committed);
  ctx.log.info('committed batch', {
    ...details,
    events: batch.events,
    objects: batch.tables.size,
    size: batch.size,
    ms: { stage: stagedAt - started, commit: committedAt - stagedAt, rename: ctx.clock() - committedAt },
  });
  return done;
}

/**
 * Steps 2–4 for a commit whose objects the caller staged at their final keys itself (the Iceberg
 * merge): the fenced write records an empty pending record, the roll-forward only settles (publishes).
 */
export async function commitInPlace<S extends { readonly pending?: PendingCommit }, A>(
  ctx: CommitContext,
  ledger: Ledger<S, A>,
  state: S,
  advance: A,
): Promise<S> {
  await ctx.faults.hit('after-staging');
  return rollForward(ctx, ledger, await commitStaged(ctx, ledger, state, advance, { copies: [] }));
}

/** Moves the ledger with no data: the poller's heartbeat, a chunk's empty last page. */
export function advance<S extends { readonly pending?: PendingCommit }, A>(ledger: Ledger<S, A>, state: S, to: A): Promise<S> {
  return ledger.commit(state, to);
}

/**
 * Recovery, under the lease before a writer reads anything: roll a committed commit forward, then
 * delete the writer's staging objects of runs that never committed.
 */
export async function recover<S extends { readonly pending?: PendingCommit }>(
  ctx: CommitContext,
  ledger: Ledger<S, unknown>,
  state: S,
  stagingRoot: string,
): Promise<S> {
  if (state.pending) ctx.log.info('rolling forward a committed commit', { staging: stagingRoot, objects: state.pending.copies.length });
  const current = await rollForward(ctx, ledger, state);
  const garbage: string[] = [];
  for await (const key of listKeys(ctx.s3, ctx.bucket, stagingRoot)) garbage.push(key);
  if (garbage.length) {
    ctx.log.info('deleting staging objects of uncommitted runs', { root: stagingRoot, objects: garbage.length });
    await deleteObjects(ctx.s3, ctx.bucket, garbage);
  }
  return current;
}
