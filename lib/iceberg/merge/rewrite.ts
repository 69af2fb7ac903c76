import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { type Faults, noFaults } from '../../commit/faults.ts';
import { acquireLease, bucketLease } from '../../commit/lease.ts';
import type { Config } from '../../config/config.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { AssertionError, LeaseLostError } from '../../errors.ts';
import type { ManifestTable } from '../../format/manifest.ts';
import type { Log } from '../../log.ts';
import { downloadObjects, loadEventsSql } from '../../materialize/events.ts';
import type { TableHistory } from '../../materialize/history.ts';
import { sqlString } from '../../materialize/projection.ts';
import { materializeRule } from '../../materialize/rule.ts';
import { tableHistory } from '../../materialize/table.ts';
import { type ObjectStore, s3ObjectStore } from '../../sink/s3/object-store.ts';
import { listKeys } from '../../sink/s3/objects.ts';
import type { RewriteBuckets } from '../../state/iceberg-buckets.ts';
import type { MergeStore, RewriteRecord } from '../../state/iceberg-store.ts';
import { type BucketFiles, loadVersion, stageBucket } from '../table/table.ts';
import { BucketClaim } from './bucket-claim.ts';
import { icebergLocation, spec } from './spec.ts';

/*
 * A first load split into buckets, so that a table too large for one invocation is written by
 * several, in turn or at once, and still committed as ONE snapshot. A reset of an existing table
 * (TRUNCATE, re-snapshot, a new table under the name) is split the same way; its plan names the
 * committed version every bucket and the final snapshot are staged on (`RewriteBase`), and that
 * snapshot overwrites every current file on top of it (nothing else commits meanwhile).
 *
 * The merge that finds a first load of more than SLUICE_ICEBERG_BUCKET_ROWS events writes a plan — the change-log
 * objects up to its cut — and records a rewrite on the table's ledger item (tag, plan, bucket
 * count, and the advance its commit will write) in one fenced write. From then on the cut is fixed:
 * every merge of the table continues that rewrite until it commits, and nothing else commits.
 *
 * Bucket n holds the rows whose key hashes to n (lib/materialize/events.ts, `EventBucket`): every
 * event of a key is in one bucket, control events in all, so the materialization rule over a
 * bucket's events gives exactly that bucket's rows of the table. A bucket is written by whoever
 * leases its item (lib/state/iceberg-buckets.ts) — the merge or a worker it invoked — as range
 * files named by the rewrite's tag, the bucket and the writer's attempt; the bucket is done in the
 * write that records those files, fenced by its lease. The rewrite commits through the merge's
 * usual commit (one fenced ledger write; the publish after it), listing every recorded bucket's
 * files in one snapshot; that write also removes the rewrite.
 *
 * Exactly once. Readers only see committed metadata, and the only metadata naming bucket files is
 * the final one, staged from the recorded buckets after all are done. A crash while a bucket is
 * written leaves it not done: the next writer redoes it under a new attempt name (the lost
 * attempt's files are named by nobody and are deleted before the commit). A crash after the
 * record leaves it done: nobody writes it again. A crash before the commit stages the same keys
 * and bytes again (the tag and timestamp are the ledger's); after it, the roll-forward publishes.
 * The events are those of the fixed plan, so a bucket redone reads what its first attempt read.
 *
 * A bucket's record — its files with their per-column statistics, some 70 bytes per column and
 * file — is an S3 object (`metadata/<tag>-k<n>-<attempt>.json`), put before the item update that
 * names it, so the item stays the same few hundred bytes however wide the table (a 1,000-column
 * bucket's record is some 560 KB: past DynamoDB's 400 KB item limit). A crash between the two
 * leaves a record named by nobody, deleted with its attempt's files.
 *
 * Stale writers. A writer may stall past its claim (another then takes the bucket over), or keep
 * the rewrite it read while the rewrite commits (the commit then deletes the bucket items, and a
 * claim would create one again). So a claim counts only once the ledger, read after it, still
 * holds the rewrite — otherwise the writer deletes the item it made and stops; and every object a
 * writer puts is preceded by a conditional renewal of its claim (owner, version, not done). A
 * claim is current only while its bucket is not done, and the commit needs every bucket done, so
 * once a writer's claim is lost it puts nothing more, and what it put before is either deleted by
 * the commit (which lists the attempts after every bucket is done) or, when a put was in flight
 * as the claim was lost, by the writer itself when its next renewal or its record fails: a
 * writer's attempt name is its own, so deleting it never touches the winner's files.
 */

/** A bucket's record, an S3 object the bucket item names. */
interface BucketRecord {
  /** The record's own key (deleted with the rewrite's other objects once it commits). */
  readonly key: string;
  /** The table is gone at the cut (dropped, renamed away): the rewrite commits an empty table. */
  readonly gone: boolean;
  /** The schema version the bucket's events end in (the table's, at the cut, is the greatest of the buckets'). */
  readonly to: number;
  readonly staged: BucketFiles;
}

/** What the buckets read: the change-log objects up to the rewrite's cut, and the table's newest shape there. */
export interface RewritePlan {
  readonly keys: readonly string[];
  readonly shape: ManifestTable | undefined;
  /** A reset of an existing table (TRUNCATE, re-snapshot, a new table under the name): the version every file replaces. */
  readonly base?: RewriteBase;
}

/** The committed version a reset rewrite replaces, and how its columns carry over (as `stage` decides for the whole rewrite). */
export interface RewriteBase {
  readonly metadataKey: string;
  /** The schema version the table is at; undefined when no column keeps its identity. */
  readonly from: number | undefined;
  /** Every column gets a new field id (a new table under the name). */
  readonly recreate: boolean;
}

/**
 * The version a rewrite builds on and the spec of its newest schema version: every bucket and the
 * final snapshot are staged against both, so their field ids agree.
 */
export async function rewriteTarget(store: ObjectStore, plan: RewritePlan, history: TableHistory, location: string) {
  const current = plan.base ? await loadVersion(store, plan.base.metadataKey) : undefined;
  const at = current ? { home: location, files: store.keyOf(current.metadata.location) } : location;
  return { current, spec: spec(history, at, history.latest.version, plan.base?.from, plan.base?.recreate ?? false) };
}

export interface RewriteDeps {
  readonly config: Config;
  readonly s3: S3Client;
  readonly merges: MergeStore;
  readonly buckets: RewriteBuckets;
  readonly log: Log;
  readonly clock?: () => number;
  readonly faults?: Faults;
  readonly workDir?: string;
  /** Starts a worker invocation for the table's rewrite (the Lambda Invoke API; in-process in tests). */
  readonly invoke?: (event: RewriteEvent) => Promise<void>;
}

/** What a rewrite worker is invoked with. */
export interface RewriteEvent {
  readonly rewrite: { readonly db: string; readonly table: string };
}

/** The object key of a rewrite's plan. */
export const planKey = (location: string, tag: string) => `${location}/metadata/${tag}-rewrite.json`;

/** Bucket file names: the rewrite's tag, the bucket and the writing attempt. */
const bucketTag = (tag: string, n: number, attempt: string) => `${tag}-k${String(n).padStart(4, '0')}-${attempt}`;

/** The object key of the record of bucket `n`'s attempt `attempt`. */
export const recordKey = (location: string, tag: string, n: number, attempt: string) => `${location}/metadata/${bucketTag(tag, n, attempt)}.json`;

/**
 * How many buckets a first load (or reset rewrite) of `events` change-log events is split into (at least one per
 * worker); 1: written whole, as before. Only keyed tables whose every schema version has the same columns and key are split: a
 * key's events then render its key identically, and every bucket's rows are in one version.
 */
export function bucketCount(config: Config, events: number, history: TableHistory): number {
  const { workers, bucketRows } = config.iceberg;
  if (events <= bucketRows) return 1;
  const latest = history.latest;
  if (!latest.key?.length) return 1;
  const shape = (n: number) => JSON.stringify([history.version(n).key, history.version(n).columns.map((c) => [c.name, c.type])]);
  if (history.numbers().some((n) => shape(n) !== shape(latest.version))) return 1;
  return Math.max(workers, Math.ceil(events / bucketRows));
}

/** The rewrite's plan as its merge wrote it. */
export async function readPlan(store: ObjectStore, rewrite: RewriteRecord): Promise<RewritePlan> {
  const body = await store.get(rewrite.plan);
  if (!body) throw new AssertionError(`the plan ${rewrite.plan} of a rewrite in progress is missing`);
  return JSON.parse(new TextDecoder().decode(body)) as RewritePlan;
}

/**
 * Writes the rewrite's buckets that are not done and not leased by a live writer, one at a time,
 * while `more()` allows (at least one is tried). Returns how many it wrote and how many are still
 * not done (others' in flight, or left for later). Throws LeaseLostError once the rewrite is no
 * longer in progress (committed by someone else).
 */
export async function writeBuckets(
  deps: RewriteDeps,
  table: TableRef,
  rewrite: RewriteRecord,
  owner: string,
  more: (written: number) => boolean,
): Promise<{ written: number; open: number }> {
  const { config, buckets, log } = deps;
  const clock = deps.clock ?? Date.now;
  const store = s3ObjectStore(deps.s3, config.bucket);
  const plan = await readPlan(store, rewrite);
  const done = async (n: number) => (await buckets.get(config.sourceId, table, rewrite.tag, n))?.record;
  let written = 0;
  let open = 0;
  for (let n = 0; n < rewrite.buckets; n++) {
    if (await done(n)) continue;
    if (!more(written)) {
      open++;
      continue;
    }
    const lease = await acquireLease(bucketLease(buckets, config.sourceId, table, rewrite.tag, n), {
      owner,
      clock,
      leaseMs: config.iceberg.leaseMs,
      heartbeat: { log, warning: 'could not renew a rewrite bucket lease', fields: { table: formatTableRef(table), bucket: n } },
    });
    if ('busy' in lease) {
      if (!(await done(n))) open++; // another writer has it (or recorded it meanwhile)
      continue;
    }
    // Read after the claim: a commit before it would show here, one after it needs this bucket done.
    // Failing, it stops the lease's heartbeat: the claim then runs out in one lease, as a crash's would.
    const current = await deps.merges.get(config.sourceId, table).catch((error: unknown) => {
      lease.stop();
      throw error;
    });
    if (current?.rewrite?.tag !== rewrite.tag) {
      lease.stop();
      await buckets.abandon(config.sourceId, table, rewrite.tag, lease.held, owner);
      throw new LeaseLostError(`the Iceberg rewrite ${rewrite.tag} of ${formatTableRef(table)} is no longer in progress; this writer stops`);
    }
    const claim = new BucketClaim(deps, table, rewrite.tag, lease, store);
    try {
      const record = await writeBucket(deps, claim.store, table, rewrite, plan, n, claim.attempt);
      await (deps.faults ?? noFaults).hit('bucket-staged');
      await claim.store.put(record.key, JSON.stringify(record));
      await claim.record(record.key);
      await (deps.faults ?? noFaults).hit('bucket-recorded');
      written++;
      log.info('Iceberg rewrite bucket written', { table: formatTableRef(table), bucket: n, of: rewrite.buckets, rows: record.staged.rows });
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error; // a crash: the commit deletes the attempt
      const discarded = await claim.discard();
      log.warn('lost the claim on a rewrite bucket; its attempt is discarded', { table: formatTableRef(table), bucket: n, objects: discarded, error });
      if (!(await done(n))) open++;
    } finally {
      await claim.close();
    }
  }
  return { written, open };
}

/** Bucket n: its events, the rule over them, its rows as range files. */
async function writeBucket(
  deps: RewriteDeps,
  store: ObjectStore,
  table: TableRef,
  rewrite: RewriteRecord,
  plan: RewritePlan,
  n: number,
  attempt: string,
): Promise<BucketRecord> {
  const { config } = deps;
  const work = mkdtempSync(join(deps.workDir ?? tmpdir(), 'sluice-bucket-'));
  const instance = await DuckDBInstance.create(join(work, 'bucket.duckdb'), { temp_directory: join(work, 'spill') });
  const duck = await instance.connect();
  try {
    const history = await tableHistory(
      { s3: deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
      { table, keys: [...plan.keys], shape: plan.shape },
    );
    if (!history) throw new AssertionError(`${formatTableRef(table)} has events but no schema history`);
    const dir = join(work, 'events');
    mkdirSync(dir, { recursive: true });
    const files = await downloadObjects(deps.s3, config.bucket, plan.keys, dir);
    await duck.run(loadEventsSql('e_ev', files, { index: n, count: rewrite.buckets }));
    const rule = await materializeRule(duck, history, 'e_ev', 'r');
    const to = rule.version.version;
    const location = icebergLocation(config.prefix, table);
    const key = recordKey(location, rewrite.tag, n, attempt);
    if (rule.gone) return { key, gone: true, to, staged: { rows: 0, nulled: {}, files: [] } };
    const path = join(work, 'rows.jsonl');
    await duck.run(
      `COPY (SELECT row FROM ${rule.state}, range(${rule.state}.n)) TO ${sqlString(path)} (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER E'\\x01')`,
    );
    // Every bucket is staged against the schema of the newest version (all versions have its columns: `bucketCount`).
    const target = await rewriteTarget(store, plan, history, location);
    const staged = await stageBucket(
      { store, workDir: work },
      target.current,
      target.spec,
      { path, lines: rule.rows },
      {
        tag: bucketTag(rewrite.tag, n, attempt),
        timestampMs: rewrite.timestampMs,
      },
    );
    return { key, gone: false, to, staged };
  } finally {
    duck.closeSync();
    instance.closeSync();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Every bucket's record once all are done; undefined while one is not. */
export async function doneBuckets(deps: RewriteDeps, table: TableRef, rewrite: RewriteRecord): Promise<BucketRecord[] | undefined> {
  const store = s3ObjectStore(deps.s3, deps.config.bucket);
  const records: BucketRecord[] = [];
  for (let n = 0; n < rewrite.buckets; n++) {
    const bucket = await deps.buckets.get(deps.config.sourceId, table, rewrite.tag, n);
    if (!bucket?.record) return undefined;
    const body = await store.get(bucket.record);
    if (!body) throw new AssertionError(`the record ${bucket.record} of a done bucket of the rewrite ${rewrite.tag} is missing`);
    records.push(JSON.parse(new TextDecoder().decode(body)) as BucketRecord);
  }
  return records;
}

/** Deletes data files and records of the rewrite that no recorded bucket names (attempts that crashed or lost their claim). */
export async function deleteUnrecorded(deps: RewriteDeps, store: ObjectStore, location: string, rewrite: RewriteRecord, records: readonly BucketRecord[]) {
  const named = new Set(records.flatMap((r) => [r.key, ...r.staged.files.map((f) => f.key)]));
  const stray: string[] = [];
  for (const folder of ['data', 'metadata'])
    for await (const key of listKeys(deps.s3, deps.config.bucket, `${location}/${folder}/${rewrite.tag}-k`)) if (!named.has(key)) stray.push(key);
  if (stray.length) await store.delete(stray);
  return stray.length;
}

/**
 * The list of the rewrite's own objects (its plan, the buckets' records) for the commit to name as
 * its cleanup, so they are deleted once it is published, by a roll-forward too. Its key is the
 * rewrite's: a redo writes the same one.
 */
export async function rewriteCleanup(store: ObjectStore, location: string, rewrite: RewriteRecord, records: readonly BucketRecord[]): Promise<string> {
  const key = `${location}/metadata/${rewrite.tag}-rewrite-objects.json`;
  await store.put(key, JSON.stringify([rewrite.plan, ...records.map((r) => r.key)]));
  return key;
}

/** After the commit: the rewrite's own objects and items, named by nobody any more (the objects again, for a gone table's commit, which publishes nothing). */
export async function removeRewrite(deps: RewriteDeps, store: ObjectStore, table: TableRef, rewrite: RewriteRecord, records: readonly BucketRecord[]) {
  await deps.buckets.remove(deps.config.sourceId, table, rewrite.tag, rewrite.buckets).catch(() => {});
  await store.delete([rewrite.plan, ...records.map((r) => r.key)]).catch(() => {});
}

/**
 * A worker invocation: writes the table's rewrite buckets until none is left to take or its time
 * (`budgetMs`) is nearly up; then, if it stopped for time with buckets left, it invokes itself again.
 */
export async function runRewriteWorker(deps: RewriteDeps, table: TableRef, options: { owner?: string; budgetMs: number }) {
  const clock = deps.clock ?? Date.now;
  const started = clock();
  const state = await deps.merges.get(deps.config.sourceId, table);
  if (!state?.rewrite) return { written: 0, open: 0 };
  const owner = options.owner ?? `rewrite-${randomBytes(4).toString('hex')}`;
  let stoppedForTime = false;
  let result: { written: number; open: number };
  try {
    // At least one bucket is tried whatever the budget: a worker that wrote nothing never invokes another.
    result = await writeBuckets(deps, table, state.rewrite, owner, (written) => {
      stoppedForTime = written > 0 && clock() - started >= options.budgetMs;
      return !stoppedForTime;
    });
  } catch (error) {
    // A worker that outlived the rewrite (it committed meanwhile) has nothing left to do: its claim
    // is gone, or the plan and records it reads were deleted with the commit.
    const ended = error instanceof LeaseLostError || error instanceof AssertionError;
    if (ended && (await deps.merges.get(deps.config.sourceId, table))?.rewrite?.tag !== state.rewrite.tag) {
      deps.log.info('Iceberg rewrite committed while this worker ran; it stops', { table: formatTableRef(table), error });
      return { written: 0, open: 0 };
    }
    throw error;
  }
  if (stoppedForTime && result.open && deps.invoke) await deps.invoke({ rewrite: { db: table.db, table: table.table } });
  return result;
}
