import type { Context } from 'aws-lambda';
import { invocation, lambdaRuntime } from '../lib/ops/invocation.ts';
import { reportSnapshot, type SnapshotEvent, snapshotInvocation } from '../lib/snapshot/invocation.ts';

const runtime = lambdaRuntime();
const { clients, logger: log } = runtime;

/** Snapshot planner (no `worker` in the event) or worker, of the source the event names (none: the stack's own); continues itself asynchronously when time runs out. */
export const handler = invocation(runtime, 'snapshot', async (event: (SnapshotEvent & { sourceId?: string }) | undefined, context: Context, scope) => {
  const { source, config, metrics } = scope;
  const invoke = (next: SnapshotEvent) => runtime.invokeAsync(context.functionName, source === undefined ? next : { ...next, sourceId: source });
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log };
  const result = await snapshotInvocation(deps, invoke, event ?? {}, { budgetMs: context.getRemainingTimeInMillis(), workerId: context.awsRequestId });
  await reportSnapshot({ sourceId: config.sourceId, snapshots: clients.snapshots, metrics, log }, result);
  return result;
});
