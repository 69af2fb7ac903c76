import { createHash, randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { type Faults, noFaults } from '../commit/faults.ts';
import { applyCopies, type CommitContext, cleanStaging, stage } from '../commit/protocol.ts';
import { type Config, tableFilter } from '../config/config.ts';
import type { BinlogPosition } from '../core/position.ts';
import { ErrorCode, LeaseLostError, SluiceError } from '../errors.ts';
import { encodeKey, encodeRow, encodeShape, encodeSource, eventLine, type Row } from '../format/event.ts';
import { seqPrefix } from '../format/seq.ts';
import type { Log } from '../log.ts';
import { Batch } from '../sink/s3/batch.ts';
import { chunkStaging, pad, snapshotDataKey, snapshotManifestKey } from '../sink/s3/keys.ts';
import { listTables, type TableInfo, tableInfo } from '../source/mysql/schema.ts';
import { connect, masterPosition } from '../source/mysql/server.ts';
import { keyAtOffset, lastKey, pagingConnection } from '../source/mysql/snapshot-reader.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import { type ChunkState, chunkId, encodeKeyValues, type KeyValues, type PlannedTable, type SnapshotJob, type SnapshotStore } from '../state/snapshot-store.ts';
import type { Fence, StateStore } from '../state/store.ts';

/*
 * Snapshot: each table's rows, paged by ascending key, committed page by page with the poller's
 * protocol (stage → one fenced write moving the chunk cursor and recording the renames → copy).
 *
 * Ordering contract. Before each page we read the binlog end L (the low watermark), then SELECT
 * the page. Its rows get seq prefix F(L).P(L). Every transaction committed before L has its first
 * event ending before P(L) in F(L) (or in an earlier file), every transaction committed after L has
 * it ending after P(L) (transactions are written whole), so no binlog event shares the prefix:
 *   - a change committed before L sorts before the snapshot row, which reflects it (or a later state);
 *   - a change committed after L sorts after it and is captured by the poller, whose position is ≤ L.
 * So "greatest seq per key wins" yields the table's current state. Rows inserted after planning
 * beyond the last chunk's upper bound (the max key at plan time) were inserted after the poller's
 * start, so the binlog carries them.
 */

export interface SnapshotDeps {
  readonly config: Config;
  readonly s3: S3Client;
  readonly store: StateStore;
  readonly snapshots: SnapshotStore;
  readonly log: Log;
  readonly clock?: () => number;
  readonly faults?: Faults;
}

const jobId = (now: number) =>
  `${new Date(now)
    .toISOString()
    .replace(/[-:TZ.]/g, '')
    .slice(0, 14)}-${randomUUID().slice(0, 4)}`;

/** Records a snapshot request (all included tables, or `tables`), with the binlog position before it. */
export async function requestSnapshot(deps: SnapshotDeps, tables: readonly string[] | null, startPosition?: BinlogPosition): Promise<SnapshotJob> {
  const now = (deps.clock ?? Date.now)();
  // One snapshot at a time: a second request would make the first one unreachable (its workers
  // follow the latest request), leaving its chunks unfinished and their staging behind.
  const running = await deps.snapshots.latestJob(deps.config.sourceId);
  if (running && running.status !== 'done') {
    throw new SluiceError(
      ErrorCode.SNAPSHOT_RUNNING,
      `snapshot ${running.id} is still copying; run \`sluice snapshot\` (without --tables) to continue it, then request the new one`,
    );
  }
  let position = startPosition;
  if (!position) {
    const conn = await connect(await mysqlTarget(deps.config));
    position = await masterPosition(conn).finally(() => conn.end());
  }
  const job: SnapshotJob = { sourceId: deps.config.sourceId, id: jobId(now), createdAt: now, requested: tables, status: 'requested', startPosition: position };
  await deps.snapshots.createJob(job);
  deps.log.info('snapshot requested', { snapshot: job.id, tables: tables ?? 'all included' });
  return job;
}

/**
 * The snapshot to work on: the unfinished one if there is one (asking for specific tables then is
 * refused by requestSnapshot), else a new request for `tables` (null = every included table).
 */
export async function snapshotToRun(deps: SnapshotDeps, tables: readonly string[] | null): Promise<SnapshotJob> {
  const latest = await deps.snapshots.latestJob(deps.config.sourceId);
  if (latest && latest.status !== 'done' && !tables) return latest;
  return requestSnapshot(deps, tables);
}

function chunkColumn(config: Config, name: string): string | undefined {
  return config.keyColumns.get(name);
}

/** Splits every requested table into key ranges; idempotent, so concurrent planners agree. */
export async function planSnapshot(deps: SnapshotDeps, job: SnapshotJob): Promise<SnapshotJob> {
  if (job.status !== 'requested') return job;
  const { config, snapshots } = deps;
  const conn = await connect(await mysqlTarget(config));
  try {
    const accept = tableFilter(config);
    const names = job.requested
      ? job.requested.map((name) => {
          const [db, table] = name.split('.');
          if (!db || !table) throw new SluiceError(ErrorCode.SNAPSHOT_TABLE, `"${name}" is not <db>.<table>`);
          return { db, table };
        })
      : await listTables(conn, accept);
    const infos: TableInfo[] = [];
    const refused: string[] = [];
    for (const { db, table } of names) {
      try {
        infos.push(await tableInfo(conn, db, table, chunkColumn(config, `${db}.${table}`)));
      } catch (error) {
        if (!(error instanceof SluiceError)) throw error;
        refused.push(error.message);
      }
    }
    if (refused.length) throw new SluiceError(ErrorCode.SNAPSHOT_REFUSED, `snapshot refused, nothing was copied:\n  ${refused.join('\n  ')}`);
    const planned: PlannedTable[] = [];
    for (const info of infos) {
      const name = `${info.db}.${info.table}`;
      const bounds: KeyValues[] = [];
      let boundary = await keyAtOffset(conn, info, null, config.snapshot.chunkRows);
      while (boundary) {
        bounds.push(boundary);
        boundary = await keyAtOffset(conn, info, boundary, config.snapshot.chunkRows);
      }
      const max = await lastKey(conn, info);
      const his: (KeyValues | null)[] = [...bounds.filter((b) => JSON.stringify(b) !== JSON.stringify(max)), max];
      for (const [n, hi] of his.entries()) await snapshots.putChunk(config.sourceId, job.id, { table: name, n, lo: n === 0 ? null : (his[n - 1] ?? null), hi });
      planned.push({ name, chunks: his.length, estimatedRows: info.estimatedRows, key: info.key });
    }
    const result = await snapshots.markPlanned(config.sourceId, job.id, planned);
    deps.log.info('snapshot planned', { snapshot: job.id, tables: planned.length, chunks: planned.reduce((a, t) => a + t.chunks, 0) });
    return result;
  } finally {
    await conn.end();
  }
}

export interface WorkerResult {
  snapshot: string;
  pages: number;
  rows: number;
  chunksFinished: number;
  /** True when every chunk of the job is done. */
  complete: boolean;
  /** True when this worker stopped for time with unfinished work it could have claimed. */
  timedOut: boolean;
}

/**
 * One worker: claims unfinished chunks one at a time and pages through them until done or out of
 * time (then it stops after the page in flight; the next worker resumes at the chunk's cursor).
 */
export async function runSnapshotWorker(deps: SnapshotDeps, options: { budgetMs: number; snapshotId?: string; workerId?: string }): Promise<WorkerResult> {
  const { config, snapshots, log } = deps;
  const clock = deps.clock ?? Date.now;
  const owner = options.workerId ?? randomUUID();
  const started = clock();
  const leaseExpires = started + options.budgetMs;
  const softDeadline = leaseExpires - config.safetyMarginMs;
  let job = options.snapshotId ? await snapshots.job(config.sourceId, options.snapshotId) : await snapshots.latestJob(config.sourceId);
  if (!job) throw new SluiceError(ErrorCode.SNAPSHOT_NONE, `source ${config.sourceId} has no snapshot request; start one with \`sluice snapshot\``);
  job = await planSnapshot(deps, job);
  const result: WorkerResult = { snapshot: job.id, pages: 0, rows: 0, chunksFinished: 0, complete: false, timedOut: false };
  const reader = pagingConnection(await mysqlTarget(config));
  await reader.init();
  const ctx: CommitContext = {
    s3: deps.s3,
    bucket: config.bucket,
    prefix: config.prefix,
    store: deps.store,
    owner,
    faults: deps.faults ?? noFaults,
    log,
    clock,
  };
  try {
    let remaining = 0;
    for (const table of job.tables ?? []) {
      const [db, name] = table.name.split('.') as [string, string];
      const info = await tableInfo(reader.sql, db, name, chunkColumn(config, table.name));
      for (let n = 0; n < table.chunks; n++) {
        const current = await snapshots.chunk(config.sourceId, job.id, table.name, n);
        // A chunk whose last page committed but whose renames did not finish is still work.
        if (!current || (current.done && !current.pending)) continue;
        if (clock() >= softDeadline) {
          remaining++;
          result.timedOut = true;
          continue;
        }
        let chunk: ChunkState;
        try {
          chunk = await snapshots.claim(config.sourceId, job.id, table.name, n, owner, Math.min(leaseExpires, clock() + config.snapshot.leaseMs), clock());
        } catch (error) {
          if (error instanceof LeaseLostError) {
            remaining++;
            continue;
          }
          throw error;
        }
        try {
          chunk = await copyChunk(deps, ctx, job, info, chunk, reader, softDeadline, leaseExpires, result);
          if (chunk.done) result.chunksFinished++;
          else {
            remaining++;
            result.timedOut = true;
          }
        } finally {
          await snapshots.release(config.sourceId, job.id, table.name, n, owner);
        }
      }
    }
    // Chunks other workers held while we passed them may be done by now: decide on a fresh read.
    result.complete = remaining === 0 || (await allChunksDone(snapshots, job));
    if (result.complete && job.status !== 'done') await snapshots.markDone(config.sourceId, job.id, clock());
    return result;
  } finally {
    await reader.end();
  }
}

/** Key values as they appear in JSON (bytes as {"$b64": …}). */
const plainKey = (values: KeyValues | null) => (values ? JSON.parse(encodeKeyValues(values) ?? 'null') : null);

async function allChunksDone(snapshots: SnapshotStore, job: SnapshotJob): Promise<boolean> {
  for (const table of job.tables ?? []) {
    for (let n = 0; n < table.chunks; n++) {
      const chunk = await snapshots.chunk(job.sourceId, job.id, table.name, n);
      if (!chunk?.done || chunk.pending) return false;
    }
  }
  return true;
}

const tableTag = (name: string) => createHash('sha1').update(name).digest('hex').slice(0, 8);

async function copyChunk(
  deps: SnapshotDeps,
  ctx: CommitContext,
  job: SnapshotJob,
  info: TableInfo,
  claimed: ChunkState,
  reader: ReturnType<typeof pagingConnection>,
  softDeadline: number,
  hardDeadline: number,
  result: WorkerResult,
): Promise<ChunkState> {
  const { config, snapshots } = deps;
  const { sourceId } = config;
  const clock = ctx.clock;
  const fence = (c: ChunkState): Fence => ({ sourceId, owner: ctx.owner, expectVersion: c.version, now: clock() });
  // Every page commit renews the chunk's lease (never past this worker's own budget).
  const leaseUntil = () => Math.min(hardDeadline, clock() + config.snapshot.leaseMs);
  const id = chunkId(claimed.table, claimed.n);
  let chunk = claimed;
  // Roll forward a page committed by a worker that died before its renames, then drop its leftovers.
  if (chunk.pending) {
    await applyCopies(ctx, chunk.pending.copies);
    chunk = await snapshots.clearPending(sourceId, job.id, chunk, fence(chunk));
  }
  const stagingRoot = chunkStaging(config.prefix, sourceId, job.id, id.replace('#', '-'));
  await cleanStaging(ctx, stagingRoot);

  const shape = encodeShape({ db: info.db, table: info.table, columns: info.columns, key: info.key.map((k) => info.columns.findIndex((c) => c.name === k)) });
  // A committed page's renames run while the next page is read; they must finish (pending cleared)
  // before the next page commits, which the store's no-pending condition enforces anyway.
  let renaming: Promise<void> | undefined;
  const settleRenames = async () => {
    if (renaming) await renaming;
    renaming = undefined;
  };
  const tag = `r.${job.id}.${tableTag(claimed.table)}.${pad(claimed.n, 4)}.`;
  while (!chunk.done && clock() < softDeadline) {
    const page = chunk.pages + 1;
    const watermark = await masterPosition(reader.sql);
    const prefix = `${seqPrefix(watermark.file, watermark.pos)}${tag}${pad(page, 8)}.`;
    const source = encodeSource({
      file: watermark.file,
      pos: watermark.pos,
      gtid: null,
      serverId: null,
      tsMs: clock(),
      txn: `snapshot:${job.id}`,
      snapshot: true,
    });
    const batch = new Batch(ctx.s3, ctx.bucket, `${stagingRoot}${ctx.owner}/${pad(page, 8)}/`, undefined, clock());
    let count = 0;
    let last: KeyValues | null = null;
    for await (const rows of reader.page(info, chunk.cursor ?? chunk.lo, chunk.hi, config.snapshot.pageRows)) {
      let wait: Promise<void> | undefined;
      for (const row of rows) {
        const seq = `${prefix}${pad(count++, 7)}`;
        wait = batch.write(shape, eventLine('r', shape, encodeKey(shape, row), 'null', encodeRow(shape, row), source, seq), seq) ?? wait;
      }
      const lastRow = rows[rows.length - 1] as Row;
      last = info.key.map((k) => lastRow[k]);
      if (wait) await wait;
    }
    const done = count < config.snapshot.pageRows;
    await settleRenames();
    if (count === 0) {
      await batch.abort();
      chunk = await snapshots.commitPage(sourceId, job.id, chunk, fence(chunk), { cursor: chunk.cursor, rows: 0, done: true, leaseUntil: leaseUntil() });
      break;
    }
    const copies = await stage(
      ctx,
      batch,
      sourceId,
      (db, table) => snapshotDataKey(config.prefix, db, table, sourceId, job.id, claimed.n, page),
      snapshotManifestKey(config.prefix, sourceId, job.id, info.db, info.table, claimed.n, page),
      { snapshot: { id: job.id, table: claimed.table, chunk: claimed.n, page, watermark, after: plainKey(chunk.cursor ?? chunk.lo), last: plainKey(last) } },
    );
    chunk = await snapshots.commitPage(sourceId, job.id, chunk, fence(chunk), {
      cursor: last,
      rows: count,
      done,
      pending: { commitSeq: page, copies },
      leaseUntil: leaseUntil(),
    });
    await ctx.faults.hit('after-commit');
    const committed = chunk;
    renaming = applyCopies(ctx, copies).then(async () => {
      chunk = await snapshots.clearPending(sourceId, job.id, committed, fence(committed));
    });
    renaming.catch(() => {}); // awaited (and rethrown) by settleRenames; not an unhandled rejection meanwhile
    if (chunk.done) await settleRenames();
    result.pages++;
    result.rows += count;
    deps.log.debug('snapshot page committed', { snapshot: job.id, chunk: id, page, rows: count, done });
  }
  await settleRenames();
  return chunk;
}

export interface TableProgress {
  table: string;
  rows: number;
  estimatedRows: number;
  chunks: number;
  chunksDone: number;
  rowsPerSecond: number;
  etaSeconds: number | null;
}

/** Per table: rows copied vs estimate, chunks done, rate since the job started, and ETA. */
export async function snapshotProgress(snapshots: SnapshotStore, job: SnapshotJob, now = Date.now()): Promise<TableProgress[]> {
  const progress: TableProgress[] = [];
  for (const table of job.tables ?? []) {
    let rows = 0;
    let chunksDone = 0;
    for (let n = 0; n < table.chunks; n++) {
      const chunk = await snapshots.chunk(job.sourceId, job.id, table.name, n);
      rows += chunk?.rows ?? 0;
      if (chunk?.done) chunksDone++;
    }
    const seconds = Math.max((now - job.createdAt) / 1000, 0.001);
    const rate = rows / seconds;
    const left = Math.max(table.estimatedRows - rows, 0);
    progress.push({
      table: table.name,
      rows,
      estimatedRows: table.estimatedRows,
      chunks: table.chunks,
      chunksDone,
      rowsPerSecond: Math.round(rate),
      etaSeconds: chunksDone === table.chunks ? 0 : rate > 0 ? Math.round(left / rate) : null,
    });
  }
  return progress;
}

/** True when a snapshot is unfinished and no worker holds a live lease on any of its chunks (all died or stopped). */
export async function snapshotStalled(snapshots: SnapshotStore, job: SnapshotJob, now: number): Promise<boolean> {
  if (job.status === 'done') return false;
  if (job.status === 'requested') return true;
  for (const table of job.tables ?? []) {
    for (let n = 0; n < table.chunks; n++) {
      const chunk = await snapshots.chunk(job.sourceId, job.id, table.name, n);
      if (chunk && (!chunk.done || chunk.pending) && chunk.lease && chunk.lease.expiresAt > now) return false;
    }
  }
  return !(await allChunksDone(snapshots, job));
}

/** What the snapshot Lambda is invoked with: no `worker` = plan and fan out; `worker` = copy. */
export interface SnapshotEvent {
  snapshotId?: string;
  tables?: string[];
  workers?: number;
  worker?: number;
}

/**
 * One snapshot function invocation. The planner requests/plans and starts `workers` async
 * invocations; a worker copies until its time is nearly up and re-invokes itself only if it
 * stopped for time with work left, so idle workers never ping-pong.
 */
export async function snapshotInvocation(
  deps: SnapshotDeps,
  invoke: (event: SnapshotEvent) => Promise<void>,
  event: SnapshotEvent,
  options: { budgetMs: number; workerId: string },
): Promise<WorkerResult | { snapshot: string; workers: number }> {
  if (event.worker === undefined) {
    const named = event.snapshotId ? await deps.snapshots.job(deps.config.sourceId, event.snapshotId) : undefined;
    const job = named && named.status !== 'done' ? named : await snapshotToRun(deps, event.tables ?? null);
    await planSnapshot(deps, job);
    const workers = Math.max(1, event.workers ?? 2);
    for (let worker = 0; worker < workers; worker++) await invoke({ snapshotId: job.id, worker });
    return { snapshot: job.id, workers };
  }
  const result = await runSnapshotWorker(deps, { budgetMs: options.budgetMs, snapshotId: event.snapshotId, workerId: options.workerId });
  if (result.timedOut && !result.complete) await invoke(event);
  return result;
}
