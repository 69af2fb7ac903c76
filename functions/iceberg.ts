import type { Context } from 'aws-lambda';
import type { Config } from '../lib/config/config.ts';
import { fanOut } from '../lib/fleet/fan-out.ts';
import { configuredCatalog } from '../lib/iceberg/catalog/catalog.ts';
import { runIcebergMerge } from '../lib/iceberg/merge/merge.ts';
import { type RewriteEvent, runRewriteWorker } from '../lib/iceberg/merge/rewrite.ts';
import { invocation, lambdaRuntime, type Skipped, type SourceScope } from '../lib/ops/invocation.ts';
import { recordError } from '../lib/ops/lambda-metrics.ts';
import { reportMerge } from '../lib/ops/reports.ts';
import { s3ObjectStore } from '../lib/sink/s3/object-store.ts';

const runtime = lambdaRuntime();
const { clients, logger: log } = runtime;
/** Each source's catalog client, built once per container and config. */
const catalogs = new WeakMap<Config, ReturnType<typeof configuredCatalog>>();
/** No table is started in the last minutes of an invocation: one table's merge must fit in what is left. */
const TABLE_MARGIN_MS = 5 * 60 * 1000;

/** What the merge and its rewrite workers need; workers run in this same function, asynchronously (as the snapshot function's do), for the same source. */
function deps({ source, config }: SourceScope, context: Context) {
  let catalog = catalogs.get(config);
  if (!catalog) {
    catalog = configuredCatalog(config, s3ObjectStore(clients.s3, config.bucket));
    catalogs.set(config, catalog);
  }
  return {
    config,
    s3: clients.s3,
    store: clients.store,
    snapshots: clients.snapshots,
    merges: clients.merges,
    buckets: clients.buckets,
    log,
    catalog,
    invoke: (next: RewriteEvent) => runtime.invokeAsync(context.functionName, source === undefined ? next : { ...next, sourceId: source }),
  };
}
const budget = (context: Context) => ({ owner: context.awsRequestId, budgetMs: Math.max(0, context.getRemainingTimeInMillis() - TABLE_MARGIN_MS) });

const merge = invocation(runtime, 'iceberg', async (_event: { sourceId?: string } | undefined, context: Context, scope) => {
  if (scope.source === undefined) {
    // The merge runs on its own schedule: every source it covers, whatever its capture schedule.
    const ticked = await fanOut(
      () => clients.registry.list(),
      (id) => runtime.invokeAsync(context.functionName, { sourceId: id }),
      {
        now: Date.now(),
        log,
        covers: (record) => record.iceberg,
        everyTick: true,
      },
    );
    for (const _ of ticked.failed) recordError(scope.metrics, 'iceberg', 'FLEET_START');
  }
  const result = await runIcebergMerge(deps(scope, context), budget(context));
  return reportMerge({ config: scope.config, merges: clients.merges, metrics: scope.metrics, log }, result);
});

/**
 * Scheduled Iceberg merge: every table up to the source's committed position; fails (alarm) if any
 * table failed. A tick (no source) starts one invocation per registered source the merge covers,
 * then merges the stack's own source. A `rewrite` event is a worker writing a first load's buckets,
 * for the source it names (none: the stack's own).
 */
export async function handler(event: RewriteEvent & { sourceId?: string }, context: Context): Promise<{ written: number; open: number } | Skipped>;
export async function handler(event: unknown, context: Context): Promise<{ table: string; status: string; mode?: string; reason?: string }[] | Skipped>;
export async function handler(input: unknown, context: Context): Promise<unknown> {
  const event = input as (Partial<RewriteEvent> & { sourceId?: string }) | undefined;
  if (!event?.rewrite) return merge(event, context);
  log.addContext(context);
  const scope = await runtime.scope(event.sourceId);
  if (!scope) return { status: 'skipped', source: event.sourceId as string };
  return runRewriteWorker(deps(scope, context), event.rewrite, budget(context));
}
