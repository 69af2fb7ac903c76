import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { createClients } from '../lib/aws.ts';
import { loadConfig } from '../lib/config/config.ts';
import { createLogger } from '../lib/log.ts';
import { lambdaMetrics, recordInvocation } from '../lib/ops/lambda-metrics.ts';
import { type SnapshotEvent, snapshotInvocation } from '../lib/snapshot/invocation.ts';
import { snapshotProgress } from '../lib/snapshot/progress.ts';

const config = loadConfig();
const clients = createClients(config);
const logger = createLogger();
const lambda = new LambdaClient({});
const metrics = lambdaMetrics(config.sourceId);

/** Snapshot planner (no `worker` in the event) or worker; continues itself asynchronously when time runs out. */
export const handler = async (event: SnapshotEvent, context: Context) => {
  logger.addContext(context);
  const invoke = async (next: SnapshotEvent) => {
    await lambda.send(new InvokeCommand({ FunctionName: context.functionName, InvocationType: 'Event', Payload: JSON.stringify(next) }));
  };
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: logger };
  let failure: unknown;
  try {
    const result = await snapshotInvocation(deps, invoke, event ?? {}, { budgetMs: context.getRemainingTimeInMillis(), workerId: context.awsRequestId });
    logger.info('snapshot invocation finished', { ...result });
    if ('rows' in result) {
      metrics.addMetric('SnapshotRows', 'Count', result.rows);
      const job = await clients.snapshots.job(config.sourceId, result.snapshot);
      const etas = job ? (await snapshotProgress(clients.snapshots, job)).map((t) => t.etaSeconds).filter((s) => s !== null) : [];
      if (etas.length) metrics.addMetric('SnapshotEtaSeconds', 'Seconds', Math.max(...etas));
    }
    return result;
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    recordInvocation(metrics, 'snapshot', failure);
    metrics.publishStoredMetrics();
  }
};
