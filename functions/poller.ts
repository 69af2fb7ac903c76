import type { Context } from 'aws-lambda';
import { runCapture } from '../lib/capture/run.ts';
import { invocation, lambdaRuntime } from '../lib/ops/invocation.ts';
import { reportCapture } from '../lib/ops/reports.ts';
import { restartStalledSnapshots } from '../lib/snapshot/progress.ts';

const runtime = lambdaRuntime();
const { config, clients, logger: log, metrics } = runtime;

/** Starts the snapshot function (plan + fan-out) for a requested or stalled snapshot. */
async function startSnapshot(job: { id: string }): Promise<void> {
  if (!config.snapshotFunction) return log.warn('a snapshot is pending but SLUICE_SNAPSHOT_FUNCTION is not set', { snapshot: job.id });
  await runtime.invokeAsync(config.snapshotFunction, { snapshotId: job.id });
}

/** Scheduled poller: restarts a snapshot whose workers all died, one capture run within this invocation's remaining time, then health metrics (EMF). */
export const handler = invocation(runtime, 'poller', async (_event: unknown, context: Context) => {
  await restartStalledSnapshots({ snapshots: clients.snapshots, sourceId: config.sourceId, log }, startSnapshot);
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log, metrics, onSnapshotRequested: startSnapshot };
  const result = await runCapture(deps, { budgetMs: context.getRemainingTimeInMillis(), runId: context.awsRequestId });
  await reportCapture({ config, store: clients.store, metrics, log }, result);
  return result;
});
