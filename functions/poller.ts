import type { Context } from 'aws-lambda';
import { runCapture } from '../lib/capture/run.ts';
import { fanOut } from '../lib/fleet/fan-out.ts';
import { invocation, lambdaRuntime } from '../lib/ops/invocation.ts';
import { recordError } from '../lib/ops/lambda-metrics.ts';
import { reportCapture } from '../lib/ops/reports.ts';
import { restartStalledSnapshots } from '../lib/snapshot/progress.ts';

const runtime = lambdaRuntime();
const { clients, logger: log } = runtime;

/**
 * Scheduled poller. A tick (an event naming no source) starts one invocation per registered source
 * that is due (lib/fleet/), then serves the stack's own source; an event `{ sourceId }` serves that
 * one. Serving a source: restart a snapshot whose workers all died, one capture run within this
 * invocation's remaining time, then health metrics (EMF).
 */
export const handler = invocation(runtime, 'poller', async (_event: { sourceId?: string } | undefined, context: Context, scope) => {
  const { source, config, metrics } = scope;
  if (source === undefined) {
    const ticked = await fanOut(
      () => clients.registry.list(),
      (id) => runtime.invokeAsync(context.functionName, { sourceId: id }),
      { now: Date.now(), log },
    );
    for (const _ of ticked.failed) recordError(metrics, 'poller', 'FLEET_START');
  }
  /** Starts the snapshot function (plan + fan-out) for a requested or stalled snapshot. */
  const startSnapshot = async (job: { id: string }) => {
    if (!config.snapshotFunction) return log.warn('a snapshot is pending but SLUICE_SNAPSHOT_FUNCTION is not set', { snapshot: job.id });
    await runtime.invokeAsync(config.snapshotFunction, { snapshotId: job.id, ...(source === undefined ? {} : { sourceId: source }) });
  };
  await restartStalledSnapshots({ snapshots: clients.snapshots, sourceId: config.sourceId, log }, startSnapshot);
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log, metrics, onSnapshotRequested: startSnapshot };
  const result = await runCapture(deps, { budgetMs: context.getRemainingTimeInMillis(), runId: context.awsRequestId });
  await reportCapture({ config, store: clients.store, metrics, log }, result);
  return result;
});
