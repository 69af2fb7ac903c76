/**
 * npm run bench:fleet — what one scheduled tick of the poller costs with 1, 10 and 100 idle
 * registered sources (lib/fleet/): its wall time as a warm Lambda invocation (the handler called
 * in-process, as Lambda calls it in a warm container) and the requests it makes — the registry read,
 * one asynchronous Invoke per due source, and the stack's own source's run — and then what one idle
 * source's own run costs (a caught-up source: lease, nothing to read, release). From those, the cost
 * of an idle source per month at one tick a minute.
 *
 * The Lambda Invoke API is a local stand-in that only counts (AWS_ENDPOINT_URL_LAMBDA); S3 and
 * DynamoDB requests are counted by SLUICE_PROFILE's client hooks (set by the npm script). Wall time
 * here is not Lambda's billed duration (another machine, no network hop): the cost line scales
 * with it, so read it as an estimate. BENCH_RUNS (3) ticks per size; the median is printed.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { SourceRegistry } from '../lib/fleet/registry.ts';
import { adminConnection } from '../lib/local/stack.ts';
import { requestCounts } from '../lib/profile.ts';
import { benchStack, machine, RUNS, table, total } from './support.ts';

if (process.env.SLUICE_PROFILE !== '1') throw new Error('run it as `npm run bench:fleet` (SLUICE_PROFILE=1 counts the requests)');
const SIZES = [1, 10, 100];

const { stack, env, clients, config } = await benchStack();
await using _stack = stack;
let invokes = 0;
const lambdaApi = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    invokes++;
    res.writeHead(202).end();
  });
});
await new Promise<void>((resolve) => lambdaApi.listen(0, '127.0.0.1', resolve));
process.env.AWS_ENDPOINT_URL_LAMBDA = `http://127.0.0.1:${(lambdaApi.address() as AddressInfo).port}`;

// The stack's own source and the registered ones capture tables nobody writes: idle.
const conn = await adminConnection(stack);
await conn.query('DROP DATABASE IF EXISTS bench_fleet; CREATE DATABASE bench_fleet; CREATE TABLE bench_fleet.t (id INT PRIMARY KEY)');
await conn.end();
// The stack's own source ends its run once caught up, as a registered source does by default: a
// tick in budget mode (the stack's default) would be its own 55 s run, whatever the fleet.
Object.assign(process.env, {
  SLUICE_SOURCE_ID: 'bench-fleet',
  SLUICE_PREFIX: 'bench-fleet',
  SLUICE_INCLUDE: 'bench_fleet\\.t',
  SLUICE_STARTUP: 'latest',
  SLUICE_STOP_WHEN_CAUGHT_UP: 'true',
});
const registry = new SourceRegistry(clients.dynamo, config.stateTable);
for (const record of await registry.list()) await registry.remove(record.id);
const { handler: poller } = await import('../functions/poller.ts');
const context = (): Context =>
  ({ functionName: 'sluice-bench-poller', awsRequestId: `bench-${Math.random()}`, getRemainingTimeInMillis: () => 60_000 }) as unknown as Context;

/** Runs `event` through the poller `RUNS` times after one untimed run; the median run's wall ms and requests. */
async function measured(event: Record<string, unknown>) {
  const [out, err] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
  process.stdout.write = process.stderr.write = () => true; // the handler's JSON logs and EMF metrics
  try {
    await poller(event, context());
    const runs: { seconds: number; dynamodb: Record<string, number>; s3: Record<string, number>; invokes: number }[] = [];
    for (let i = 0; i < RUNS; i++) {
      const before = requestCounts();
      const invoked = invokes;
      const began = performance.now();
      await poller(event, context());
      const seconds = (performance.now() - began) / 1000;
      const after = requestCounts();
      const diff = (a: Record<string, number>, b: Record<string, number>) =>
        Object.fromEntries(Object.entries(a).flatMap(([k, v]) => (v - (b[k] ?? 0) ? [[k, v - (b[k] ?? 0)]] : [])));
      runs.push({ seconds, dynamodb: diff(after.dynamodb, before.dynamodb), s3: diff(after.s3, before.s3), invokes: invokes - invoked });
    }
    return [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor((RUNS - 1) / 2)] as (typeof runs)[number];
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

const listed = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || '-';
const rows: (string | number)[][] = [];
for (const size of SIZES) {
  for (let n = (await registry.list()).length; n < size; n++)
    await registry.add(
      {
        id: `bench-fleet-${String(n).padStart(3, '0')}`,
        settings: { SLUICE_MYSQL_URL: env.SLUICE_MYSQL_URL as string, SLUICE_INCLUDE: 'bench_fleet\\.t', SLUICE_STARTUP: 'latest' },
        paused: false,
        everyMinutes: 1,
        iceberg: false,
      },
      Date.now(),
    );
  const tick = await measured({});
  rows.push([size, Math.round(tick.seconds * 1000), listed(tick.dynamodb), listed(tick.s3), tick.invokes]);
}
const idle = await measured({ source: 'bench-fleet-000' });
lambdaApi.close();

// us-east-1 list prices, arm64 (docs/RUNBOOK.md "Costs"): Lambda $0.20 per million requests and
// $0.0000133334 per GB-s at 1 GB; DynamoDB on-demand $0.625 per million writes, $0.125 per million
// reads (an item of < 1 KB: 1 unit); S3 $0.005 per 1,000 PUT/COPY/LIST, $0.0004 per 1,000 GET.
const TICKS = 43_200;
const writes = (counts: Record<string, number>) => Object.entries(counts).reduce((a, [k, v]) => a + (/Update|Put|Delete|Transact/.test(k) ? v : 0), 0);
const reads = (counts: Record<string, number>) => total(counts) - writes(counts);
const lambda = 0.2e-6 + idle.seconds * 1 * 0.0000133334;
const dynamo = writes(idle.dynamodb) * 0.625e-6 + (reads(idle.dynamodb) + 1) * 0.125e-6; // + its record in the tick's read
const s3 = Object.entries(idle.s3).reduce((a, [k, v]) => a + v * (k === 'GetObject' || k === 'HeadObject' ? 0.0004e-3 : 0.005e-3), 0);
console.log(`\n${machine()}\n`);
console.log('One scheduled tick (the poller with no source: registry read, one Invoke per due source, the stack’s own idle run):\n');
console.log(table(['registered idle sources', 'tick wall ms', 'DynamoDB requests', 'S3 requests', 'Lambda Invokes'], rows));
console.log(`\nOne idle registered source's own run: ${Math.round(idle.seconds * 1000)} ms; DynamoDB ${listed(idle.dynamodb)}; S3 ${listed(idle.s3)}`);
console.log(
  `Per idle source and month at one tick a minute (${TICKS.toLocaleString('en-US')} runs, 1 GB): Lambda $${(TICKS * lambda).toFixed(2)}, ` +
    `DynamoDB $${(TICKS * dynamo).toFixed(3)}, S3 $${(TICKS * s3).toFixed(3)}: $${(TICKS * (lambda + dynamo + s3)).toFixed(2)}`,
);
