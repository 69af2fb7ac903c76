import { parseTableRef } from '../core/table-ref.ts';
import type { Log, MetricsSink } from '../log.ts';
import type { SnapshotStore } from '../state/snapshot-store.ts';
import { planSnapshot, type SnapshotChoice, type SnapshotDeps, snapshotsToRun } from './plan.ts';
import { snapshotProgress } from './progress.ts';
import { runSnapshotWorker, type WorkerResult } from './worker.ts';

/** What the snapshot Lambda is invoked with: no `worker` = plan and fan out; `worker` = copy. */
export interface SnapshotEvent {
  snapshotId?: string;
  /** Tables in their text form: `db.table`, or backtick-quoted, `` `a.b`.`c/d` ``. */
  tables?: string[];
  /** A new snapshot of every included table; without it (and without `tables`) only unfinished snapshots are worked on. */
  all?: boolean;
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
    const choice: SnapshotChoice = event.tables ? { tables: event.tables.map((t) => parseTableRef(t, 'snapshot event table')) } : event.all ? 'all' : 'pending';
    const jobs = named && named.status !== 'done' ? [named] : await snapshotsToRun(deps, choice);
    if (!jobs.length) deps.log.info('no snapshot is pending; invoke with {"all": true} or {"tables": [...]} to start one');
    const workers = Math.max(1, event.workers ?? 2);
    for (const job of jobs) {
      await planSnapshot(deps, job);
      for (let worker = 0; worker < workers; worker++) await invoke({ snapshotId: job.id, worker });
    }
    return { snapshot: jobs.map((j) => j.id).join(','), workers };
  }
  const result = await runSnapshotWorker(deps, { budgetMs: options.budgetMs, snapshotId: event.snapshotId, workerId: options.workerId });
  if (result.timedOut && !result.complete) await invoke(event);
  return result;
}

/** The snapshot function's report after an invocation: one log line and, for a worker, the rows it copied and the job's longest ETA. */
export async function reportSnapshot(
  deps: { readonly sourceId: string; readonly snapshots: SnapshotStore; readonly metrics: MetricsSink; readonly log: Log },
  result: WorkerResult | { snapshot: string; workers: number },
): Promise<void> {
  deps.log.info('snapshot invocation finished', { ...result });
  if (!('rows' in result)) return;
  deps.metrics.addMetric('SnapshotRows', 'Count', result.rows);
  const job = await deps.snapshots.job(deps.sourceId, result.snapshot);
  const etas = job ? (await snapshotProgress(deps.snapshots, job)).map((t) => t.etaSeconds).filter((s) => s !== null) : [];
  if (etas.length) deps.metrics.addMetric('SnapshotEtaSeconds', 'Seconds', Math.max(...etas));
}
