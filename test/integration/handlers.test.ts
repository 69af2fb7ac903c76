import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaptureResult } from '../../lib/capture/run.ts';
import { logs, metric, printed } from '../support/output.ts';
import { testSource } from '../support/source.ts';

/** Stands in for the Lambda Invoke API (reached through AWS_ENDPOINT_URL_LAMBDA): records async invocations. */
const invocations: { functionName: string; type: string | undefined; payload: Record<string, unknown> }[] = [];
const lambdaApi = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (chunk) => {
    body += chunk;
  });
  req.on('end', () => {
    const functionName = decodeURIComponent(/\/functions\/([^/]+)\/invocations/.exec(req.url ?? '')?.[1] ?? '');
    invocations.push({ functionName, type: req.headers['x-amz-invocation-type'] as string | undefined, payload: JSON.parse(body || '{}') });
    res.writeHead(202, { 'content-type': 'application/json' }).end();
  });
});

const context = (functionName: string, ms = 60_000): Context =>
  ({ functionName, awsRequestId: `req-${Math.random().toString(16).slice(2)}`, getRemainingTimeInMillis: () => ms }) as unknown as Context;

describe('Lambda handlers (real stack; the Invoke API is a local stand-in)', () => {
  beforeAll(async () => {
    await new Promise<void>((resolve) => lambdaApi.listen(0, '127.0.0.1', resolve));
    process.env.AWS_ENDPOINT_URL_LAMBDA = `http://127.0.0.1:${(lambdaApi.address() as AddressInfo).port}`;
  });
  afterAll(() => lambdaApi.close());

  it('the poller requests the initial snapshot and starts the snapshot function, which fans out and completes', async () => {
    await using source = await testSource('handler');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO a SELECT seq, "x" FROM seq_1_to_1200');
    Object.assign(process.env, {
      SLUICE_SOURCE_ID: source.db,
      SLUICE_PREFIX: source.db,
      SLUICE_INCLUDE: `${source.db}\\..*`,
      SLUICE_STARTUP: 'initial',
      SLUICE_SNAPSHOT_FUNCTION: 'sluice-test-snapshot',
      SLUICE_SNAPSHOT_PAGE_ROWS: '200',
      SLUICE_SNAPSHOT_CHUNK_ROWS: '500',
      SLUICE_SAFETY_MARGIN_SECONDS: '2',
    });
    const { handler: poller } = await import('../../functions/poller.ts');
    const { handler: snapshot } = await import('../../functions/snapshot.ts');

    // Handlers print JSON logs and EMF metrics to stdout, as Lambda expects: captured and checked here.
    const first = await printed(() => poller({}, context('sluice-test-poller', 3_500)));
    // The stack's own source (the event names none) is never skipped.
    const polled = first.result as CaptureResult;
    expect(polled.snapshotRequested).toBeDefined();
    expect(logs(first.documents, 'snapshot requested')).toMatchObject([
      { level: 'INFO', snapshot: polled.snapshotRequested, function_name: 'sluice-test-poller' },
    ]);
    expect(logs(first.documents, 'capture run finished')).toMatchObject([{ status: 'captured', snapshotRequested: polled.snapshotRequested }]);
    expect(invocations).toEqual([{ functionName: 'sluice-test-snapshot', type: 'Event', payload: { snapshotId: polled.snapshotRequested } }]);

    // The snapshot function as AWS would run it: the planner fans out, then each worker event.
    invocations.length = 0;
    const planner = await printed(() => snapshot({ snapshotId: polled.snapshotRequested, workers: 2 }, context('sluice-test-snapshot')));
    expect(logs(planner.documents, 'snapshot planned')).toMatchObject([{ snapshot: polled.snapshotRequested, tables: 1, chunks: 3 }]);
    expect(invocations.map((i) => i.payload)).toEqual([
      { snapshotId: polled.snapshotRequested, worker: 0 },
      { snapshotId: polled.snapshotRequested, worker: 1 },
    ]);
    const workers = invocations.splice(0);
    const { result: results } = await printed(() => Promise.all(workers.map((w) => snapshot(w.payload, context('sluice-test-snapshot')))));
    expect(results.some((r) => 'complete' in r && r.complete)).toBe(true);
    expect(invocations).toEqual([]); // nobody ran out of time, so nobody re-invoked itself

    await source.sql("UPDATE a SET v = 'y' WHERE id <= 3");
    // The poller publishes its health as CloudWatch EMF lines on stdout.
    const { documents } = await printed(() => poller({}, context('sluice-test-poller', 3_500)));
    // One value per commit: the run may also commit catalog changes with no rows (see below).
    const rows = [metric(documents, 'RowsCaptured')?.RowsCaptured].flat() as number[];
    expect(rows.reduce((a, b) => a + b, 0)).toBe(3);
    expect(metric(documents, 'RowsCaptured')?.source).toBe(source.db);
    expect(metric(documents, 'LagSeconds')?.LagSeconds).toBe(0);
    expect(typeof metric(documents, 'LagBytes')?.LagBytes).toBe('number');
    expect(metric(documents, 'CommitLatency')).toBeDefined();
    // The dashboard's pair for lag, and the container's peak memory against the function's size.
    expect(metric(documents, 'PositionAgeSeconds')?.PositionAgeSeconds).toBeLessThan(60);
    expect(metric(documents, 'MemoryUsedMB')).toMatchObject({ function: 'poller', source: source.db });
    expect(metric(documents, 'MemoryUsedMB')?.MemoryUsedMB).toBeGreaterThan(20);
    // Commit 1 saved the schema catalog the source started with; commit 2 carries the row changes.
    // (Other tests' DDL on the shared server, a CREATE SEQUENCE anywhere, commits the catalog with no rows.)
    const withRows = logs(documents, 'committed batch').filter((d) => d.events !== 0);
    expect(withRows).toMatchObject([{ commitSeq: 2, events: 3, transactions: 1 }]);
    const events = await source.events();
    expect(events.filter((e) => e.op === 'r')).toHaveLength(1200);
    expect(events.filter((e) => e.op === 'u')).toHaveLength(3);
  });
});
