import { isLive } from '../commit/lease.ts';
import { formatTableRef, type TableRef } from '../core/table-ref.ts';
import type { Log } from '../log.ts';
import type { SnapshotJob, SnapshotStore } from '../state/snapshot-store.ts';

export interface TableProgress {
  /** The table as text (`formatTableRef`), for people. */
  table: string;
  ref: TableRef;
  rows: number;
  estimatedRows: number;
  chunks: number;
  chunksDone: number;
  rowsPerSecond: number;
  etaSeconds: number | null;
}

/** Per table: rows copied vs estimate, chunks done, rate since the job started, and ETA. */
/** A chunk not done that another worker's live lease holds (a killed worker's until it runs out). */
export interface LeasedChunk {
  readonly table: string;
  readonly n: number;
  readonly owner: string;
  readonly expiresAt: number;
}

/** The job's unfinished chunks that live leases hold, soonest free first. */
export async function leasedChunks(snapshots: SnapshotStore, job: SnapshotJob, now = Date.now()): Promise<LeasedChunk[]> {
  const leased: LeasedChunk[] = [];
  for (const table of job.tables ?? [])
    for (let n = 0; n < table.chunks; n++) {
      const chunk = await snapshots.chunk(job.sourceId, job.id, table.id, n);
      if (chunk && !chunk.done && isLive(chunk.lease, now))
        leased.push({ table: formatTableRef(table), n, owner: chunk.lease.owner, expiresAt: chunk.lease.expiresAt });
    }
  return leased.sort((a, b) => a.expiresAt - b.expiresAt);
}

/** A job's progress in one line: a bar, rows of the estimate, chunks, rate and ETA (`sluice snapshot`). */
export function progressLine(tables: readonly TableProgress[]): string {
  const rows = tables.reduce((a, t) => a + t.rows, 0);
  const estimate = Math.max(
    tables.reduce((a, t) => a + t.estimatedRows, 0),
    rows,
    1,
  );
  const done = tables.every((t) => t.chunksDone === t.chunks);
  const share = done ? 1 : Math.min(rows / estimate, 0.99);
  const bar = `${'#'.repeat(Math.round(share * 30))}${'-'.repeat(30 - Math.round(share * 30))}`;
  const rate = tables.reduce((a, t) => a + t.rowsPerSecond, 0);
  const eta = Math.max(0, ...tables.map((t) => t.etaSeconds ?? 0));
  return `[${bar}] ${Math.round(share * 100)}% ${rows.toLocaleString('en-US')}/${estimate.toLocaleString('en-US')} rows, ${tables.reduce((a, t) => a + t.chunksDone, 0)}/${tables.reduce((a, t) => a + t.chunks, 0)} chunks, ${rate.toLocaleString('en-US')} rows/s${done ? '' : `, ETA ${eta}s`}`;
}

export async function snapshotProgress(snapshots: SnapshotStore, job: SnapshotJob, now = Date.now()): Promise<TableProgress[]> {
  const progress: TableProgress[] = [];
  for (const table of job.tables ?? []) {
    let rows = 0;
    let chunksDone = 0;
    for (let n = 0; n < table.chunks; n++) {
      const chunk = await snapshots.chunk(job.sourceId, job.id, table.id, n);
      rows += chunk?.rows ?? 0;
      if (chunk?.done) chunksDone++;
    }
    const seconds = Math.max((now - job.createdAt) / 1000, 0.001);
    const rate = rows / seconds;
    const left = Math.max(table.estimatedRows - rows, 0);
    progress.push({
      table: formatTableRef(table),
      ref: { db: table.db, table: table.table },
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

/** True when every chunk is done and none has renames pending. */
export async function allChunksDone(snapshots: SnapshotStore, job: SnapshotJob): Promise<boolean> {
  for (const table of job.tables ?? []) {
    for (let n = 0; n < table.chunks; n++) {
      const chunk = await snapshots.chunk(job.sourceId, job.id, table.id, n);
      if (!chunk?.done || chunk.pending) return false;
    }
  }
  return true;
}

/** The unfinished snapshots (several may run: the initial copy, re-snapshots DDL asked for), else the last one, each with its progress per table (`sluice status`). */
export async function snapshotSummaries(snapshots: SnapshotStore, sourceId: string) {
  const active = await snapshots.activeJobs(sourceId);
  const latest = active.length ? [] : [await snapshots.latestJob(sourceId)].filter((j) => j !== undefined);
  return Promise.all(
    [...active, ...latest].map(async (job) => ({
      id: job.id,
      status: job.status,
      ...(job.reason ? { reason: job.reason } : {}),
      error: job.error,
      tables: await snapshotProgress(snapshots, job),
    })),
  );
}

/** True when a snapshot is unfinished and no worker holds a live lease on any of its chunks (all died or stopped). */
export async function snapshotStalled(snapshots: SnapshotStore, job: SnapshotJob, now: number): Promise<boolean> {
  if (job.status === 'done') return false;
  if (job.status === 'requested') return true;
  for (const table of job.tables ?? []) {
    for (let n = 0; n < table.chunks; n++) {
      const chunk = await snapshots.chunk(job.sourceId, job.id, table.id, n);
      if (chunk && (!chunk.done || chunk.pending) && isLive(chunk.lease, now)) return false;
    }
  }
  return !(await allChunksDone(snapshots, job));
}

/**
 * The poller's safety net for snapshots whose workers all died: each tick, every unfinished job
 * nobody works on is `start`ed again (planning and claiming are idempotent, so starting one twice
 * only wastes an invocation). Returns the restarted jobs' ids.
 */
export async function restartStalledSnapshots(
  deps: { readonly snapshots: SnapshotStore; readonly sourceId: string; readonly log: Log; readonly clock?: () => number },
  start: (job: SnapshotJob) => Promise<void>,
): Promise<string[]> {
  const restarted: string[] = [];
  for (const job of await deps.snapshots.activeJobs(deps.sourceId)) {
    if (!(await snapshotStalled(deps.snapshots, job, (deps.clock ?? Date.now)()))) continue;
    deps.log.info('snapshot has no live worker: restarting it', { snapshot: job.id });
    await start(job);
    restarted.push(job.id);
  }
  return restarted;
}
