import type { SnapshotJob } from '../state/snapshot-store.ts';
import type { SnapshotDeps } from './plan.ts';
import { type LeasedChunk, leasedChunks } from './progress.ts';
import { runSnapshotWorker, type WorkerResult } from './worker.ts';

/** What running workers on one job did: every worker's result, whether the job is complete, and the chunks other workers still hold. */
export interface JobRun {
  readonly results: WorkerResult[];
  readonly done: boolean;
  readonly leased: LeasedChunk[];
}

/**
 * Runs `workers` workers side by side on a planned job (`sluice snapshot`), each within what is
 * `left()` of the run. Chunks a killed worker still holds are waited for when `wait` allows: its
 * lease runs out (a live worker renews it with every page), then the workers run again; never past
 * the run's time, nor after a worker stopped for time.
 */
export async function runJobWorkers(
  deps: SnapshotDeps,
  job: SnapshotJob,
  options: {
    readonly workers: number;
    readonly left: () => number;
    readonly wait: boolean;
    readonly workerId: (i: number) => string;
    /** Called before each wait, with the held chunk soonest free and how many are held. */
    readonly onWait?: (first: LeasedChunk, held: number) => void;
  },
): Promise<JobRun> {
  const work = () =>
    Promise.all(
      Array.from({ length: Math.max(1, options.workers) }, (_, i) =>
        runSnapshotWorker(deps, { budgetMs: Math.max(1000, options.left()), snapshotId: job.id, workerId: options.workerId(i) }),
      ),
    );
  const results = await work();
  let done = results.some((r) => r.complete);
  let leased = done ? [] : await leasedChunks(deps.snapshots, job);
  while (!done && options.wait && leased.length && !results.some((r) => r.timedOut)) {
    const first = leased[0] as LeasedChunk;
    const pause = first.expiresAt - Date.now() + 250;
    if (pause >= options.left()) break;
    options.onWait?.(first, leased.length);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, pause)));
    results.push(...(await work()));
    done = results.some((r) => r.complete);
    leased = done ? [] : await leasedChunks(deps.snapshots, job);
  }
  return { results, done, leased };
}
