import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { createClients } from '../lib/aws.ts';
import { loadConfig } from '../lib/config/config.ts';
import { createLogger } from '../lib/log.ts';
import { runCapture } from '../lib/pipeline/capture.ts';

// Built once per container: config errors fail the cold start loudly, clients keep their connections.
const config = loadConfig();
const clients = createClients(config);
const logger = createLogger();
const lambda = new LambdaClient({});
const snapshotFunction = process.env.SLUICE_SNAPSHOT_FUNCTION;

/** Starts the snapshot function (plan + fan-out) for a requested or stalled snapshot. */
async function startSnapshot(job: { id: string }): Promise<void> {
  if (!snapshotFunction) return logger.warn('a snapshot is pending but SLUICE_SNAPSHOT_FUNCTION is not set', { snapshot: job.id });
  await lambda.send(new InvokeCommand({ FunctionName: snapshotFunction, InvocationType: 'Event', Payload: JSON.stringify({ snapshotId: job.id }) }));
}

/** Scheduled poller: one capture run within this invocation's remaining time. */
export const handler = async (_event: unknown, context: Context) => {
  logger.addContext(context);
  const result = await runCapture(
    { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: logger, onSnapshotRequested: startSnapshot },
    { budgetMs: context.getRemainingTimeInMillis(), runId: context.awsRequestId },
  );
  logger.info('capture run finished', { ...result });
  return result;
};
