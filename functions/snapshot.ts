import type { Context } from 'aws-lambda';
import { invocation, lambdaRuntime } from '../lib/ops/invocation.ts';
import { reportSnapshot, type SnapshotEvent, snapshotInvocation } from '../lib/snapshot/invocation.ts';

const runtime = lambdaRuntime();
const { config, clients, logger: log, metrics } = runtime;

/** Snapshot planner (no `worker` in the event) or worker; continues itself asynchronously when time runs out. */
export const handler = invocation(runtime, 'snapshot', async (event: SnapshotEvent, context: Context) => {
  const invoke = (next: SnapshotEvent) => runtime.invokeAsync(context.functionName, next);
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log };
  const result = await snapshotInvocation(deps, invoke, event ?? {}, { budgetMs: context.getRemainingTimeInMillis(), workerId: context.awsRequestId });
  await reportSnapshot({ sourceId: config.sourceId, snapshots: clients.snapshots, metrics, log }, result);
  return result;
});
