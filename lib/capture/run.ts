import { randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { type Faults, noFaults } from '../commit/faults.ts';
import { acquireLease, sourceLease } from '../commit/lease.ts';
import { type SourceAdvance, sourceLedger } from '../commit/ledgers.ts';
import { advance, type CommitContext, commit, type Ledger, recover } from '../commit/protocol.ts';
import { type Config, databaseFilter, tableFilter } from '../config/config.ts';
import { type BinlogPosition, comparePositions, formatPosition, LOG_POS_MODULUS } from '../core/position.ts';
import { ErrorCode, isFatal, SluiceError } from '../errors.ts';
import { encodeSource, markerLine } from '../format/event.ts';
import { epochField, type ManifestDdl } from '../format/manifest.ts';
import { runControlPrefix, seq } from '../format/seq.ts';
import { type Log, type MetricsSink, noMetrics } from '../log.ts';
import { timed } from '../profile.ts';
import { Catalog, type CatalogFilter, historyObject, tableKey } from '../schema/catalog.ts';
import type { TableRef } from '../schema/definition.ts';
import type { SchemaVersion } from '../schema/version.ts';
import { Batch } from '../sink/s3/batch.ts';
import { binlogStaging, catalogKey, dataKey, manifestKey, pad, schemaKey } from '../sink/s3/keys.ts';
import { getJson } from '../sink/s3/objects.ts';
import { StagingSweep } from '../sink/s3/staging-sweep.ts';
import { requestJob, requestSnapshot } from '../snapshot/plan.ts';
import { type BinlogItem, BinlogReader } from '../source/mysql/binlog-reader.ts';
import { historyAt, startupPosition } from '../source/mysql/binlog-scan.ts';
import { type Dialect, dialectOf } from '../source/mysql/dialect/dialect.ts';
import { BinlogHistories } from '../source/mysql/history.ts';
import { listTables } from '../source/mysql/schema.ts';
import {
  createdSince,
  databaseCollations,
  readCharsets,
  readTableVersion,
  readVersions,
  type ServerTraits,
  serverTraits,
  versionsNow,
} from '../source/mysql/schema-read.ts';
import { connect, masterPosition, preflight, type SqlConnection } from '../source/mysql/server.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SnapshotJob, SnapshotStore } from '../state/snapshot-store.ts';
import type { SnapshotRequest, SourceState, StateStore } from '../state/store.ts';
import { currentRows } from './current-rows.ts';
import { followHistory, isForeign } from './follow.ts';
import { boundaryAction, type Deadlines, deadlines, latencyWait, shouldStop } from './policy.ts';
import { type DdlOutcome, SchemaTracker, shapeOfVersion } from './schema-tracker.ts';
import { TransactionCursor, writeRows } from './transaction.ts';

export interface CaptureDeps {
  readonly config: Config;
  readonly s3: S3Client;
  readonly store: StateStore;
  readonly log: Log;
  readonly clock?: () => number;
  readonly faults?: Faults;
  readonly metrics?: MetricsSink;
  /** Where snapshot requests are recorded (startup `initial`); without it `initial` behaves like `latest`. */
  readonly snapshots?: SnapshotStore;
  /** Called when this run requests a snapshot (the initial copy, or one a DDL needs), e.g. to invoke the snapshot function. */
  readonly onSnapshotRequested?: (job: SnapshotJob) => Promise<void>;
}

export interface CaptureOptions {
  /** Time this run may take in all (a Lambda's remaining time); the lease lasts exactly this long. */
  readonly budgetMs: number;
  /**
   * Stop once caught up with the server's binlog end as of the start, instead of reading until the
   * budget is spent. Defaults to the config's (SLUICE_STOP_WHEN_CAUGHT_UP, `sluice capture --once`).
   */
  readonly stopWhenCaughtUp?: boolean;
  /** Identifies this run as lease owner and in staging keys. */
  readonly runId?: string;
  /** Ends the run at the next transaction boundary, as its soft deadline would (commits what it holds). */
  readonly signal?: AbortSignal;
  /** How long to wait for a lease another run holds (a killed run's runs out after `SLUICE_LEASE_SECONDS`); 0: report it busy at once. */
  readonly waitForLeaseMs?: number;
  /** Called once when the run starts waiting for the lease, with who holds it until when. */
  readonly onLeaseBusy?: (reason: string) => void;
}

export interface CaptureResult {
  status: 'captured' | 'busy';
  /** When busy: who holds the lease, and until when. */
  reason?: string;
  runId: string;
  commits: number;
  heartbeats: number;
  events: number;
  transactions: number;
  position?: BinlogPosition;
  caughtUp: boolean;
  /** Set when this run requested the initial snapshot. */
  snapshotRequested?: string;
  /** How far behind the binlog the run ended: 0 when caught up, else the age of the last transaction read. */
  lagSeconds?: number;
}

/** Where a run starts and what it knows of the tables there. */
interface RunStart {
  start: BinlogPosition;
  target: BinlogPosition;
  /** MySQL: gtid_purged when the run started (BinlogReaderOptions.purged). */
  purged?: string;
  requested?: SnapshotJob;
  /** The server's dialect, chosen once for the run. */
  dialect: Dialect;
  traits: ServerTraits;
  catalog: Catalog;
  /** Control events the run writes before reading (tables that entered or left the filters), and their snapshots. */
  opening: DdlOutcome;
}

async function startPosition(deps: CaptureDeps, state: SourceState, history: BinlogHistories): Promise<RunStart> {
  const { config, log } = deps;
  const conn = await connect(await mysqlTarget(config));
  try {
    const dialect = await dialectOf(conn);
    await preflight(conn); // every run: one query, and a setting may change between two ticks
    const traits = await serverTraits(conn, dialect);
    // The server's character sets, read once per run: the catalog records them when they changed.
    const charsets = await readCharsets(conn);
    const target = await masterPosition(conn);
    await history.checkStored(conn);
    const purged = (await dialect.gtidState(conn))?.purged.toString() || undefined;
    if (state.position) {
      const opened = await openCatalog(deps, conn, state, state.position, traits);
      if (opened.catalog.useCharsets(charsets) && state.catalog !== undefined)
        log.info("the server's character sets differ from the catalog's; DDL from here on is read with the server's");
      return { start: await withGtids(dialect, conn, state.position), target, purged, dialect, traits, ...opened };
    }
    // First run. Starting at the server's current position (initial, latest): the tables' versions
    // are read there, with no DDL between them and the position, so the catalog is exact from the start.
    const now = config.startup.mode === 'initial' || config.startup.mode === 'initial-only' || config.startup.mode === 'latest';
    const fresh = now ? await versionsNow(conn, tableFilter(config)) : undefined;
    // initial: the position read before the snapshot was requested is where the poller starts, so
    // every change the snapshot's pages might miss is in the stream (see lib/snapshot/worker.ts).
    let start: BinlogPosition;
    let requested: SnapshotJob | undefined;
    // The start of an earlier first run's snapshot request was read then: its history is not today's.
    let earlier = false;
    if ((config.startup.mode === 'initial' || config.startup.mode === 'initial-only') && deps.snapshots) {
      const existing = await deps.snapshots.latestJob(config.sourceId);
      start = existing?.startPosition ?? (fresh?.position as BinlogPosition);
      earlier = existing?.startPosition !== undefined;
      if (!existing?.startPosition) {
        log.info('no stored position: starting from the startup setting', { startup: config.startup.mode, start });
        requested = await requestSnapshot({ ...deps, snapshots: deps.snapshots }, null, start);
        await deps.onSnapshotRequested?.(requested);
      }
    } else start = fresh?.position ?? (await startupPosition(config, conn, log));
    start = await withGtids(dialect, conn, start);
    // Stored before the stream reads there: with its history, which tells it from the next one (historyAt).
    if (!earlier) history.know(start, await historyAt(await mysqlTarget(config), conn, start));
    const at = { epoch: state.epoch, commitSeq: state.commitSeq + 1 };
    const catalog = fresh ? catalogOf(config, fresh.versions, fresh.databases, start, at) : await initialCatalog(conn, deps, start, at, traits);
    catalog.useCharsets(charsets);
    return { start, target, purged, requested, dialect, traits, catalog, opening: { events: [], snapshots: [] } };
  } finally {
    await conn.end();
  }
}

/**
 * A start position that lacks the GTIDs executed at it (a first run, a reset, a position stored
 * before they were recorded) gets them from the server, once (Dialect.withGtids: MariaDB every
 * domain's last, MySQL the exact set); the stream carries them on, so every position the run stores
 * has them, and the history checks and following a failover (follow.ts) work from its first commit.
 */
async function withGtids(dialect: Dialect, conn: SqlConnection, position: BinlogPosition): Promise<BinlogPosition> {
  return dialect.withGtids(conn, position);
}

/** The filters as the catalog records them. */
const filterOf = (config: Config): CatalogFilter => ({ include: config.include.map((r) => r.source), exclude: config.exclude.map((r) => r.source) });

/** A catalog of versions read from the server at `position`, recorded by the commit `commitSeq`. */
function catalogOf(
  config: Config,
  versions: readonly SchemaVersion[],
  databases: ReadonlyMap<string, string>,
  position: BinlogPosition,
  at: { epoch: number; commitSeq: number },
): Catalog {
  const catalog = Catalog.from(undefined);
  catalog.setFilter(filterOf(config));
  const prefix = runControlPrefix(at.epoch, position, at.commitSeq);
  for (const [i, version] of versions.entries()) catalog.put({ version, seq: seq(prefix, i), position, origin: 'server' });
  const relevant = databaseFilter(config);
  for (const [db, collation] of databases) if (relevant(db)) catalog.setDatabaseCollation(db, collation);
  return catalog;
}

/**
 * A source with a position but no catalog yet (it started at a past position, or ran before
 * sluice kept a schema history): the tables as the server describes them now, except those the
 * binlog creates after the position (what the server describes is what their last CREATE made:
 * that CREATE gives the version, see `createdSince`). DDL between the position and now that this
 * contradicts shows up as a TABLE_MAP mismatch or an impossible statement, and is handled as such
 * (re-snapshot, or a stop with the way out).
 */
async function initialCatalog(
  conn: SqlConnection,
  deps: CaptureDeps,
  position: BinlogPosition,
  at: { epoch: number; commitSeq: number },
  traits: ServerTraits,
): Promise<Catalog> {
  const created = await createdSince(conn, position, traits);
  const tables = (await listTables(conn, tableFilter(deps.config))).filter((t) => !created.tables.has(tableKey(t)));
  const databases = new Map([...(await databaseCollations(conn))].filter(([db]) => !created.databases.has(db)));
  return catalogOf(deps.config, await readVersions(conn, tables, new Map()), databases, position, at);
}

/** The catalog the source's state points at (commit `commit`). */
async function storedCatalog(deps: CaptureDeps, commit: number): Promise<Catalog> {
  const { config } = deps;
  const document = await getJson(deps.s3, config.bucket, catalogKey(config.prefix, config.sourceId, commit));
  if (!document)
    throw new SluiceError(
      ErrorCode.STAGING_LOST,
      `the schema catalog ${catalogKey(config.prefix, config.sourceId, commit)} that the source's state points at is missing; restore it from a bucket version`,
    );
  return Catalog.from(document as Parameters<typeof Catalog.from>[0]);
}

/**
 * After a change of position that skipped transactions (`state.resync`, lib/ops/state-admin.ts).
 * When the skipped transactions are known to have written some tables only (same history, no DDL
 * among them), those tables get a reset (`t resnapshot`) and a snapshot, their versions unchanged.
 * Otherwise (another history, a purge, DDL skipped) nothing recorded says what the tables hold at
 * the new position: every table the old catalog has gets a reset (`t history`), and every
 * captured table the server has there is read anew and copied again by a snapshot requested in
 * the same commit; a table the server no longer has (or that the binlog creates after the
 * position) gets `t drop`. The resets are written at the new position in the new epoch, so they
 * sort after everything read before and before every page and event read after
 * (lib/format/seq.ts). Version numbers continue the old catalog's, so no schema history object is
 * overwritten.
 */
async function resyncCatalog(
  deps: CaptureDeps,
  conn: SqlConnection,
  state: SourceState,
  position: BinlogPosition,
  traits: ServerTraits,
): Promise<{ catalog: Catalog; opening: DdlOutcome }> {
  const { config, log } = deps;
  const catalog = state.catalog === undefined ? Catalog.from(undefined) : await storedCatalog(deps, state.catalog);
  const prefix = runControlPrefix(state.epoch, position, state.commitSeq + 1);
  let index = 0;
  const next = () => seq(prefix, index++);
  const opening: DdlOutcome = { events: [], snapshots: [] };
  const listed = state.resync?.tables;
  if (listed && state.catalog !== undefined) {
    for (const table of listed) {
      const version = catalog.live(table);
      if (!version) continue;
      opening.events.push({ table, op: 't', kind: 'resnapshot', version, seq: next(), position });
      opening.snapshots.push({ table, reason: 'skipped' });
    }
    log.info('transactions were skipped: resetting and copying again the tables they wrote', { reason: state.resync?.reason, tables: opening.events.length });
    return { catalog, opening };
  }
  const created = await createdSince(conn, position, traits);
  const present = new Set<string>();
  for (const table of await listTables(conn, tableFilter(config))) {
    if (created.tables.has(tableKey(table)) || catalog.isSequence(table)) continue;
    const version = await readTableVersion(conn, table, catalog.entry(table)?.version);
    if (!version) continue;
    present.add(tableKey(table));
    const at = next();
    catalog.put({ version, seq: at, position, origin: 'server', ddl: { kind: 'history' } });
    opening.events.push({ table, op: 't', kind: 'history', version, seq: at, position });
    opening.snapshots.push({ table, reason: 'history' });
  }
  for (const version of catalog.liveTables()) {
    if (present.has(tableKey(version))) continue;
    const at = next();
    const dropped = { ...version, dropped: true as const };
    catalog.put({ version: dropped, seq: at, position, origin: 'server', ddl: { kind: 'history' } }, false);
    opening.events.push({ table: { db: version.db, table: version.table }, op: 't', kind: 'drop', version: dropped, seq: at, position });
  }
  const relevant = databaseFilter(config);
  for (const [db, collation] of await databaseCollations(conn))
    if (relevant(db) && !created.databases.has(db) && catalog.databaseCollation(db) !== collation) catalog.setDatabaseCollation(db, collation);
  catalog.setFilter(filterOf(config));
  log.info('the binlog history changed where transactions may be missing: resetting and copying every captured table again', {
    reason: state.resync?.reason,
    epoch: state.epoch,
    tables: present.size,
    gone: opening.events.length - present.size,
  });
  return { catalog, opening };
}

/**
 * The catalog the stored position points at, and what changed in the filters since: tables that
 * entered the captured set get a reset and a snapshot, tables that left it a reset.
 */
async function openCatalog(
  deps: CaptureDeps,
  conn: SqlConnection,
  state: SourceState,
  position: BinlogPosition,
  traits: ServerTraits,
): Promise<{ catalog: Catalog; opening: DdlOutcome }> {
  const { config } = deps;
  if (state.resync) return resyncCatalog(deps, conn, state, position, traits);
  if (state.catalog === undefined)
    return {
      catalog: await initialCatalog(conn, deps, position, { epoch: state.epoch, commitSeq: state.commitSeq + 1 }, traits),
      opening: { events: [], snapshots: [] },
    };
  const catalog = await storedCatalog(deps, state.catalog);
  const opening: DdlOutcome = { events: [], snapshots: [] };
  const filter = filterOf(config);
  // Only a change of the filters moves tables in or out here; tables created, dropped or renamed
  // since the stored position are the binlog's to tell (their DDL is still ahead of the reader).
  if (JSON.stringify(catalog.filter) === JSON.stringify(filter)) return { catalog, opening };
  const before = catalog.filter
    ? tableFilter({ include: catalog.filter.include.map((r) => new RegExp(r)), exclude: catalog.filter.exclude.map((r) => new RegExp(r)) })
    : undefined;
  const accept = tableFilter(config);
  const prefix = runControlPrefix(state.epoch, position, state.commitSeq + 1);
  let index = 0;
  const next = () => seq(prefix, index++);
  for (const table of await listTables(conn, accept)) {
    if (catalog.live(table) || catalog.isSequence(table) || before?.(table.db, table.table)) continue;
    const version = await readTableVersion(conn, table, catalog.entry(table)?.version);
    if (!version) continue;
    const at = next();
    catalog.put({ version, seq: at, position, origin: 'server', ddl: { kind: 'include' } });
    opening.events.push({ table, op: 't', kind: 'include', version, seq: at, position });
    opening.snapshots.push({ table, reason: 'include' });
  }
  for (const version of catalog.liveTables()) {
    if (accept(version.db, version.table)) continue;
    const at = next();
    const dropped = { ...version, dropped: true as const };
    catalog.put({ version: dropped, seq: at, position, origin: 'server', ddl: { kind: 'exclude' } }, false);
    opening.events.push({ table: { db: version.db, table: version.table }, op: 't', kind: 'exclude', version: dropped, seq: at, position });
  }
  // Databases the old filters ruled out have no recorded charset, or one from before they were ruled
  // out (their ALTERs since were not recorded): the server's now, as for their tables.
  const relevant = databaseFilter(config);
  const before$ = catalog.filter ? databaseFilter({ include: catalog.filter.include.map((r) => new RegExp(r)) }) : undefined;
  for (const [db, collation] of await databaseCollations(conn))
    if (relevant(db) && before$ && !before$(db) && catalog.databaseCollation(db) !== collation) catalog.setDatabaseCollation(db, collation);
  catalog.setFilter(filter);
  return { catalog, opening };
}

/** The run's schema tracker over `catalog`: it reads a table's new version, and lists the tables, on connections of their own. */
function schemaTracker(
  config: Config,
  target: Awaited<ReturnType<typeof mysqlTarget>>,
  dialect: Dialect,
  traits: ServerTraits,
  catalog: Catalog,
  log: Log,
): SchemaTracker {
  return new SchemaTracker(catalog, {
    traits,
    accept: tableFilter(config),
    acceptDatabase: databaseFilter(config),
    readVersion: async (table, previous) => {
      const conn = await connect(target);
      return dialect
        .prepareSession(conn)
        .then(() => readTableVersion(conn, table, previous))
        .finally(() => conn.end());
    },
    overrides: config.ddlOverrides,
    unknownDdl: config.ddlUnknown,
    listTables: async () => {
      const conn = await connect(target);
      return listTables(conn, tableFilter(config)).finally(() => conn.end());
    },
    log,
  });
}

/**
 * One capture run (one poller invocation): lease → recovery → preflight → stream and commit in
 * batches at transaction boundaries → release. The commits go through lib/commit/protocol.ts with
 * the source's state item as the ledger.
 */
export async function runCapture(deps: CaptureDeps, options: CaptureOptions): Promise<CaptureResult> {
  const { config, store, log } = deps;
  const clock = deps.clock ?? Date.now;
  const runId = options.runId ?? randomUUID();
  const result: CaptureResult = { status: 'captured', runId, commits: 0, heartbeats: 0, events: 0, transactions: 0, caughtUp: false };

  // The lease is short and renewed while the run works (never past the run's end), so a killed run
  // blocks the source for one lease, not for its whole run; every write stays fenced by it.
  const lease = await acquireLease(sourceLease(store, config.sourceId), {
    owner: runId,
    clock,
    leaseMs: config.leaseMs,
    budgetMs: options.budgetMs,
    heartbeat: { log, warning: 'could not renew the capture lease; commits fail once it has run out' },
    waitMs: options.waitForLeaseMs,
    onBusy: options.onLeaseBusy,
  });
  if ('busy' in lease) {
    log.info('another run holds the lease; exiting', { reason: lease.busy });
    return { ...result, status: 'busy', reason: lease.busy };
  }
  // The run's time starts once it holds the lease (a run that waited for it still gets its budget).
  const limits = deadlines(lease.acquiredAt, options.budgetMs, config.safetyMarginMs);
  let state: SourceState = lease.held;
  const ctx: CommitContext = { s3: deps.s3, bucket: config.bucket, faults: deps.faults ?? noFaults, log, clock };
  // Recovery deletes a crashed run's staging at once; this run's commits leave theirs to the sweep.
  const sweep = new StagingSweep(deps.s3, config.bucket, log);
  const snapshots = deps.snapshots;
  // Replaced when the run follows its transactions to another history (followHistory).
  let history = new BinlogHistories(state);
  const ledger = sourceLedger(
    store,
    runId,
    clock,
    snapshots &&
      (async (request) => {
        const job = await requestJob({ ...deps, snapshots }, request);
        if (job) await deps.onSnapshotRequested?.(job);
      }),
    (position) => history.of(position),
  );

  let stream: CaptureStream | undefined;
  try {
    state = await recover(ctx, ledger, state, binlogStaging(config.prefix, config.sourceId));
    for (let followed = false; ; followed = true) {
      try {
        stream = await openStream(state);
        if (!stream) return result;
        await stream.run();
        return result;
      } catch (error) {
        // Another history, found before anything read from it was committed: follow the
        // transactions by GTID when the server proves it carries them (lib/capture/follow.ts), once.
        if (followed || !isForeign(error) || stream?.moved) throw error;
        const failed = stream;
        stream = undefined;
        await failed?.abort();
        await failed?.stop();
        state = await followHistory(deps, failed?.current ?? state, runId, error);
        history = new BinlogHistories(state);
      }
    }
  } catch (error) {
    await stream?.abort();
    if (isFatal(error)) await store.recordError(config.sourceId, { code: error.code, message: error.message }, clock()).catch(() => {});
    throw error;
  } finally {
    lease.stop();
    await stream?.stop();
    await sweep.flush();
    await lease.release().catch((e) => log.warn('could not release lease', { error: String(e) }));
  }

  /** Where to start and what the tables are there; the stream, having committed what it decided before reading (undefined: initial-only). */
  async function openStream(current: SourceState): Promise<CaptureStream | undefined> {
    state = current;
    const { start, target, purged, requested, dialect, traits, catalog, opening } = await startPosition(deps, state, history);
    result.snapshotRequested = requested?.id;
    if (config.startup.mode === 'initial-only' && !state.position) {
      log.info('initial-only: the snapshot copies the tables; the poller does not stream');
      return undefined;
    }
    if (!state.position) state = await advance(ledger, state, { position: start });
    const tracker = schemaTracker(config, await mysqlTarget(config), dialect, traits, catalog, log);
    const opened = new CaptureStream(
      deps,
      { ...ctx, sweep },
      ledger,
      state,
      { runId, start, target, purged, limits, stopWhenCaughtUp: options.stopWhenCaughtUp ?? config.stopWhenCaughtUp, history, signal: options.signal },
      result,
      tracker,
    );
    stream = opened;
    await opened.open(opening);
    return opened;
  }
}

/** The streaming part of a run: reads the binlog from `start`, one small handler per item kind. */
class CaptureStream {
  private readonly cursor: TransactionCursor;
  private readonly metrics: MetricsSink;
  private readonly clock: () => number;
  private reader: BinlogReader | undefined;
  private batch: Batch | undefined;
  private batches = 0;
  /** The last transaction boundary read. */
  private position: BinlogPosition;
  /** The position the state item holds. */
  private committed: BinlogPosition;
  private lastCommitAt: number;
  /** Whether the last item read was `idle` (nothing left to read right now). */
  private idle = false;
  /** What the open batch's DDL recorded (the manifest's `ddl`) and the snapshots it asks for. */
  private ddl: ManifestDdl[] = [];
  private snapshotsAsked: { table: TableRef; reason: string }[] = [];
  /** Tables the open batch re-copies by sluice's own decision (a DDL it could not classify): counted once committed. */
  private decided = 0;

  constructor(
    private readonly deps: CaptureDeps,
    private readonly ctx: CommitContext,
    private readonly ledger: Ledger<SourceState, SourceAdvance>,
    private state: SourceState,
    private readonly spec: {
      runId: string;
      start: BinlogPosition;
      target: BinlogPosition;
      limits: Deadlines;
      stopWhenCaughtUp: boolean;
      history: BinlogHistories;
      signal: AbortSignal | undefined;
      purged?: string;
    },
    private readonly result: CaptureResult,
    private readonly tracker: SchemaTracker,
  ) {
    this.metrics = deps.metrics ?? noMetrics;
    this.clock = ctx.clock;
    // A run reads one history: the epoch its state holds (changing it takes this run's lease).
    this.cursor = new TransactionCursor(state.epoch);
    this.position = spec.start;
    this.committed = spec.start;
    this.lastCommitAt = this.clock();
  }

  private readonly caughtUp = () => comparePositions(this.position, this.spec.target) >= 0;

  private readCommitted = false;

  /** Whether a commit or heartbeat of this stream moved the stored position past where it started: something read was committed. */
  get moved(): boolean {
    return this.readCommitted;
  }

  /** The source's state as this stream's last write left it. */
  get current(): SourceState {
    return this.state;
  }

  /**
   * Commits what the run decided before reading — the catalog a source starts with, tables that
   * entered or left the filters — at the position it starts from, before any transaction.
   */
  async open(opening: DdlOutcome): Promise<void> {
    const { start } = this.spec;
    const source = encodeSource({ file: start.file, pos: start.pos, gtid: null, serverId: null, tsMs: this.clock(), txn: 'run', snapshot: false });
    this.writeOutcome(opening, source, this.clock());
    if (this.state.resync) this.metrics.addMetric('HistoryResyncs', 'Count', 1);
    if (this.tracker.catalog.dirty || this.state.resync) {
      this.openBatch(this.clock());
      await this.commitBatch();
    }
  }

  /** Writes a DDL's control events into the batch and notes the snapshots it asks for. */
  private writeOutcome(outcome: DdlOutcome, source: string, now: number): void {
    if (!outcome.events.length && !outcome.snapshots.length) return;
    const batch = this.openBatch(now);
    for (const event of outcome.events) {
      const cause = { kind: event.kind, position: event.position, ...(event.decidedBy ? { decidedBy: event.decidedBy } : {}) };
      const line = markerLine(event.op, event.table, event.version.version, cause, source, event.seq);
      void batch.write(shapeOfVersion(event.version), line, event.seq);
      this.ddl.push({
        seq: event.seq,
        db: event.table.db,
        table: event.table.table,
        op: event.op,
        kind: event.kind,
        schema: event.version.version,
        ...(event.decidedBy ? { decided_by: event.decidedBy } : {}),
      });
    }
    this.snapshotsAsked.push(...outcome.snapshots);
    this.decided += outcome.decided?.length ?? 0;
  }

  private openBatch(now: number): Batch {
    const { config } = this.deps;
    this.batch ??= new Batch(this.ctx.s3, config.bucket, `${binlogStaging(config.prefix, config.sourceId)}${this.spec.runId}/${pad(++this.batches, 6)}/`, now);
    return this.batch;
  }

  async run(): Promise<void> {
    if (this.spec.stopWhenCaughtUp && this.caughtUp()) {
      this.result.caughtUp = true;
      this.result.position = this.position;
      return;
    }
    const { config } = this.deps;
    this.reader = new BinlogReader({
      target: await mysqlTarget(config),
      start: this.spec.start,
      filter: tableFilter(config),
      capture: { history: this.spec.history },
      purged: this.spec.purged,
    });
    const { start } = this.spec;
    if (start.pos >= LOG_POS_MODULUS)
      this.deps.log.info('resuming past 4 GiB in a binlog file: by GTID (MySQL, gtid_mode ON), else re-reading the file up to it', { start });
    // Items ready at hand are taken synchronously; the iterator only to wait (see takeReady).
    const items = this.reader[Symbol.asyncIterator]();
    try {
      for (;;) {
        let item = this.reader.takeReady();
        if (!item) {
          const next = await items.next();
          if (next.done) break;
          item = next.value;
        }
        const end = this.onItem(item);
        if (end === true || (end !== false && (await end))) break;
      }
    } finally {
      await items.return?.();
    }
    // A run that ends re-reading up to its start (a position past 4 GiB, binlog-dump.ts) made no progress: said so, not hidden.
    const reread = this.reader.rereading;
    if (reread && !this.spec.signal?.aborted) {
      throw new SluiceError(
        ErrorCode.RESUME_PAST_4GIB,
        `the stored position ${formatPosition(reread.to)} lies past 4 GiB in its binlog file, where a dump cannot start by file and offset (COM_BINLOG_DUMP carries 4 bytes; a start by GTID needs MySQL with gtid_mode ON and the position's GTID set). ` +
          `This run re-read ${reread.to.file} from its start and had got to offset ${reread.at.pos} of ${reread.to.pos} when its time was up; no change was read. ` +
          'Give one run the time to get past it: `sluice capture --once --seconds 900` (or raise the poller timeout once); later runs go on as before (docs/RUNBOOK.md, RESUME_PAST_4GIB).',
      );
    }
    this.result.position = this.committed;
    this.result.caughtUp ||= this.caughtUp();
    const lastTimestamp = this.cursor.lastTimestamp;
    this.result.lagSeconds =
      this.result.caughtUp || this.idle || lastTimestamp === undefined ? 0 : Math.max(0, Math.round((this.clock() - lastTimestamp) / 1000));
  }

  /** Handles one item; true when the run ends here. Synchronous unless the item needs to wait (a commit, back-pressure, a DDL). */
  private onItem(item: BinlogItem): boolean | Promise<boolean> {
    const now = this.clock();
    this.idle = item.kind === 'idle';
    if (item.kind === 'idle') return this.cursor.inTransaction ? false : this.atBoundary(now);
    if (this.cursor.inTransaction && now >= this.spec.limits.hard) {
      throw new SluiceError(
        ErrorCode.TXN_OVER_BUDGET,
        `the transaction at seq ${this.cursor} did not end before this run's time was up; the next run re-reads it`,
        { retriable: true },
      );
    }
    switch (item.kind) {
      case 'begin':
        this.cursor.begin(item);
        return false;
      case 'rows': {
        const wait = this.onRows(item, now);
        return wait ? wait.then(() => false) : false;
      }
      case 'query':
        return this.onQuery(item, now).then(() => false);
      case 'commit':
        if (this.cursor.end() && this.batch) this.batch.transactions++;
        this.position = item.position;
        return this.atBoundary(now);
      case 'progress':
        this.position = item.position;
        return this.atBoundary(now);
    }
  }

  /** Writes a rows event; returns what to await before reading on (back-pressure), if anything. */
  private onRows(item: Extract<BinlogItem, { kind: 'rows' }>, now: number): Promise<void> | undefined {
    const { shape, outcome, periodEnd } = this.tracker.onRows(item.shape, item.map, () => this.cursor.nextSeq(), this.position);
    if (outcome) {
      this.cursor.hasRows = true;
      this.writeOutcome(outcome, this.cursor.source, now);
    }
    const batch = this.openBatch(now);
    if (!periodEnd) return encodeRows(batch, shape === item.shape ? item : { ...item, shape }, this.cursor);
    // A system-versioned table: its current rows only (lib/capture/current-rows.ts).
    let wait: Promise<void> | undefined;
    for (const part of currentRows(item, periodEnd)) wait = encodeRows(batch, { ...part, shape }, this.cursor) ?? wait;
    return wait;
  }

  /** A DDL statement changes the schema history. (DML logged as a statement writing a captured table never gets here: the reader's guard stops before it.) */
  private async onQuery(item: Extract<BinlogItem, { kind: 'query' }>, now: number): Promise<void> {
    if (!item.ddl) return;
    const outcome = await this.tracker.onDdl(item, () => this.cursor.nextSeq());
    if (outcome.events.length) this.cursor.hasRows = true;
    this.writeOutcome(outcome, this.cursor.source, now);
    // A catalog change without events (a database's default charset) must still be committed with the position.
    if (this.tracker.catalog.dirty) this.openBatch(now);
  }

  /** At a transaction boundary: commit, heartbeat or wait as the policy says; true when the run ends here. */
  private atBoundary(now: number): boolean | Promise<boolean> {
    const stop = shouldStop(now, this.spec.limits, this.spec.stopWhenCaughtUp, this.caughtUp) || this.spec.signal?.aborted === true;
    const decidedAt = this.clock();
    const action = boundaryAction({
      now: decidedAt,
      // A changed catalog is committed at once: the position must not move past its DDL without it.
      force: stop || this.tracker.catalog.dirty,
      batch: this.batch && this.tracker.catalog.dirty ? { ...this.batch, events: Math.max(1, this.batch.events) } : this.batch,
      // Or the stored position's history, unrecorded (a position moved by GTID, or stored by an earlier sluice), is known now.
      advanced: comparePositions(this.position, this.committed) > 0 || (this.state.history === undefined && this.spec.history.of(this.position) !== undefined),
      // Behind the binlog end seen at the start (a backlog), batches are cut by size and age only.
      caughtUp: (this.reader?.drained ?? true) && this.caughtUp(),
      lastCommitAt: this.lastCommitAt,
      limits: this.deps.config.batch,
      commitIntervalMs: this.deps.config.commitIntervalMs,
    });
    if (action === 'commit') return this.commitBatch().then(() => stop);
    if (action === 'heartbeat') return this.heartbeat(decidedAt).then(() => stop);
    const wait = latencyWait(decidedAt, this.batch, this.deps.config.batch);
    if (wait !== undefined) this.reader?.wakeWithin(wait);
    return stop;
  }

  private async commitBatch(): Promise<void> {
    const batch = this.batch;
    if (!batch) return;
    const { config } = this.deps;
    const started = this.clock();
    const to = this.position;
    const commitSeq = this.state.commitSeq + 1;
    const catalog = this.tracker.catalog;
    const saved = catalog.dirty ? catalog.save(config.sourceId, to) : undefined;
    const documents = saved
      ? [
          ...saved.versions.map((entry) => ({
            key: schemaKey(config.prefix, config.sourceId, entry.version.db, entry.version.table, entry.version.version),
            body: historyObject(config.sourceId, entry),
          })),
          { key: catalogKey(config.prefix, config.sourceId, commitSeq), body: saved.document },
        ]
      : [];
    const snapshots: SnapshotRequest[] = this.snapshotsAsked.length
      ? [
          {
            id: `ddl-${pad(commitSeq)}`,
            tables: this.snapshotsAsked.map((s) => s.table),
            reason: [...new Set(this.snapshotsAsked.map((s) => s.reason))].join(', '),
            startPosition: to,
          },
        ]
      : [];
    this.state = await commit(
      this.ctx,
      this.ledger,
      this.state,
      batch,
      {
        source: config.sourceId,
        placement: {
          commit_seq: commitSeq,
          position: { from: this.committed, to },
          ...epochField(this.state.epoch),
          transactions: batch.transactions,
          ...(this.ddl.length ? { ddl: this.ddl } : {}),
          ...(saved ? { schema: { versions: documents.slice(0, -1).map((d) => d.key), catalog: catalogKey(config.prefix, config.sourceId, commitSeq) } } : {}),
        },
        dataKey: (db, table) => dataKey(config.prefix, db, table, config.sourceId, commitSeq),
        manifestKey: manifestKey(config.prefix, config.sourceId, commitSeq),
        documents,
        snapshots,
      },
      { position: to, ...(saved ? { catalog: commitSeq } : {}), ...(this.state.resync ? { resynced: true } : {}) },
      { commitSeq, transactions: batch.transactions, position: to },
    );
    this.ddl = [];
    this.snapshotsAsked = [];
    // Every automatic decision is visible: the `t` event, the schema history, the log, status and this metric.
    if (this.decided) this.metrics.addMetric('UnclassifiedDdlResnapshots', 'Count', this.decided);
    this.decided = 0;
    this.metrics.addMetric('RowsCaptured', 'Count', batch.events);
    this.metrics.addMetric('Commits', 'Count', 1);
    this.metrics.addMetric('BatchBytes', 'Bytes', batch.size);
    this.metrics.addMetric('CommitLatency', 'Milliseconds', this.clock() - started);
    this.result.commits++;
    this.result.events += batch.events;
    this.result.transactions += batch.transactions;
    this.batch = undefined;
    this.readCommitted ||= to !== this.spec.start;
    this.committed = to;
    this.lastCommitAt = this.clock();
  }

  /** Moves the position with no data, so a quiet or filtered source never parks on an old binlog. */
  private async heartbeat(now: number): Promise<void> {
    this.state = await advance(this.ledger, this.state, { position: this.position });
    this.readCommitted ||= this.position !== this.spec.start;
    this.committed = this.position;
    this.lastCommitAt = now;
    this.result.heartbeats++;
    this.metrics.addMetric('Heartbeats', 'Count', 1);
  }

  /** Drops an uncommitted batch's uploads after a failure. */
  async abort(): Promise<void> {
    await this.batch?.abort();
  }

  async stop(): Promise<void> {
    await this.reader?.stop();
  }
}

/** writeRows, profiled as encoding under SLUICE_PROFILE=1 (lib/profile.ts). */
const encodeRows = timed('encode', writeRows);
