import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { createClients } from '../lib/aws.ts';
import { loadConfig } from '../lib/config/config.ts';
import { formatTableRef } from '../lib/core/table-ref.ts';
import { configuredCatalog } from '../lib/iceberg/catalog/catalog.ts';
import { runIcebergMerge } from '../lib/iceberg/merge/merge.ts';
import { type RewriteEvent, runRewriteWorker } from '../lib/iceberg/merge/rewrite.ts';
import { createLogger } from '../lib/log.ts';
import { lambdaMetrics, recordError, recordInvocation } from '../lib/ops/lambda-metrics.ts';
import { s3ObjectStore } from '../lib/sink/s3/object-store.ts';

const config = loadConfig();
const clients = createClients(config);
const logger = createLogger();
const metrics = lambdaMetrics(config.sourceId);
const catalog = configuredCatalog(config, s3ObjectStore(clients.s3, config.bucket));
const lambda = new LambdaClient({});
/** No table is started in the last minutes of an invocation: one table's merge must fit in what is left. */
const TABLE_MARGIN_MS = 5 * 60 * 1000;

/** Scheduled Iceberg merge: every table up to the source's committed position; fails (alarm) if any table failed. A `rewrite` event is a worker writing a first load's buckets. */
export async function handler(event: RewriteEvent, context: Context): Promise<{ written: number; open: number }>;
export async function handler(event: unknown, context: Context): Promise<{ table: string; status: string; mode?: string; reason?: string }[]>;
export async function handler(input: unknown, context: Context): Promise<unknown> {
  const event = input as Partial<RewriteEvent> | undefined;
  logger.addContext(context);
  // Workers run in this same function, asynchronously (as the snapshot function's do).
  const invoke = async (next: RewriteEvent) => {
    await lambda.send(new InvokeCommand({ FunctionName: context.functionName, InvocationType: 'Event', Payload: JSON.stringify(next) }));
  };
  const deps = {
    config,
    s3: clients.s3,
    store: clients.store,
    snapshots: clients.snapshots,
    merges: clients.merges,
    buckets: clients.buckets,
    log: logger,
    catalog,
    invoke,
  };
  if (event?.rewrite)
    return runRewriteWorker(deps, event.rewrite, { owner: context.awsRequestId, budgetMs: Math.max(0, context.getRemainingTimeInMillis() - TABLE_MARGIN_MS) });
  let failure: unknown;
  let counted = false;
  try {
    const result = await runIcebergMerge(deps, { owner: context.awsRequestId, budgetMs: Math.max(0, context.getRemainingTimeInMillis() - TABLE_MARGIN_MS) });
    const summary = result.tables.map((t) => ({ table: formatTableRef(t.table), status: t.status, mode: t.mode, reason: t.reason }));
    logger.info('Iceberg merge run finished', { cut: result.cut, tables: summary });
    for (const t of result.tables) {
      // How many source commits each table is behind (a held or busy table's from its ledger).
      const merged = t.commitSeq ?? (await clients.merges.get(config.sourceId, t.table))?.commitSeq ?? 0;
      const lag = metrics.singleMetric();
      lag.addDimension('table', formatTableRef(t.table));
      lag.addMetric('IcebergLagCommits', 'Count', Math.max(0, (result.cut?.commitSeq ?? merged) - merged));
      if (t.status === 'failed') recordError(metrics, 'iceberg', (t.error as { code?: string } | undefined)?.code ?? 'UNEXPECTED');
      counted ||= t.status === 'failed';
    }
    const failed = result.tables.filter((t) => t.status === 'failed');
    if (failed.length) throw new Error(`Iceberg merge failed for ${failed.map((t) => `${formatTableRef(t.table)}: ${t.reason}`).join('; ')}`);
    return summary;
  } catch (error) {
    // Failed tables are counted above, by their own codes; the run's failure only when none was.
    if (!counted) failure = error;
    throw error;
  } finally {
    recordInvocation(metrics, 'iceberg', failure);
    metrics.publishStoredMetrics();
  }
}
