/**
 * npm run bench:latency — how long a committed row takes to become visible in S3 while a poller
 * runs continuously (`sluice capture` as a user or the Lambda loop runs it), and what that costs in
 * requests. A writer commits one row a second for LATENCY_SECONDS (40); a watcher lists the
 * source's manifests every 100 ms (a visible manifest implies visible data) and reads each new
 * commit's objects to see which rows it made visible. Latency = commit returned in MySQL → manifest
 * listed (overstated by up to the 100 ms polling step). Requests per minute come from the poller's
 * own count (SLUICE_PROFILE), taken over the writing window (first row → last row; SIGUSR2 makes the
 * poller print its count so far), so start-up and the drain after the last row do not dilute them.
 * The monthly cost is that rate over 30 days at us-east-1 list prices (PRICES below).
 *
 * LATENCY_SETTINGS compares settings, `;`-separated, each `default` or space-separated VAR=value
 * applied to the poller; the default compares the default batching with SLUICE_TARGET_LATENCY_MS
 * 1000 and 5000.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { readManifest } from '../lib/format/manifest.ts';
import { adminConnection } from '../lib/local/stack.ts';
import { benchStack, dropOutput, machine, type Profile, percentile, profileOf, SLUICE, table, total } from './support.ts';

const SECONDS = Number(process.env.LATENCY_SECONDS ?? 40);
const SETTINGS = (process.env.LATENCY_SETTINGS ?? 'default;SLUICE_TARGET_LATENCY_MS=1000;SLUICE_TARGET_LATENCY_MS=5000').split(';').map((entry) => ({
  name: entry.trim() || 'default',
  env: Object.fromEntries(
    entry
      .trim()
      .split(/\s+/)
      .filter((pair) => pair.includes('='))
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  ) as Record<string, string>,
}));
/** After the last row, how long to wait for everything to become visible before giving up on the rest. */
const DRAIN_MS = Number(process.env.LATENCY_DRAIN_SECONDS ?? 60) * 1000;

/**
 * us-east-1 list prices in dollars per request, S3 Standard and DynamoDB on-demand. S3 bills PUT,
 * COPY, POST (DeleteObjects, multipart) and LIST at one rate, GET and HEAD at another; each DynamoDB
 * write or read is taken as 1 unit (the state item is ~0.4 KB; a commit's pending renames can take
 * it past 1 KB, 2 write units: DynamoDB's share stays small either way).
 */
const PRICES = { s3Write: 0.005 / 1000, s3Read: 0.0004 / 1000, dynamoWrite: 0.625 / 1e6, dynamoRead: 0.125 / 1e6 };
const S3_READS = new Set(['GetObject', 'HeadObject', 'HeadBucket']);
const DYNAMO_READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'DescribeTable']);
const MINUTES_A_MONTH = 30 * 24 * 60;

/** The requests `later` made since `earlier`, by service and command. */
function since(earlier: Profile['requests'], later: Profile['requests']): Profile['requests'] {
  const diff = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(b)
        .map(([k, n]) => [k, n - (a[k] ?? 0)] as const)
        .filter(([, n]) => n > 0),
    );
  return { s3: diff(earlier.s3, later.s3), dynamodb: diff(earlier.dynamodb, later.dynamodb) };
}

/** Dollars a month at these requests per minute. */
function monthlyCost(perMinute: Profile['requests']): number {
  let cost = 0;
  for (const [k, n] of Object.entries(perMinute.s3)) cost += n * (S3_READS.has(k) ? PRICES.s3Read : PRICES.s3Write);
  for (const [k, n] of Object.entries(perMinute.dynamodb)) cost += n * (DYNAMO_READS.has(k) ? PRICES.dynamoRead : PRICES.dynamoWrite);
  return cost * MINUTES_A_MONTH;
}

const { stack, config, clients } = await benchStack();
await using _stack = stack;
const conn = await adminConnection(stack);
await conn.query(`DROP DATABASE IF EXISTS bench_latency; CREATE DATABASE bench_latency;
  CREATE TABLE bench_latency.t (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME NOT NULL)`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

async function body(key: string): Promise<Buffer> {
  const object = await clients.s3.send(new GetObjectCommand({ Bucket: config.bucket, Key: key }));
  return Buffer.from(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

/** Lists new manifests every 100 ms; records when each row id was first visible. */
function watch(prefix: string, sourceId: string, visibleAt: Map<number, number>): { stop: () => Promise<void> } {
  const seen = new Set<string>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const listed = await clients.s3.send(new ListObjectsV2Command({ Bucket: config.bucket, Prefix: `${prefix}manifests/${sourceId}/` }));
      const at = Date.now();
      for (const { Key } of listed.Contents ?? []) {
        if (!Key || seen.has(Key)) continue;
        seen.add(Key);
        const manifest = readManifest((await body(Key)).toString('utf8'));
        for (const object of manifest.objects) {
          for (const line of gunzipSync(await body(object.key))
            .toString('utf8')
            .split('\n')) {
            if (line) visibleAt.set(Number((JSON.parse(line) as { key: { id: number } }).key.id), at);
          }
        }
      }
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** Resolves once the poller has stored its start position (it is streaming), or throws if it exited. */
async function started(poller: ChildProcess, sourceId: string): Promise<void> {
  for (let waited = 0; waited < 60_000; waited += 100) {
    if (poller.exitCode !== null) throw new Error(`the poller exited with ${poller.exitCode} before it started`);
    if ((await clients.store.get(sourceId))?.position) return;
    await sleep(100);
  }
  throw new Error('the poller did not start within 60 s');
}

const rows: (string | number)[][] = [];
const details: string[] = [];
let nextId = 1;
for (const setting of SETTINGS) {
  const sourceId = `bench-latency-${Date.now()}`;
  const prefix = `bench/${sourceId}/`;
  const poller = spawn(process.execPath, [...SLUICE, 'capture', '--seconds', String(SECONDS + DRAIN_MS / 1000 + 120)], {
    env: {
      ...process.env,
      SLUICE_SOURCE_ID: sourceId,
      SLUICE_PREFIX: prefix,
      SLUICE_INCLUDE: 'bench_latency\\..*',
      SLUICE_STARTUP: 'latest',
      SLUICE_PROFILE: '1',
      ...setting.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  poller.stdout.on('data', (d) => {
    stdout += d;
  });
  poller.stderr.on('data', (d) => {
    stderr += d;
  });
  /** The poller's profile so far (it prints one on SIGUSR2). */
  const profileNow = async (): Promise<Profile> => {
    const lines = () => stderr.split('\n').filter((l) => l.startsWith('{"sluiceProfile"')).length;
    const before = lines();
    poller.kill('SIGUSR2');
    while (lines() === before) await sleep(10);
    return profileOf({ code: null, seconds: 0, peakRssMb: 0, stdout, stderr });
  };
  await started(poller, sourceId);
  console.error(`${setting.name}: poller streaming; writing ${SECONDS} rows, one a second`);

  const visibleAt = new Map<number, number>();
  const watcher = watch(prefix, sourceId, visibleAt);
  const committedAt = new Map<number, number>();
  const t0 = Date.now();
  const windowStart = await profileNow();
  for (let i = 0; i < SECONDS; i++) {
    await sleep(t0 + i * 1000 - Date.now());
    const id = nextId++;
    await conn.query(`INSERT INTO bench_latency.t VALUES (${id}, 'customer-${id}', ${id} / 7, ${id % 1000}, NOW())`);
    committedAt.set(id, Date.now());
  }
  await sleep(t0 + SECONDS * 1000 - Date.now());
  const windowEnd = await profileNow();
  const deadline = Date.now() + DRAIN_MS;
  while (Date.now() < deadline && [...committedAt.keys()].some((id) => !visibleAt.has(id))) await sleep(100);
  await watcher.stop();
  poller.kill('SIGTERM');
  await once(poller, 'close');
  const profile = profileOf({ code: poller.exitCode, seconds: 0, peakRssMb: 0, stdout, stderr });
  await dropOutput(clients, config.bucket, prefix);

  const latencies = [...committedAt].filter(([id]) => visibleAt.has(id)).map(([id, at]) => ((visibleAt.get(id) ?? at) - at) / 1000);
  const minutes = (windowEnd.wallMs - windowStart.wallMs) / 60_000;
  const made = since(windowStart.requests, windowEnd.requests);
  const rate = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n / minutes]));
  const perMinute = { s3: rate(made.s3), dynamodb: rate(made.dynamodb) };
  const breakdown = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([k, n]) => `${k} ${n.toFixed(1)}`)
      .join(', ');
  rows.push([
    setting.name,
    `${latencies.length}/${committedAt.size}`,
    percentile(latencies, 50).toFixed(2),
    percentile(latencies, 99).toFixed(2),
    Math.max(...latencies).toFixed(2),
    total(perMinute.s3).toFixed(1),
    total(perMinute.dynamodb).toFixed(1),
    `$${monthlyCost(perMinute).toFixed(2)}`,
    profile.peakRssMb,
  ]);
  details.push(`${setting.name} — per minute: S3 ${breakdown(perMinute.s3)}; DynamoDB ${breakdown(perMinute.dynamodb)}`);
}
await conn.end();

console.log(
  `\n${machine().replace(/, median of .*/, '')}; ${SECONDS} rows at one a second per setting; requests over the writing window, priced for a month of it\n`,
);
console.log(table(['setting', 'rows visible', 'p50 s', 'p99 s (≤ 2)', 'max s', 'S3 req/min', 'DynamoDB req/min', 'requests $/month', 'poller RSS MB'], rows));
console.log(`\n${details.join('\n')}`);
