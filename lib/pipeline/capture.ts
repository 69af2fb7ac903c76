import { randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { type Config, tableFilter } from '../config/config.ts';
import { LeaseLostError, SluiceError } from '../errors.ts';
import { type EncodedShape, encodeKey, encodeRow, encodeSource, eventLine } from '../format/event.ts';
import { seq, seqPrefix } from '../format/seq.ts';
import { type Log, type MetricsSink, noMetrics } from '../log.ts';
import { timed } from '../profile.ts';
import { binlogStaging, pad } from '../sink/s3/keys.ts';
import { type BinlogItem, BinlogReader } from '../source/mysql/binlog-reader.ts';
import { type BinlogPosition, comparePositions } from '../source/mysql/position.ts';
import { checkPositionReadable, connect, masterPosition, preflight } from '../source/mysql/server.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SnapshotJob, SnapshotStore } from '../state/snapshot-store.ts';
import type { SourceState, StateStore } from '../state/store.ts';
import { Batch } from './batch.ts';
import { type CommitContext, commitBatch, commitPosition, recover } from './commit.ts';
import { type Faults, noFaults } from './faults.ts';
import { requestSnapshot, snapshotStalled } from './snapshot.ts';
import { startupPosition } from './startup.ts';

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
  /** Called when a snapshot is requested or has stalled, e.g. to invoke the snapshot function. */
  readonly onSnapshotRequested?: (job: SnapshotJob) => Promise<void>;
}

export interface CaptureOptions {
  /** Time this run may take in all (a Lambda's remaining time); the lease lasts exactly this long. */
  readonly budgetMs: number;
  /** Stop once caught up with the server's binlog end as of the start (`--once`), not at the budget. */
  readonly drain?: boolean;
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

let preflightDone: string | undefined;

async function startPosition(deps: CaptureDeps, state: SourceState): Promise<{ start: BinlogPosition; target: BinlogPosition; requested?: SnapshotJob }> {
  const { config, log } = deps;
  const mysql = await mysqlTarget(config);
  const conn = await connect(mysql);
  try {
    if (preflightDone !== mysql.uri) {
      await preflight(conn);
      preflightDone = mysql.uri; // cached per container: settings do not change between ticks
    }
    const target = await masterPosition(conn);
    if (state.position) {
      await checkPositionReadable(conn, state.position);
      return { start: state.position, target };
    }
    // initial: the position read before the snapshot was requested is where the poller starts, so
    // every change the snapshot's pages might miss is in the stream (see lib/pipeline/snapshot.ts).
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
 * batches at transaction boundaries → release. See lib/pipeline/commit.ts for the protocol.
 */
export async function runCapture(deps: CaptureDeps, options: CaptureOptions): Promise<CaptureResult> {
  const { config, store, log } = deps;
  const clock = deps.clock ?? Date.now;
  const metrics = deps.metrics ?? noMetrics;
  const runId = options.runId ?? randomUUID();
  const startedAt = clock();
  const leaseExpires = startedAt + options.budgetMs;
  // Soft deadline: stop taking new transactions. Hard deadline: give up a transaction still in flight
  // rather than commit after the lease is gone (the store would refuse it anyway).
  const softDeadline = leaseExpires - config.safetyMarginMs;
  const hardDeadline = leaseExpires - Math.min(2000, config.safetyMarginMs / 2);
  const result: CaptureResult = { status: 'captured', runId, commits: 0, heartbeats: 0, events: 0, transactions: 0, caughtUp: false };

  let state: SourceState;
  try {
    state = await store.acquireLease(config.sourceId, runId, leaseExpires, startedAt);
  } catch (error) {
    if (error instanceof LeaseLostError) {
      log.info('another run holds the lease; exiting', { reason: error.message });
      return { ...result, status: 'busy' };
    }
    throw error;
  }
  const ctx: CommitContext = { s3: deps.s3, bucket: config.bucket, prefix: config.prefix, store, owner: runId, faults: deps.faults ?? noFaults, log, clock };

  let reader: BinlogReader | undefined;
  let batch: Batch | undefined;
  try {
    state = await recover(ctx, state);
    // Safety net for a snapshot whose workers all died: the schedule restarts it.
    if (deps.snapshots && deps.onSnapshotRequested) {
      const job = await deps.snapshots.latestJob(config.sourceId);
      if (job && (await snapshotStalled(deps.snapshots, job, clock()))) {
        log.info('snapshot has no live worker: restarting it', { snapshot: job.id });
        await deps.onSnapshotRequested(job);
      }
    }
    const { start, target, requested } = await startPosition(deps, state);
    result.snapshotRequested = requested?.id;
    if (config.startup.mode === 'initial-only' && !state.position) {
      log.info('initial-only: the snapshot copies the tables; the poller does not stream');
      return result;
    }
    let position = start;
    if (!state.position) state = await commitPosition(ctx, state, start);
    let committed: BinlogPosition = start;
    const caughtUp = () => comparePositions(position, target) >= 0;
    if (options.drain && caughtUp()) {
      result.caughtUp = true;
      result.position = position;
      return result;
    }

    reader = new BinlogReader({ target: await mysqlTarget(config), start, filter: tableFilter(config) });
    let lastCommitAt = clock();
    let batchNumber = 0;
    let inTxn = false;
    let lastTxnAt: number | undefined;
    let idle = false;
    /** Whether the current transaction wrote captured rows (filtered tables' transactions are not counted). */
    let txnHasRows = false;
    let prefix = '';
    let index = 0;
    let source = '';

    const commitData = async (to: BinlogPosition) => {
      if (!batch) return;
      const started = clock();
      state = await commitBatch(ctx, state, batch, to);
      metrics.addMetric('RowsCaptured', 'Count', batch.events);
      metrics.addMetric('Commits', 'Count', 1);
      metrics.addMetric('BatchBytes', 'Bytes', batch.size);
      metrics.addMetric('CommitLatency', 'Milliseconds', clock() - started);
      result.commits++;
      result.events += batch.events;
      result.transactions += batch.transactions;
      batch = undefined;
      committed = to;
      lastCommitAt = clock();
    };
    /** At a boundary: cut the batch if it is due, or heartbeat the position if nothing is batched. */
    const atBoundary = async (force: boolean) => {
      const now = clock();
      if (batch && batch.events > 0) {
        const { maxBytes, maxEvents, maxAgeMs } = config.batch;
        if (force || batch.size >= maxBytes || batch.events >= maxEvents || now - batch.startedAt >= maxAgeMs) await commitData(position);
      } else if (comparePositions(position, committed) > 0 && (force || now - lastCommitAt >= config.commitIntervalMs)) {
        state = await commitPosition(ctx, state, position);
        committed = position;
        lastCommitAt = now;
        result.heartbeats++;
        metrics.addMetric('Heartbeats', 'Count', 1);
      }
    };

    read: for await (const item of reader) {
      const now = clock();
      idle = item.kind === 'idle';
      if (item.kind === 'idle') {
        if (inTxn) continue;
        const stop = now >= softDeadline || (options.drain === true && caughtUp());
        await atBoundary(stop);
        if (stop) break;
        continue;
      }
      if (inTxn && now >= hardDeadline) {
        throw new SluiceError('TXN_OVER_BUDGET', `the transaction at seq ${prefix} did not end before this run's time was up; the next run re-reads it`, {
          retriable: true,
        });
      }
      switch (item.kind) {
        case 'begin':
          lastTxnAt = item.tsMs;
          inTxn = true;
          txnHasRows = false;
          prefix = seqPrefix(item.file, item.pos);
          index = 0;
          source = encodeSource({
            file: item.file,
            pos: item.pos,
            gtid: item.gtid,
            serverId: item.serverId,
            tsMs: item.tsMs,
            txn: item.gtid ?? `${item.file}:${item.pos}`,
            snapshot: false,
          });
          break;
        case 'rows': {
          batch ??= new Batch(deps.s3, config.bucket, `${binlogStaging(config.prefix, config.sourceId)}${runId}/${pad(++batchNumber, 6)}/`, committed, now);
          txnHasRows = true;
          const accepted = encodeRows(batch, item, prefix, index, source);
          index = accepted.next;
          if (accepted.wait) await accepted.wait;
          break;
        }
        case 'commit':
        case 'progress': {
          if (item.kind === 'commit') {
            inTxn = false;
            if (batch && txnHasRows) batch.transactions++;
            if (item.ddl) log.info('schema change', { db: item.ddl.db, query: item.ddl.query.slice(0, 200) });
          }
          position = item.position;
          const stop = now >= softDeadline || (options.drain === true && caughtUp());
          await atBoundary(stop);
          if (stop) break read;
          break;
        }
      }
    }
    result.position = committed;
    result.caughtUp ||= caughtUp();
    result.lagSeconds = result.caughtUp || idle || lastTxnAt === undefined ? 0 : Math.max(0, Math.round((clock() - lastTxnAt) / 1000));
    return result;
  } catch (error) {
    if (batch) await batch.abort();
    if (error instanceof SluiceError && !error.retriable) {
      await store.recordError(config.sourceId, { code: error.code, message: error.message }, clock()).catch(() => {});
    }
    throw error;
  } finally {
    await reader?.stop();
    await store.releaseLease(config.sourceId, runId).catch((e) => log.warn('could not release lease', { error: String(e) }));
  }
}

/**
 * Encodes one rows event, line by line, into the batch; a primary-key change becomes a delete of
 * the old key and a create of the new one. Returns the next change index and, if the batch asked
 * for it, a promise to await before reading on (back-pressure, at most one rows event late).
 */
function writeRows(
  batch: Batch,
  item: Extract<BinlogItem, { kind: 'rows' }>,
  prefix: string,
  start: number,
  source: string,
): { next: number; wait?: Promise<void> } {
  const shape: EncodedShape = item.shape;
  let index = start;
  let wait: Promise<void> | undefined;
  const emit = (op: 'c' | 'u' | 'd', key: string, before: string, after: string) => {
    const s = seq(prefix, index++);
    wait = batch.write(shape, eventLine(op, shape, key, before, after, source, s), s) ?? wait;
  };
  if (item.op === 'update') {
    for (const { before, after } of item.rows) {
      const b = encodeRow(shape, before);
      const a = encodeRow(shape, after);
      const kb = encodeKey(shape, before);
      const ka = encodeKey(shape, after);
      if (kb === ka) emit('u', ka, b, a);
      else {
        emit('d', kb, b, 'null');
        emit('c', ka, 'null', a);
      }
    }
  } else if (item.op === 'insert') {
    for (const row of item.rows) emit('c', encodeKey(shape, row), 'null', encodeRow(shape, row));
  } else {
    for (const row of item.rows) emit('d', encodeKey(shape, row), encodeRow(shape, row), 'null');
  }
  return { next: index, wait };
}

/** writeRows, profiled as encoding under SLUICE_PROFILE=1 (lib/profile.ts). */
const encodeRows = timed('encode', writeRows);
