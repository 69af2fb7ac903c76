import type { Context } from 'aws-lambda';
import { createClients } from '../lib/aws.ts';
import { loadConfig } from '../lib/config/config.ts';
import { createLogger } from '../lib/log.ts';
import { runCapture } from '../lib/pipeline/capture.ts';

// Built once per container: config errors fail the cold start loudly, clients keep their connections.
const config = loadConfig();
const clients = createClients(config);
const logger = createLogger();

/** Scheduled poller: one capture run within this invocation's remaining time. */
export const handler = async (_event: unknown, context: Context) => {
  logger.addContext(context);
  const result = await runCapture(
    { config, s3: clients.s3, store: clients.store, log: logger },
    { budgetMs: context.getRemainingTimeInMillis(), runId: context.awsRequestId },
  );
  logger.info('capture run finished', { ...result });
  return result;
};
