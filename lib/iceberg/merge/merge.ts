import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { type Faults, noFaults } from '../../commit/faults.ts';
import { mergeLedger } from '../../commit/ledgers.ts';
import { type CommitContext, commitInPlace, advance as moveLedger, rollForward } from '../../commit/protocol.ts';
import type { Config } from '../../config/config.ts';
import { type BinlogPosition, compareEpochPositions } from '../../core/position.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { ErrorCode, LeaseLostError, SluiceError } from '../../errors.ts';
import type { Log } from '../../log.ts';
import { ChangeLog } from '../../materialize/change-log.ts';
import { type ChangeStep, changeSet, stepLines } from '../../materialize/changes.ts';
import { downloadObjects, type EventFiles, loadEventsSql } from '../../materialize/events.ts';
import type { TableHistory } from '../../materialize/history.ts';
import { sqlString } from '../../materialize/projection.ts';
import { GONE_KINDS, materializeRule, planRule } from '../../materialize/rule.ts';
import { tableHistory } from '../../materialize/table.ts';
import { pad } from '../../sink/s3/keys.ts';
import { type ObjectStore, outsideBucket, s3ObjectStore } from '../../sink/s3/object-store.ts';
import { listKeys } from '../../sink/s3/objects.ts';
import type { RewriteBuckets } from '../../state/iceberg-buckets.ts';
import type { MergeAdvance, MergeState, MergeStore, RewriteRecord } from '../../state/iceberg-store.ts';
import { jobCovers, type SnapshotStore } from '../../state/snapshot-store.ts';
import type { StateStore } from '../../state/store.ts';
import { adoptedMetadata, CatalogMaintainedError, type Maintained } from '../catalog/ancestry.ts';
import { fileCatalog, type IcebergCatalog } from '../catalog/catalog.ts';
import { stringifyJson } from '../files/json.ts';
import { currentSnapshot } from '../files/metadata.ts';
import { IncompatibleTypeChangeError } from '../files/schema.ts';
import {
  DEFAULT_ROWS_PER_FILE,
  type DeleteMode,
  expiredSnapshots,
  loadVersion,
  metadataKey as metadataKeyOf,
  metadataVersion,
  publish,
  type Staged,
  stageBuckets,
  stageChanges,
  stageCompaction,
  stageExpiry,
  stageReplace,
  stageTruncate,
  type TableVersion,
  versionOf,
} from '../table/table.ts';
import { deletesInBucketOnly, fenced } from './fenced-store.ts';
import {
  bucketCount,
  deleteUnrecorded,
  doneBuckets,
  planKey,
  type RewriteBase,
  type RewriteDeps,
  type RewriteEvent,
  type RewritePlan,
  readPlan,
  removeRewrite,
  rewriteCleanup,
  rewriteTarget,
  writeBuckets,
} from './rewrite.ts';
import { icebergLocation, spec, type TableLocation } from './spec.ts';

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
 * A first load, or a reset of an existing table, too large for one invocation is staged in buckets by several (lib/iceberg/rewrite.ts)
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

/** What a merge run needs; clients are injected (lib/aws.ts builds the real ones). */
export interface MergeDeps {
  readonly config: Config;
  readonly s3: S3Client;
  readonly store: StateStore;
  readonly snapshots: SnapshotStore;
  readonly merges: MergeStore;
  readonly log: Log;
  /** Where committed versions are published; the file catalog (version-hint.text) when absent. */
  readonly catalog?: IcebergCatalog;
  readonly clock?: () => number;
  readonly faults?: Faults;
  /** Parent folder for scratch files (DuckDB, downloads); the OS temp folder by default. */
  readonly workDir?: string;
  /** The buckets of first loads split across invocations (lib/iceberg/rewrite.ts); without it a first load is written whole. */
  readonly buckets?: RewriteBuckets;
  /** Starts a rewrite worker invocation (SLUICE_ICEBERG_WORKERS > 1): the Lambda Invoke API, or an in-process stand-in. */
  readonly invoke?: (event: RewriteEvent) => Promise<void>;
}

export interface MergeOptions {
  /** Only these tables (default: every table with a schema history). */
  readonly tables?: readonly TableRef[];
  /** The lease owner (the Lambda request id); a random one by default. */
  readonly owner?: string;
  /** No table is started once this much time has passed. */
  readonly budgetMs?: number;
  /**
   * How long to wait for a table whose lease another run holds (a killed run's lease expires after
   * `SLUICE_ICEBERG_LEASE_SECONDS`); 0 (the schedule's choice): report it busy, the next tick merges it.
   */
  readonly waitForLeaseMs?: number;
  /** A rewrite split into buckets writes at most this many here, leaving the rest to the next run (tests). */
  readonly maxBuckets?: number;
}

/** What a merge did to one table. */
export interface TableMergeResult {
  readonly table: TableRef;
  readonly status: 'merged' | 'up-to-date' | 'held-back' | 'busy' | 'failed';
  /** Why held back, busy or failed. */
  readonly reason?: string;
  /** How the rows were applied: incrementally, as a full rewrite, or emptied (truncate / gone). */
  readonly mode?: 'incremental' | 'rewrite' | 'empty';
  readonly commitSeq?: number;
  readonly mergeSeq?: number;
  readonly metadataKey?: string;
  readonly rowsWritten?: number;
  readonly deletes?: number;
  readonly compacted?: boolean;
  readonly expiredSnapshots?: number;
  readonly error?: SluiceError | Error;
}

export interface MergeResult {
  /** The cut the run merged to; undefined when the source has not committed yet. */
  readonly cut?: Cut;
  readonly tables: readonly TableMergeResult[];
}

/** Where a run merges to: every binlog event before `position` is in commits ≤ `commitSeq`. */
export interface Cut {
  readonly commitSeq: number;
  readonly position: BinlogPosition;
  /** The history epoch of `position`: positions of different epochs compare by it alone. */
  readonly epoch: number;
}

/** Reset kinds after which the table is the same one, its columns keeping their identity (others: a new table under the name). */
const KEEP_COLUMNS = new Set(['truncate', 'resnapshot', 'snapshot']);

/** How often one table's merge starts again on a catalog that others' maintenance moved under it. */
const MAINTAINED_ROUNDS = 4;

const sameTable = (a: TableRef, b: TableRef) => a.db === b.db && a.table === b.table;

/** Merges every table (or `options.tables`) up to the source's committed position. */
export async function runIcebergMerge(deps: MergeDeps, options: MergeOptions = {}): Promise<MergeResult> {
  const run = new MergeRun(deps, options);
  return run.run();
}

/** The change log as one run reads it: manifests cached, the cut and the jobs read once, in that order. */
class MergeRun {
  readonly clock: () => number;
  readonly owner: string;
  readonly changeLog: ChangeLog;
  readonly started: number;
  readonly store: ObjectStore;
  readonly catalog: IcebergCatalog;
  readonly ctx: CommitContext;
  /** This run's part of the names of the files it stages: a run that lost its lease never writes a key another run's commit names. */
  readonly attempt = randomBytes(4).toString('hex');
  /** The table being merged and until when (this run's clock) its lease surely holds: past that, nothing is written. */
  private lease: { table: TableRef; writableUntil: number } | undefined;

  constructor(
    readonly deps: MergeDeps,
    readonly options: MergeOptions,
  ) {
    this.clock = deps.clock ?? Date.now;
    this.owner = options.owner ?? `merge-${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`; // unique: a lease held under it is this run's
    this.started = this.clock();
    this.changeLog = ChangeLog.over(deps.s3, deps.config);
    // Under a location a catalog assigned, deleting is the catalog's job (S3 Tables allows no client
    // deletes there; its unreferenced-file removal collects what no snapshot names).
    const own = deletesInBucketOnly(s3ObjectStore(deps.s3, deps.config.bucket), (keys) =>
      deps.log.debug("left to the catalog's unreferenced-file removal: objects under its table location sluice does not delete", {
        objects: keys.length,
        keys: keys.slice(0, 20),
      }),
    );
    this.store = fenced(own, () => this.checkLease());
    const catalog = deps.catalog ?? fileCatalog(this.store);
    const locate = catalog.locate?.bind(catalog);
    const maintained = catalog.maintained?.bind(catalog);
    this.catalog = {
      publish: async (table, version) => {
        this.checkLease();
        await catalog.publish(table, version);
      },
      ...(locate
        ? {
            locate: async (table: TableRef) => {
              this.checkLease();
              return await locate(table);
            },
          }
        : {}),
      ...(maintained ? { maintained: (table, version) => maintained(table, version) } : {}),
    };
    this.ctx = { s3: deps.s3, bucket: deps.config.bucket, faults: deps.faults ?? noFaults, log: deps.log, clock: this.clock };
  }

  get config() {
    return this.deps.config;
  }

  /** The names this run's files of the table's next merge take: `m<merge seq>_<attempt>`. */
  tagFor(state: MergeState): string {
    return `m${pad(state.mergeSeq + 1)}_${this.attempt}`;
  }

  /**
   * Where the table's objects go (see TableLocation): a table with a committed version keeps the
   * location its metadata names (no catalog call); a new one goes where the catalog that assigns
   * locations placed it (creating it there), else under sluice's own.
   */
  async locationOf(table: TableRef, current: TableVersion | undefined): Promise<TableLocation> {
    const home = icebergLocation(this.config.prefix, table);
    if (current) return { home, files: this.store.keyOf(current.metadata.location) };
    if (!this.catalog.locate) return { home, files: home };
    const files = this.store.keyOf(await this.catalog.locate(table));
    this.deps.log.info('Iceberg table placed by the catalog', { table: formatTableRef(table), location: this.store.uri(files) });
    return { home, files };
  }

  /**
   * Refuses a write once the table's lease may have run out (its renewals failing): another run may
   * hold it by then, and this one's files or version-hint.text would land over that run's. The
   * last quarter of the lease is kept clear for writes in flight.
   */
  checkLease(): void {
    if (this.lease && this.clock() >= this.lease.writableUntil)
      throw new LeaseLostError(
        `the Iceberg merge of ${formatTableRef(this.lease.table)} could not renew its lease in time; it stops before writing more (the next run redoes it)`,
      );
  }

  async run(): Promise<MergeResult> {
    // Order matters (see the header): the cut first, then the jobs.
    const cut = await this.readCut();
    const tables = this.options.tables ?? (await this.changeLog.tables());
    if (!cut) return { tables: tables.map((table) => ({ table, status: 'up-to-date', reason: 'the source has not committed yet' })) };
    const active = await this.deps.snapshots.activeJobs(this.config.sourceId);
    const results: TableMergeResult[] = [];
    for (const table of tables) {
      if (this.options.budgetMs !== undefined && this.clock() - this.started >= this.options.budgetMs) {
        results.push({ table, status: 'busy', reason: 'out of time; the next run merges it' });
        continue;
      }
      const job = active.find((j) => jobCovers(j, table));
      if (job) {
        results.push({ table, status: 'held-back', reason: `snapshot ${job.id} is copying it (${job.status})` });
        continue;
      }
      try {
        results.push(await this.mergeTable(table, cut));
      } catch (error) {
        this.deps.log.error('Iceberg merge failed', { table: formatTableRef(table), error: error as Error });
        const code = error instanceof SluiceError ? error.code : 'UNEXPECTED';
        await this.deps.merges.recordError(this.config.sourceId, table, { code, message: (error as Error).message }, this.clock()).catch(() => {});
        results.push({ table, status: 'failed', reason: (error as Error).message, error: error as Error });
      }
    }
    return { cut, tables: results };
  }

  /** Step 1: the cut, from the source's state. */
  async readCut(): Promise<Cut | undefined> {
    const state = await this.deps.store.get(this.config.sourceId);
    if (!state?.position) return undefined;
    if (!state.pending) return { commitSeq: state.commitSeq, position: state.position, epoch: state.epoch };
    // The newest commit may not be renamed yet: cut at the one before, at its end.
    const previous = state.commitSeq - 1;
    if (previous < 1) return undefined;
    const manifest = await this.changeLog.commit(previous);
    if (!manifest?.position) throw new SluiceError(ErrorCode.ASSERTION, `manifest ${previous} of a committed commit is missing`);
    return { commitSeq: previous, position: manifest.position.to, epoch: manifest.epoch ?? 0 };
  }

  /**
   * The table's snapshot pages below the cut, of done jobs other than `skip` (and, given `only`, in
   * it): their objects, the jobs all of whose pages are in, and the done jobs with pages past the
   * cut (`waiting`: the table waits for them whole — merging some of a job's pages now and the
   * rest later would apply the early ones a second time, over newer changes). Pages of jobs not
   * done are left for later (see the header). A job's status is read before its pages are listed:
   * once done, every page of it is in the listing.
   */
  async pageObjects(table: TableRef, cut: Cut, skip: ReadonlySet<string>, only?: ReadonlySet<string>) {
    const keys: string[] = [];
    const complete: string[] = [];
    const waiting: string[] = [];
    let events = 0;
    for (const id of await this.changeLog.snapshotJobs()) {
      if (skip.has(id) || (only && !only.has(id))) continue;
      const job = await this.deps.snapshots.job(this.config.sourceId, id);
      if (job?.status !== 'done') continue;
      const objects: string[] = [];
      let count = 0;
      let all = true;
      for await (const manifest of this.changeLog.pages(id, table)) {
        const watermark = manifest.snapshot?.watermark;
        if (!watermark || compareEpochPositions({ epoch: manifest.epoch ?? 0, position: watermark }, cut) > 0) {
          all = false;
          break;
        }
        for (const o of manifest.objects)
          if (sameTable(o, table)) {
            objects.push(o.key);
            count += o.events;
          }
      }
      // A done job without pages of this table never gets any: complete, so it is not listed again.
      if (!all) waiting.push(id);
      else {
        keys.push(...objects);
        events += count;
        complete.push(id);
      }
    }
    return { keys, complete, waiting, events };
  }

  /** Steps 0–3 for one table. */
  async mergeTable(table: TableRef, cut: Cut): Promise<TableMergeResult> {
    const { config, merges, log } = this.deps;
    let state: MergeState;
    const waitUntil = Date.now() + (this.options.waitForLeaseMs ?? 0);
    for (;;) {
      const now = this.clock();
      try {
        state = await merges.acquire(config.sourceId, table, this.owner, now + config.iceberg.leaseMs, now);
        this.lease = { table, writableUntil: now + (config.iceberg.leaseMs * 3) / 4 };
        break;
      } catch (error) {
        if (!(error instanceof LeaseLostError)) throw error;
        if (Date.now() >= waitUntil) return { table, status: 'busy', reason: error.message };
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    // Renewed while the merge works, without bumping the version: a killed run blocks the table for one lease at most.
    const renewal = setInterval(() => {
      const now = this.clock();
      merges.renew(config.sourceId, table, this.owner, now + config.iceberg.leaseMs, now).then(
        () => {
          if (this.lease?.table === table) this.lease.writableUntil = now + (config.iceberg.leaseMs * 3) / 4;
        },
        (error: Error) =>
          log.warn('could not renew the Iceberg merge lease; the merge stops writing once it may have run out', { table: formatTableRef(table), error }),
      );
    }, config.iceberg.leaseMs / 4);
    renewal.unref();
    const work = mkdtempSync(join(this.deps.workDir ?? tmpdir(), 'sluice-iceberg-'));
    try {
      const ledger = mergeLedger(merges, this.owner, this.clock, (s) => this.settle(s));
      // The catalog's maintenance may move the table between this run's load and its publish: the
      // publish then fails with CatalogMaintainedError, and the table is merged again on it.
      for (let round = 0; ; round++) {
        try {
          return await this.mergeLeased(table, cut, state, ledger, join(work, String(round)));
        } catch (error) {
          if (!(error instanceof CatalogMaintainedError) || config.iceberg.maintenance !== 'catalog' || round >= MAINTAINED_ROUNDS) throw error;
          log.info('the catalog was maintained under the merge: merging again on it', { table: formatTableRef(table), error: error.message });
          state = (await merges.get(config.sourceId, table)) ?? state;
        }
      }
    } finally {
      clearInterval(renewal);
      this.lease = undefined;
      rmSync(work, { recursive: true, force: true });
      await merges.release(config.sourceId, table, this.owner);
    }
  }

  /** Steps 0–3 for one table under its lease, scratch files in `work`. */
  async mergeLeased(table: TableRef, cut: Cut, leased: MergeState, ledger: ReturnType<typeof mergeLedger>, work: string): Promise<TableMergeResult> {
    const { config, log } = this.deps;
    let state = leased;
    mkdirSync(work, { recursive: true });
    if (state.pending) log.info('publishing an Iceberg commit a crashed merge left behind', { table: formatTableRef(table), metadata: state.metadataKey });
    state = await this.settled(table, state, ledger);
    // A late write of a run that lost its lease can have moved version-hint.text back: put it right.
    if (state.metadataKey) await publish(this.store, { metadataKey: state.metadataKey, version: versionOf(state.metadataKey) }, true);
    // A rewrite in progress fixed its cut: it is finished before anything else is merged.
    if (state.rewrite) return await this.continueRewrite(table, state, ledger);
    // Others' compactions and expiries (SLUICE_ICEBERG_MAINTENANCE=catalog): the merge builds on them.
    if (config.iceberg.maintenance === 'catalog' && state.metadataKey) {
      const maintained = await this.catalog.maintained?.(table, { metadataKey: state.metadataKey });
      if (maintained) state = await this.adopt(table, state, maintained, state);
    }
    // A run that read its cut earlier (runs may overlap) must not move the ledger back to it.
    if (state.commitSeq > cut.commitSeq || (state.position && compareEpochPositions({ epoch: state.epoch, position: state.position }, cut) > 0))
      return { table, status: 'up-to-date', commitSeq: state.commitSeq, metadataKey: state.metadataKey };
    const binlog = await this.changeLog.binlogObjects(table, state.commitSeq, cut.commitSeq);
    const pages = await this.pageObjects(table, cut, new Set(state.jobs));
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
      const maintained = await this.maintain(table, state, moved());
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
    if (this.deps.buckets && !this.catalog.locate && events > config.iceberg.bucketRows) {
      let base: RewriteBase | undefined;
      // Only a table the buckets can split is scanned for a reset (a keyless table, or one whose key
      // or columns changed in its history, is written whole anyway).
      const splittable = async () => {
        const history = await tableHistory(
          { s3: this.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
          { table, keys, shape: binlog.shape },
        );
        return history !== undefined && bucketCount(config, events, history) > 1;
      };
      if (state.metadataKey && (await splittable())) {
        mkdirSync(dir, { recursive: true });
        files = await downloadObjects(this.deps.s3, config.bucket, keys, dir);
        base = await this.resetBase(table, state, files, work);
      }
      if (!state.metadataKey ? !state.gone : base) {
        // The buckets download what they read themselves: one copy of the log on local disk, not two.
        if (files) {
          rmSync(dir, { recursive: true, force: true });
          files = undefined;
        }
        const split = await this.planRewrite(table, state, ledger, { keys, shape: binlog.shape, ...(base ? { base } : {}) }, events, moved());
        if (split) return split;
      }
    }
    const duck = await Duck.open(work);
    try {
      const history = await tableHistory(
        { s3: this.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
        { table, keys, shape: binlog.shape },
      );
      if (!history) throw new SluiceError(ErrorCode.MATERIALIZE_HISTORY, `${formatTableRef(table)} has events but no schema history`);
      if (!files) {
        mkdirSync(dir, { recursive: true });
        files = await downloadObjects(this.deps.s3, config.bucket, keys, dir);
      }
      await duck.conn.run(loadEventsSql('e_ev', files));
      const staged = await this.stage(table, state, cut, duck.conn, history, work, new Set(moved().jobs));
      return await this.commit(table, state, ledger, staged, moved({ schemaVersion: staged.schemaVersion, gone: staged.gone }));
    } finally {
      duck.close();
    }
  }

  /**
   * Step 0: publishes a commit a crashed run left pending. When others' maintenance moved the
   * catalog past the version that commit builds on (SLUICE_ICEBERG_MAINTENANCE=catalog), the commit
   * cannot be published as it is (its manifests name files the compaction replaced): the ledger
   * goes back to the cut before it, on the catalog's table, and this run merges the same events
   * again (the change log is immutable). The catalog never had the dropped version, so no reader
   * of it saw anything twice or lost anything.
   */
  async settled(table: TableRef, state: MergeState, ledger: ReturnType<typeof mergeLedger>): Promise<MergeState> {
    try {
      return await rollForward(this.ctx, ledger, state);
    } catch (error) {
      if (!(error instanceof CatalogMaintainedError) || this.config.iceberg.maintenance !== 'catalog' || !state.pending) throw error;
      const base = state.base;
      const before = base?.metadataKey ? await loadVersion(this.store, base.metadataKey) : undefined;
      const built = before && currentSnapshot(before.metadata)?.['snapshot-id'];
      if (!base || !before || error.descent.from !== built)
        throw new SluiceError(
          ErrorCode.ICEBERG_CATALOG_CONFLICT,
          `${error.message}; the pending commit of ${formatTableRef(table)} builds on ${built ?? 'no snapshot'}, not on that, so it cannot be merged again on the catalog's table: drop the table from the catalog (the next run registers sluice's)`,
        );
      this.deps.log.info("the catalog was maintained before a committed merge was published: merging its events again on the catalog's table", {
        table: formatTableRef(table),
        dropped: state.metadataKey,
      });
      const rebased = await this.adopt(table, state, error, base, before);
      // The dropped version's files: named by its merge sequence, listed by no metadata any catalog has.
      const location = icebergLocation(this.config.prefix, table);
      const seq = `m${pad(state.mergeSeq)}_`;
      const keys: string[] = [];
      for (const prefix of [`${location}/data/${seq}`, `${location}/metadata/${seq}`, `${location}/metadata/snap-${seq}`])
        for await (const key of listKeys(this.deps.s3, this.config.bucket, prefix)) keys.push(key);
      await this.store.delete(keys).catch(() => {});
      return rebased;
    }
  }

  /**
   * Makes the catalog's maintained table sluice's next version: `<N+1>-<uuid>.metadata.json` derived
   * from the catalog's metadata (lib/iceberg/ancestry.ts), recorded by one fenced ledger write at
   * cut `to` (the ledger's own, or the one before a dropped pending commit), then published. A crash
   * before the write leaves an unreferenced file (the next attempt writes another version); after
   * it, the ledger names a version the catalog already has.
   */
  async adopt(
    table: TableRef,
    state: MergeState,
    maintained: Maintained,
    to: Pick<MergeState, 'commitSeq' | 'position' | 'jobs' | 'schemaVersion' | 'gone'>,
    ours?: TableVersion,
  ): Promise<MergeState> {
    const committed = state.metadataKey;
    if (!committed) throw new SluiceError(ErrorCode.ASSERTION, `${formatTableRef(table)} has no metadata to build on the catalog's`);
    const own = ours ?? (await loadVersion(this.store, committed));
    const version = versionOf(committed) + 1;
    const key = metadataKeyOf(icebergLocation(this.config.prefix, table), version, `${this.tagFor(state)}-a`);
    const metadata = adoptedMetadata(maintained.metadata, own.metadata, this.store.uri(own.metadataKey), this.clock());
    await this.store.put(key, `${stringifyJson(metadata, 1)}\n`);
    this.checkLease();
    const advance: MergeAdvance = {
      commitSeq: to.commitSeq,
      position: to.position as BinlogPosition,
      jobs: to.jobs,
      schemaVersion: to.schemaVersion,
      gone: to.gone,
      metadataKey: key,
    };
    const rebased = await this.deps.merges.rebase(
      { sourceId: this.config.sourceId, owner: this.owner, expectVersion: state.version, now: this.clock() },
      state,
      advance,
    );
    this.deps.log.info("Iceberg merge builds on the catalog's maintenance", {
      table: formatTableRef(table),
      metadata: key,
      catalog: maintained.location,
      replaced: maintained.descent.replaced.length,
      expired: maintained.descent.expired.length,
    });
    await this.catalog.publish(table, { metadataKey: key, ...(committed ? { previousMetadataKey: committed } : {}) });
    return rebased;
  }

  /** What lib/iceberg/rewrite.ts needs of this run. */
  private rewriteDeps(buckets: RewriteBuckets): RewriteDeps {
    const { config, s3, merges, log, faults, workDir, invoke } = this.deps;
    return { config, s3, merges, buckets, log, clock: this.clock, faults, workDir, invoke };
  }

  /**
   * Whether the new events of a table with a committed version rewrite it (`stage` would: after a
   * reset, or for a new table under a name that was gone), read from their control events alone,
   * and if so what the rewrite builds on; undefined when they are merged another way, or the table
   * is one a split cannot replace (its files where a catalog placed them, or others' maintenance
   * moving it while the buckets are written).
   */
  async resetBase(table: TableRef, state: MergeState, files: EventFiles, work: string): Promise<RewriteBase | undefined> {
    const metadataKey = state.metadataKey;
    if (!metadataKey || this.config.iceberg.maintenance === 'catalog') return undefined;
    const current = await loadVersion(this.store, metadataKey);
    if (this.store.keyOf(current.metadata.location) !== icebergLocation(this.config.prefix, table)) return undefined;
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
  async planRewrite(
    table: TableRef,
    state: MergeState,
    ledger: ReturnType<typeof mergeLedger>,
    plan: RewritePlan,
    events: number,
    advance: MergeAdvance,
  ): Promise<TableMergeResult | undefined> {
    const { config } = this.deps;
    const history = await tableHistory(
      { s3: this.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
      { table, keys: [...plan.keys], shape: plan.shape },
    );
    if (!history) return undefined;
    const count = bucketCount(config, events, history);
    if (count <= 1) return undefined;
    const location = icebergLocation(config.prefix, table);
    const tag = this.tagFor(state);
    await this.discardUncommitted(location, state, state.metadataKey ? versionOf(state.metadataKey) : 0);
    const rewrite: RewriteRecord = { tag, plan: planKey(location, tag), buckets: count, timestampMs: this.clock(), advance };
    await this.store.put(rewrite.plan, JSON.stringify(plan));
    const started = await this.deps.merges.startRewrite(
      { sourceId: config.sourceId, owner: this.owner, expectVersion: state.version, now: this.clock() },
      state,
      rewrite,
    );
    this.deps.log.info(plan.base ? 'Iceberg rewrite after a reset split into buckets' : 'Iceberg first load split into buckets', {
      table: formatTableRef(table),
      buckets: count,
      events,
      workers: config.iceberg.workers,
    });
    return this.continueRewrite(table, started, ledger);
  }

  /** Writes buckets of the rewrite in progress (with the workers it invokes) and, once every one is done, commits them as one snapshot. */
  async continueRewrite(table: TableRef, state: MergeState, ledger: ReturnType<typeof mergeLedger>): Promise<TableMergeResult> {
    const { config, log } = this.deps;
    const rewrite = state.rewrite as RewriteRecord;
    const buckets = this.deps.buckets;
    if (!buckets) throw new SluiceError(ErrorCode.ASSERTION, `${formatTableRef(table)} has a rewrite in progress but this run has no bucket store`);
    const deps = this.rewriteDeps(buckets);
    if (this.deps.invoke)
      for (let w = 1; w < Math.min(config.iceberg.workers, rewrite.buckets); w++) await this.deps.invoke({ rewrite: { db: table.db, table: table.table } });
    const max = this.options.maxBuckets ?? Number.POSITIVE_INFINITY;
    const outOfTime = () => this.options.budgetMs !== undefined && this.clock() - this.started >= this.options.budgetMs;
    let total = 0;
    for (;;) {
      this.checkLease();
      const { written, open } = await writeBuckets(deps, table, rewrite, this.owner, (w) => total + w < max && (total + w === 0 || !outOfTime()));
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
    const stray = await deleteUnrecorded(deps, this.store, location, rewrite, records);
    if (stray) log.info('deleted files of rewrite bucket attempts that did not record', { table: formatTableRef(table), objects: stray });
    const gone = records.every((r) => r.gone);
    if ((!gone || state.metadataKey) && records.some((r) => r.gone))
      throw new SluiceError(ErrorCode.ASSERTION, `buckets of the rewrite ${rewrite.tag} say the table is gone, which only a first load may find`);
    const to = Math.max(...records.map((r) => r.to));
    let staged: StagedMerge = { version: undefined, schemaVersion: to, gone: true, mode: 'empty', stats: [] };
    if (!gone) {
      const plan = await readPlan(this.store, rewrite);
      const history = await tableHistory(
        { s3: this.deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId },
        { table, keys: [...plan.keys], shape: plan.shape },
      );
      if (!history) throw new SluiceError(ErrorCode.MATERIALIZE_HISTORY, `${formatTableRef(table)} has events but no schema history`);
      // As each bucket was staged: on the version the rewrite replaces (nothing else commits
      // meanwhile), in the newest version's schema (every version has its columns, `bucketCount`).
      const target = await rewriteTarget(this.store, plan, history, location);
      if (target.current?.metadataKey !== state.metadataKey)
        throw new SluiceError(
          ErrorCode.ASSERTION,
          `the rewrite ${rewrite.tag} of ${formatTableRef(table)} replaces ${plan.base?.metadataKey}, not the committed ${state.metadataKey}`,
        );
      // An overwrite on top of the committed snapshot: every current file is replaced, older snapshots stay readable.
      const version = await stageBuckets(
        { store: this.store },
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
    const cleanup = await rewriteCleanup(this.store, location, rewrite, records);
    const result = await this.commit(table, state, ledger, staged, { ...rewrite.advance, schemaVersion: to, gone, cleanup }, false);
    await removeRewrite(deps, this.store, table, rewrite, records);
    return result;
  }

  /** The Iceberg side of step 2: the new version(s), chained from the committed one. */
  async stage(
    table: TableRef,
    state: MergeState,
    cut: Cut,
    duck: DuckDBConnection,
    history: TableHistory,
    work: string,
    /** The snapshot jobs merged once this commits: a full rewrite reads exactly their pages. */
    jobs: ReadonlySet<string>,
  ): Promise<StagedMerge> {
    const deps = { store: this.store, workDir: work };
    const current = state.metadataKey ? await loadVersion(this.store, state.metadataKey) : undefined;
    const location = await this.locationOf(table, current);
    const tag = this.tagFor(state);
    await this.discardUncommitted(location, state, current?.version ?? 0);
    const at = this.clock();
    const options = (suffix: string) => ({
      tag: `${tag}${suffix}`,
      timestampMs: at,
      summary: { 'sluice.commit-seq': String(cut.commitSeq) },
      deletes: this.config.iceberg.deletes,
    });
    const rewrite = async (events: string, prefix: string, recreate: boolean) => {
      const rule = await materializeRule(duck, history, events, prefix);
      // The rows leave DuckDB as a file: streaming a million row texts through JavaScript cost more than the Parquet writing.
      const path = join(work, `${prefix}-rows.jsonl`);
      await duck.run(
        `COPY (SELECT row FROM ${rule.state}, range(${rule.state}.n)) TO ${sqlString(path)} (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER E'\\x01')`,
      );
      const from = recreate ? undefined : state.schemaVersion;
      const to = rule.version.version;
      const rows = { path, lines: rule.rows };
      const staged = await stageReplace(deps, current, spec(history, location, to, from, recreate && current !== undefined), rows, options(''));
      return { version: staged.version, schemaVersion: to, gone: false, mode: rule.rows ? 'rewrite' : 'empty', stats: [staged] } as StagedMerge;
    };
    // A first load needs no change set (nothing to apply it to): the rule alone, unless the table is gone already.
    if (!current && !state.gone && !(await planRule(duck, history, 'e_ev')).gone) return await rewrite('e_ev', 'r', false);
    const changes = await changeSet(duck, history, 'e_ev', { version: state.schemaVersion ?? null }, 'e');
    const reset = changes.steps.find((s): s is Extract<ChangeStep, { kind: 'reset' }> => s.kind === 'reset');
    const to = changes.version.version;

    if (changes.gone) {
      // Dropped, renamed away or excluded: the Iceberg table is emptied (kept for readers and time travel).
      if (!current) return { version: undefined, schemaVersion: to, gone: true, mode: 'empty', stats: [] };
      const staged = await stageTruncate(deps, current, spec(history, location, state.schemaVersion ?? to, undefined), options(''));
      return { version: staged.version, schemaVersion: state.schemaVersion, gone: true, mode: 'empty', stats: [staged] };
    }
    // After a reset nothing before it counts: these events alone give the table. A new table under
    // the name (create, rename-in, include) shares no column identity with the old one.
    if (reset || !current || state.gone) return await rewrite('e_ev', 'r', reset !== undefined && !KEEP_COLUMNS.has(reset.marker.kind ?? ''));
    const rewritesValues = changes.steps.some((s) => s.kind === 'schema' && (s.fills || s.rerenders || s.rekey));
    if (!rewritesValues) {
      try {
        return await this.incremental(deps, current, history, location, state.schemaVersion ?? to, changes.steps, to, duck, options);
      } catch (error) {
        if (!(error instanceof IncompatibleTypeChangeError)) throw error;
        this.deps.log.info('a column type Iceberg cannot promote: rewriting the table', { table: formatTableRef(table), error: error.message });
      }
    }
    // A schema change that rewrites existing values: the whole table by the rule, from every event up to the cut.
    const all = await this.changeLog.binlogObjects(table, 0, cut.commitSeq);
    const pages = await this.pageObjects(table, cut, new Set(), jobs);
    const dir = join(work, 'all');
    mkdirSync(dir, { recursive: true });
    await duck.run(loadEventsSql('a_ev', await downloadObjects(this.deps.s3, this.config.bucket, [...all.keys, ...pages.keys], dir)));
    return await rewrite('a_ev', 'a', false);
  }

  /**
   * Deletes what earlier attempts of this merge staged (runs that crashed or lost their lease before
   * their commit), and metadata files past the committed version: no committed metadata names them
   * (merge sequences only grow, and the commit is what makes a version current).
   */
  async discardUncommitted(at: string | TableLocation, state: MergeState, committed: number): Promise<void> {
    const { home: location, files } = typeof at === 'string' ? { home: at, files: at } : at;
    const keys: string[] = [];
    const seq = `m${pad(state.mergeSeq + 1)}_`;
    // A catalog's location is not even listed: a table bucket (S3 Tables) serves no ListObjects, and
    // what an attempt left there is its unreferenced-file removal's to delete.
    const listed = [...new Set([location, files])].filter((l) => !outsideBucket(l));
    if (listed.length < 2 && files !== location)
      this.deps.log.debug("files of a merge attempt that did not commit, left under the catalog's location to its unreferenced-file removal", {
        location: files,
        merge: state.mergeSeq + 1,
      });
    for (const prefix of listed.flatMap((l) => [`${l}/data/${seq}`, `${l}/metadata/${seq}`, `${l}/metadata/snap-${seq}`]))
      for await (const key of this.store.list(prefix)) keys.push(key);
    // An attempt stages the next few versions (a merge, then maybe a compaction and an expiry).
    const staged = Array.from(
      { length: 10 },
      (_, i) =>
        `${location}/metadata/${String(committed + 1 + i)
          .padStart(5, '0')
          .slice(0, -1)}`,
    );
    for (const prefix of new Set([`${location}/metadata/v`, ...staged]))
      for await (const key of listKeys(this.deps.s3, this.config.bucket, prefix)) {
        const version = metadataVersion(key);
        if (version !== undefined && version > committed) keys.push(key);
      }
    if (!keys.length) return;
    this.deps.log.info('deleting Iceberg files of a merge attempt that did not commit', { location, merge: state.mergeSeq + 1, objects: keys.length });
    await this.store.delete(keys);
  }

  /** Rows steps as merge-on-read changes, schema steps as schema evolution; one Iceberg snapshot per rows step. */
  async incremental(
    deps: { store: ReturnType<typeof s3ObjectStore>; workDir: string },
    current: TableVersion,
    history: TableHistory,
    location: TableLocation,
    from: number,
    steps: readonly ChangeStep[],
    to: number,
    duck: DuckDBConnection,
    options: (suffix: string) => { tag: string; timestampMs: number; summary: Record<string, string>; deletes: DeleteMode },
  ): Promise<StagedMerge> {
    let version = current;
    let at = from;
    const stats: Staged[] = [];
    for (const step of steps) {
      if (step.kind !== 'rows') continue;
      const { upserts, deletes } = stepLines(duck, step);
      const staged = await stageChanges(deps, version, spec(history, location, step.version.version, at), { upserts, deletes }, options(`-${stats.length}`));
      stats.push(staged);
      version = staged.version;
      at = step.version.version;
    }
    if (at !== to || !stats.length) {
      // A schema change after the last row (or no row at all): a snapshot with the new schema.
      const staged = await stageChanges(deps, version, spec(history, location, to, at), { upserts: [], deletes: [] }, options(`-${stats.length}`));
      stats.push(staged);
      version = staged.version;
    }
    return { version, schemaVersion: to, gone: false, mode: 'incremental', stats };
  }

  /**
   * Compaction and expiry, when due, chained onto `staged` (or the committed version): a
   * compaction once the snapshot holds more than `compactFiles` files, an expiry once a snapshot
   * other than the current one is older than the retention. `beforeStaging` runs once, before the
   * first file is staged.
   */
  async housekeeping(location: string, version: TableVersion, tag: string, beforeStaging?: () => Promise<void>, compact = true) {
    const { compactFiles, retentionMs, keepSnapshots, maintenance } = this.config.iceberg;
    // The catalog's maintenance compacts and expires; sluice's would delete files the catalog's table still lists.
    if (maintenance === 'catalog') return { version, compacted: false, expired: 0, cleanup: undefined };
    const deps = { store: this.store };
    const now = this.clock();
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
    if (cleanup) await this.store.put(cleanup, JSON.stringify(expiry.unreferenced));
    return { version: expiry.version, compacted, expired: expiry.expiredSnapshots.length, cleanup };
  }

  /** Step 3, with housekeeping chained on. */
  async commit(
    table: TableRef,
    state: MergeState,
    ledger: ReturnType<typeof mergeLedger>,
    staged: StagedMerge,
    advance: MergeAdvance,
    housekeep = true,
  ): Promise<TableMergeResult> {
    const tag = this.tagFor(state);
    const kept = staged.version && housekeep ? await this.housekeeping(icebergLocation(this.config.prefix, table), staged.version, tag, undefined) : undefined;
    const metadataKey = kept?.version.metadataKey ?? staged.version?.metadataKey ?? state.metadataKey;
    const committed = await commitInPlace(this.ctx, ledger, state, { ...advance, metadataKey, cleanup: kept?.cleanup ?? advance.cleanup });
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
    this.deps.log.info('Iceberg merge committed', { ...result, table: formatTableRef(table) });
    return result;
  }

  /** No new events: compaction or expiry may still be due (time passes). Undefined when neither is. */
  async maintain(table: TableRef, state: MergeState, advance: MergeAdvance): Promise<TableMergeResult | undefined> {
    if (!state.metadataKey) return undefined;
    const tag = this.tagFor(state);
    const current = await loadVersion(this.store, state.metadataKey);
    const location = await this.locationOf(table, current);
    // What an earlier attempt of this maintenance staged is named by its own run: delete it first.
    const kept = await this.housekeeping(location.home, current, tag, () => this.discardUncommitted(location, state, current.version));
    if (kept.version === current) return undefined;
    const ledger = mergeLedger(this.deps.merges, this.owner, this.clock, (s) => this.settle(s));
    const committed = await commitInPlace(this.ctx, ledger, state, { ...advance, metadataKey: kept.version.metadataKey, cleanup: kept.cleanup });
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
  async settle(state: MergeState): Promise<void> {
    // A gone table's rewrite commits no version, but still leaves its plan and records to delete.
    if (state.metadataKey) await this.catalog.publish(state.table, { metadataKey: state.metadataKey, previousMetadataKey: state.previousMetadataKey });
    if (!state.cleanup) return;
    const body = await this.store.get(state.cleanup);
    if (!body) return; // a roll-forward after the deletes
    await this.store.delete(JSON.parse(new TextDecoder().decode(body)) as string[]);
    await this.store.delete([state.cleanup]);
  }
}

/** What `stage` produced: the version to commit (none when a gone table never had one). */
interface StagedMerge {
  readonly version: TableVersion | undefined;
  readonly schemaVersion: number | undefined;
  readonly gone: boolean;
  readonly mode: NonNullable<TableMergeResult['mode']>;
  readonly stats: readonly Staged[];
}

/** A scratch DuckDB database for one table's events (spills to disk). */
class Duck {
  private constructor(
    private readonly instance: DuckDBInstance,
    readonly conn: DuckDBConnection,
  ) {}

  static async open(work: string): Promise<Duck> {
    const instance = await DuckDBInstance.create(join(work, 'merge.duckdb'), { temp_directory: join(work, 'spill') });
    return new Duck(instance, await instance.connect());
  }

  close(): void {
    this.conn.closeSync();
    this.instance.closeSync();
  }
}
