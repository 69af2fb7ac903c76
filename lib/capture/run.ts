import { randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { type Faults, noFaults } from '../commit/faults.ts';
import { sourceLedger } from '../commit/ledgers.ts';
import { advance, type CommitContext, commit, type Ledger, recover } from '../commit/protocol.ts';
import { type Config, tableFilter } from '../config/config.ts';
import { type BinlogPosition, comparePositions } from '../core/position.ts';
import { ErrorCode, isFatal, LeaseLostError, SluiceError } from '../errors.ts';
import { type Log, type MetricsSink, noMetrics } from '../log.ts';
import { timed } from '../profile.ts';
import { Batch } from '../sink/s3/batch.ts';
import { binlogStaging, dataKey, manifestKey, pad } from '../sink/s3/keys.ts';
import { requestSnapshot } from '../snapshot/plan.ts';
import { type BinlogItem, BinlogReader } from '../source/mysql/binlog-reader.ts';
import { startupPosition } from '../source/mysql/binlog-scan.ts';
import { BinlogHistories } from '../source/mysql/history.ts';
import { connect, masterPosition, preflight } from '../source/mysql/server.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SnapshotJob, SnapshotStore } from '../state/snapshot-store.ts';
import type { SourceState, StateStore } from '../state/store.ts';
import { boundaryAction, type Deadlines, deadlines, shouldStop } from './policy.ts';
import { logStatement } from './statement-log.ts';
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
  /** Called when this run requests the initial snapshot, e.g. to invoke the snapshot function. */
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
}

export interface CaptureResult {
  status: 'captured' | 'busy';
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

async function startPosition(
  deps: CaptureDeps,
  state: SourceState,
  history: BinlogHistories,
): Promise<{ start: BinlogPosition; target: BinlogPosition; requested?: SnapshotJob }> {
  const { config, log } = deps;
  const conn = await connect(await mysqlTarget(config));
  try {
    await preflight(conn); // every run: one query, and a setting may change between two ticks
    const target = await masterPosition(conn);
    await history.checkStored(conn);
    if (state.position) return { start: state.position, target };
    // initial: the position read before the snapshot was requested is where the poller starts, so
    // every change the snapshot's pages might miss is in the stream (see lib/snapshot/worker.ts).
    if ((config.startup.mode === 'initial' || config.startup.mode === 'initial-only') && deps.snapshots) {
      const existing = await deps.snapshots.latestJob(config.sourceId);
      if (existing?.startPosition) return { start: existing.startPosition, target };
      const start = await startupPosition(config, conn, log);
      const requested = await requestSnapshot({ ...deps, snapshots: deps.snapshots }, null, start);
      await deps.onSnapshotRequested?.(requested);
      return { start, target, requested };
    }
    return { start: await startupPosition(config, conn, log), target };
  } finally {
    await conn.end();
  }
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
  const startedAt = clock();
  const limits = deadlines(startedAt, options.budgetMs, config.safetyMarginMs);
  const result: CaptureResult = { status: 'captured', runId, commits: 0, heartbeats: 0, events: 0, transactions: 0, caughtUp: false };

  let state: SourceState;
  try {
    state = await store.acquireLease(config.sourceId, runId, limits.leaseExpires, startedAt);
  } catch (error) {
    if (error instanceof LeaseLostError) {
      log.info('another run holds the lease; exiting', { reason: error.message });
      return { ...result, status: 'busy' };
    }
    throw error;
  }
  const ctx: CommitContext = { s3: deps.s3, bucket: config.bucket, faults: deps.faults ?? noFaults, log, clock };
  const history = new BinlogHistories(state);
  const ledger = sourceLedger(store, runId, clock, history.of);

  let stream: CaptureStream | undefined;
  try {
    state = await recover(ctx, ledger, state, binlogStaging(config.prefix, config.sourceId));
    const { start, target, requested } = await startPosition(deps, state, history);
    result.snapshotRequested = requested?.id;
    if (config.startup.mode === 'initial-only' && !state.position) {
      log.info('initial-only: the snapshot copies the tables; the poller does not stream');
      return result;
    }
    if (!state.position) state = await advance(ledger, state, start);
    stream = new CaptureStream(
      deps,
      ctx,
      ledger,
      state,
      { runId, start, target, limits, stopWhenCaughtUp: options.stopWhenCaughtUp ?? config.stopWhenCaughtUp, history },
      result,
    );
    await stream.run();
    return result;
  } catch (error) {
    await stream?.abort();
    if (isFatal(error)) await store.recordError(config.sourceId, { code: error.code, message: error.message }, clock()).catch(() => {});
    throw error;
  } finally {
    await stream?.stop();
    await store.releaseLease(config.sourceId, runId).catch((e) => log.warn('could not release lease', { error: String(e) }));
  }
}

/** The streaming part of a run: reads the binlog from `start`, one small handler per item kind. */
class CaptureStream {
  private readonly cursor = new TransactionCursor();
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

  constructor(
    private readonly deps: CaptureDeps,
    private readonly ctx: CommitContext,
    private readonly ledger: Ledger<SourceState, BinlogPosition>,
    private state: SourceState,
    private readonly spec: {
      runId: string;
      start: BinlogPosition;
      target: BinlogPosition;
      limits: Deadlines;
      stopWhenCaughtUp: boolean;
      history: BinlogHistories;
    },
    private readonly result: CaptureResult,
  ) {
    this.metrics = deps.metrics ?? noMetrics;
    this.clock = ctx.clock;
    this.position = spec.start;
    this.committed = spec.start;
    this.lastCommitAt = this.clock();
  }

  private readonly caughtUp = () => comparePositions(this.position, this.spec.target) >= 0;

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
    });
    for await (const item of this.reader) {
      if (await this.onItem(item)) break;
    }
    this.result.position = this.committed;
    this.result.caughtUp ||= this.caughtUp();
    const lastTimestamp = this.cursor.lastTimestamp;
    this.result.lagSeconds =
      this.result.caughtUp || this.idle || lastTimestamp === undefined ? 0 : Math.max(0, Math.round((this.clock() - lastTimestamp) / 1000));
  }

  /** Handles one item; true when the run ends here. */
  private async onItem(item: BinlogItem): Promise<boolean> {
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
      case 'rows':
        await this.onRows(item, now);
        return false;
      case 'commit':
        if (this.cursor.end() && this.batch) this.batch.transactions++;
        if (item.ddl) logStatement(this.deps.log, tableFilter(this.deps.config), item.ddl, item.position);
        this.position = item.position;
        return this.atBoundary(now);
      case 'progress':
        this.position = item.position;
        return this.atBoundary(now);
    }
  }

  private async onRows(item: Extract<BinlogItem, { kind: 'rows' }>, now: number): Promise<void> {
    const { config } = this.deps;
    this.batch ??= new Batch(this.ctx.s3, config.bucket, `${binlogStaging(config.prefix, config.sourceId)}${this.spec.runId}/${pad(++this.batches, 6)}/`, now);
    const wait = encodeRows(this.batch, item, this.cursor);
    if (wait) await wait;
  }

  /** At a transaction boundary: commit, heartbeat or wait as the policy says; true when the run ends here. */
  private async atBoundary(now: number): Promise<boolean> {
    const stop = shouldStop(now, this.spec.limits, this.spec.stopWhenCaughtUp, this.caughtUp);
    const decidedAt = this.clock();
    const action = boundaryAction({
      now: decidedAt,
      force: stop,
      batch: this.batch,
      advanced: comparePositions(this.position, this.committed) > 0,
      lastCommitAt: this.lastCommitAt,
      limits: this.deps.config.batch,
      commitIntervalMs: this.deps.config.commitIntervalMs,
    });
    if (action === 'commit') await this.commitBatch();
    else if (action === 'heartbeat') await this.heartbeat(decidedAt);
    return stop;
  }

  private async commitBatch(): Promise<void> {
    const batch = this.batch;
    if (!batch) return;
    const { config } = this.deps;
    const started = this.clock();
    const to = this.position;
    const commitSeq = this.state.commitSeq + 1;
    this.state = await commit(
      this.ctx,
      this.ledger,
      this.state,
      batch,
      {
        source: config.sourceId,
        placement: { commit_seq: commitSeq, position: { from: this.committed, to }, transactions: batch.transactions },
        dataKey: (db, table) => dataKey(config.prefix, db, table, config.sourceId, commitSeq),
        manifestKey: manifestKey(config.prefix, config.sourceId, commitSeq),
      },
      to,
      { commitSeq, transactions: batch.transactions, position: to },
    );
    this.metrics.addMetric('RowsCaptured', 'Count', batch.events);
    this.metrics.addMetric('Commits', 'Count', 1);
    this.metrics.addMetric('BatchBytes', 'Bytes', batch.size);
    this.metrics.addMetric('CommitLatency', 'Milliseconds', this.clock() - started);
    this.result.commits++;
    this.result.events += batch.events;
    this.result.transactions += batch.transactions;
    this.batch = undefined;
    this.committed = to;
    this.lastCommitAt = this.clock();
  }

  /** Moves the position with no data, so a quiet or filtered source never parks on an old binlog. */
  private async heartbeat(now: number): Promise<void> {
    this.state = await advance(this.ledger, this.state, this.position);
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
