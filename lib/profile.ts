import { PerformanceObserver, performance } from 'node:perf_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';

/*
 * SLUICE_PROFILE=1: where one `sluice` process spends its wall time, printed as one JSON line on
 * stderr at exit (npm run bench:* read it). Off, every hook below is the identity: `timed` returns
 * the function itself and `waiting` the promise itself, so the hot paths pay nothing.
 *
 * Attribution is exclusive, so the parts add up to the wall time:
 *   - `startup`: process start until the command's modules are loaded and its clients built;
 *   - `shutdown`: the command returned; closing connections until the process exits;
 * and in between, at any instant the main thread is
 *   - in a timed CPU span: `decode` (mysql2 + zongji parsing binlog packets) or `encode` (change
 *     events into staging buffers), or else
 *   - running other JavaScript: `js` (the loops, snapshot rows' parsing and encoding, GC), or else
 *   - idle in the event loop while a DynamoDB request, an S3 request, or a gzip stream (finishing,
 *     or pushing back) is outstanding — `dynamodb`, `s3`, `gzip`, the first that applies — or else
 *   - `idle`: waiting for MySQL (the binlog, query results) or a timer.
 * Busy and idle come from the event loop's own accounting (eventLoopUtilization).
 */

export const profiling = process.env.SLUICE_PROFILE === '1';

type Cpu = 'decode' | 'encode';
type Wait = 'dynamodb' | 's3' | 'gzip';
type Phase = 'startup' | 'run' | 'shutdown';

const totals: Record<Cpu | Wait | Exclude<Phase, 'run'> | 'js' | 'idle', number> = {
  startup: 0,
  decode: 0,
  encode: 0,
  js: 0,
  gzip: 0,
  s3: 0,
  dynamodb: 0,
  idle: 0,
  shutdown: 0,
};
const outstanding: Record<Wait, number> = { dynamodb: 0, s3: 0, gzip: 0 };
const requests: Record<'s3' | 'dynamodb', Record<string, number>> = { s3: {}, dynamodb: {} };
let phase: Phase = 'startup';
let cpu: Cpu | undefined;
let since = 0; // performance.now() counts from the process's start
let idleSince = 0;
let gcMs = 0;

/** Books the time since the last call; called at every change of span, phase or outstanding work. */
function account(): void {
  const now = performance.now();
  const idleNow = performance.eventLoopUtilization().idle;
  const elapsed = now - since;
  if (cpu) totals[cpu] += elapsed;
  else if (phase !== 'run') totals[phase] += elapsed;
  else {
    const idle = Math.min(elapsed, idleNow - idleSince);
    totals.js += elapsed - idle;
    totals[outstanding.dynamodb ? 'dynamodb' : outstanding.s3 ? 's3' : outstanding.gzip ? 'gzip' : 'idle'] += idle;
  }
  since = now;
  idleSince = idleNow;
}

/** `fn`, with the time inside it counted as `category` (when profiling; else `fn` itself). */
export function timed<A extends unknown[], R>(category: Cpu, fn: (...args: A) => R): (...args: A) => R {
  if (!profiling) return fn;
  return (...args) => {
    account();
    const outer = cpu;
    cpu = category;
    try {
      return fn(...args);
    } finally {
      account();
      cpu = outer;
    }
  };
}

/** `promise`, with the time until it settles counted as waiting on `category` (when profiling). */
export function waiting<T>(category: Wait, promise: Promise<T>): Promise<T> {
  if (!profiling) return promise;
  account();
  outstanding[category]++;
  const settle = () => {
    account();
    outstanding[category]--;
  };
  promise.then(settle, settle);
  return promise;
}

/** Moves the process to its next phase: `run` once the command's modules and clients are ready, `shutdown` once it returned. */
export function profilePhase(next: 'run' | 'shutdown'): void {
  if (!profiling) return;
  account();
  phase = next;
}

/** Counts an AWS SDK client's requests by command and accounts the time they are outstanding. */
export function profileClient(client: S3Client | DynamoDBClient, service: 's3' | 'dynamodb'): void {
  if (!profiling) return;
  (client as S3Client).middlewareStack.add(
    (next, context) => (args) => {
      const name = (context.commandName ?? 'unknown').replace(/Command$/, '');
      requests[service][name] = (requests[service][name] ?? 0) + 1;
      return waiting(service, next(args));
    },
    { step: 'initialize', name: 'sluiceProfile' },
  );
}

/** The AWS requests counted so far (SLUICE_PROFILE=1), by service and command; a copy. */
export function requestCounts(): Record<'s3' | 'dynamodb', Record<string, number>> {
  return { s3: { ...requests.s3 }, dynamodb: { ...requests.dynamodb } };
}

/** The profile so far as one JSON line. */
function report(): string {
  account();
  const usage = process.resourceUsage();
  const round = (ms: number) => Math.round(ms);
  return JSON.stringify({
    sluiceProfile: 1,
    // The instant `account` booked last: the parts add up to it whatever runs between here and there.
    wallMs: round(since),
    splitMs: Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, round(v)])),
    loopIdleMs: round(performance.eventLoopUtilization().idle),
    gcMs: round(gcMs),
    cpuMs: { user: round(usage.userCPUTime / 1000), system: round(usage.systemCPUTime / 1000) },
    peakRssMb: round(usage.maxRSS / 1024),
    requests,
  });
}

/**
 * Prints the profile as one JSON line on stderr when the process exits (also on SIGTERM/SIGINT),
 * and the profile so far on SIGUSR2, so a benchmark can take the requests of a window of a long run.
 */
export function reportProfileAtExit(): void {
  if (!profiling) return;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  }).observe({ entryTypes: ['gc'] });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit(128 + (signal === 'SIGTERM' ? 15 : 2)));
  process.on('SIGUSR2', () => process.stderr.write(`${report()}\n`));
  process.once('exit', () => process.stderr.write(`${report()}\n`));
}
