import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { createClients } from '../lib/aws.ts';
import { runCapture } from '../lib/capture/run.ts';
import { loadConfig } from '../lib/config/config.ts';
import { createLogger } from '../lib/log.ts';
import { lambdaMetrics, recordInvocation } from '../lib/ops/lambda-metrics.ts';
import { sourceStatus } from '../lib/ops/status.ts';
import { restartStalledSnapshots } from '../lib/snapshot/progress.ts';

// Built once per container: config errors fail the cold start loudly, clients keep their connections.
const config = loadConfig();
const clients = createClients(config);
const logger = createLogger();
const metrics = lambdaMetrics(config.sourceId);
const lambda = new LambdaClient({});

/** Starts the snapshot function (plan + fan-out) for a requested or stalled snapshot. */
async function startSnapshot(job: { id: string }): Promise<void> {
  if (!config.snapshotFunction) return logger.warn('a snapshot is pending but SLUICE_SNAPSHOT_FUNCTION is not set', { snapshot: job.id });
  await lambda.send(new InvokeCommand({ FunctionName: config.snapshotFunction, InvocationType: 'Event', Payload: JSON.stringify({ snapshotId: job.id }) }));
}

/** Scheduled poller: restarts a snapshot whose workers all died, one capture run within this invocation's remaining time, then health metrics (EMF). */
export const handler = async (_event: unknown, context: Context) => {
  logger.addContext(context);
  let failure: unknown;
  try {
    await restartStalledSnapshots({ snapshots: clients.snapshots, sourceId: config.sourceId, log: logger }, startSnapshot);
    const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: logger, metrics, onSnapshotRequested: startSnapshot };
    const result = await runCapture(deps, { budgetMs: context.getRemainingTimeInMillis(), runId: context.awsRequestId });
    const health = await sourceStatus(config, clients.store);
    if (result.lagSeconds !== undefined) metrics.addMetric('LagSeconds', 'Seconds', result.lagSeconds);
    if (health.lagBytes !== undefined) metrics.addMetric('LagBytes', 'Bytes', health.lagBytes);
    if (typeof health.timeToPurgeSeconds === 'number') metrics.addMetric('TimeToPurgeSeconds', 'Seconds', health.timeToPurgeSeconds);
    // Paired with the lag on the dashboard and in StalledAlarm: lag with a moving position is catching up, lag with a still one is stuck.
    if (health.positionAgeSeconds !== undefined) metrics.addMetric('PositionAgeSeconds', 'Seconds', health.positionAgeSeconds);
    for (const warning of health.warnings ?? []) logger.warn(warning);
    logger.info('capture run finished', { ...result, lagBytes: health.lagBytes, timeToPurgeSeconds: health.timeToPurgeSeconds });
    return result;
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    recordInvocation(metrics, 'poller', failure);
    metrics.publishStoredMetrics();
  }
};
