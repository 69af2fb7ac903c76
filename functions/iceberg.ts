import type { Context } from 'aws-lambda';
import { configuredCatalog } from '../lib/iceberg/catalog/catalog.ts';
import { runIcebergMerge } from '../lib/iceberg/merge/merge.ts';
import { type RewriteEvent, runRewriteWorker } from '../lib/iceberg/merge/rewrite.ts';
import { invocation, lambdaRuntime } from '../lib/ops/invocation.ts';
import { reportMerge } from '../lib/ops/reports.ts';
import { s3ObjectStore } from '../lib/sink/s3/object-store.ts';

const runtime = lambdaRuntime();
const { config, clients, logger: log, metrics } = runtime;
const catalog = configuredCatalog(config, s3ObjectStore(clients.s3, config.bucket));
/** No table is started in the last minutes of an invocation: one table's merge must fit in what is left. */
const TABLE_MARGIN_MS = 5 * 60 * 1000;

/** What the merge and its rewrite workers need; workers run in this same function, asynchronously (as the snapshot function's do). */
const deps = (context: Context) => ({
  config,
  s3: clients.s3,
  store: clients.store,
  snapshots: clients.snapshots,
  merges: clients.merges,
  buckets: clients.buckets,
  log,
  catalog,
  invoke: (next: RewriteEvent) => runtime.invokeAsync(context.functionName, next),
});
const budget = (context: Context) => ({ owner: context.awsRequestId, budgetMs: Math.max(0, context.getRemainingTimeInMillis() - TABLE_MARGIN_MS) });

const merge = invocation(runtime, 'iceberg', async (_event: unknown, context: Context) => {
  const result = await runIcebergMerge(deps(context), budget(context));
  return reportMerge({ config, merges: clients.merges, metrics, log }, result);
});

/** Scheduled Iceberg merge: every table up to the source's committed position; fails (alarm) if any table failed. A `rewrite` event is a worker writing a first load's buckets. */
export async function handler(event: RewriteEvent, context: Context): Promise<{ written: number; open: number }>;
export async function handler(event: unknown, context: Context): Promise<{ table: string; status: string; mode?: string; reason?: string }[]>;
export async function handler(input: unknown, context: Context): Promise<unknown> {
  const event = input as Partial<RewriteEvent> | undefined;
  if (!event?.rewrite) return merge(event, context);
  log.addContext(context);
  return runRewriteWorker(deps(context), event.rewrite, budget(context));
}
