/**
 * What the benchmarks share: the embedded stack under .sluice/bench, whole-process measurement
 * (wall time from spawn to exit, peak RSS from GNU time), the SLUICE_PROFILE report a sluice
 * process prints at exit (taken from a separate, untimed run), and compact tables.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClients, initResources } from '../lib/aws.ts';
import { loadConfig } from '../lib/config/config.ts';
import { runStack, env as stackEnv } from '../lib/local/stack.ts';
import { deleteObjects, listKeys } from '../lib/sink/s3/objects.ts';

export const BENCH_HOME = join(process.cwd(), '.sluice', 'bench');
const TIME = '/usr/bin/time';

/** Measurements repeat this often, interleaved, and the median is reported (the machine may be shared). */
export const RUNS = Number(process.env.BENCH_RUNS ?? 3);

/**
 * Builds the CLI (so the measured `sluice` runs the current sources), starts the stack, creates the
 * bucket and table. The stack is disposable: what this run started stops at its end (`await using`)
 * unless SLUICE_KEEP_STACK=1.
 */
export async function benchStack() {
  if (!existsSync(TIME)) throw new Error(`${TIME} (GNU time) is needed to measure peak RSS: apt-get install -y time`);
  execFileSync(process.execPath, ['scripts/build.js'], { stdio: 'inherit' });
  const stack = await runStack({ home: BENCH_HOME, log: (line) => console.error(`[stack] ${line}`) });
  const env: Record<string, string> = {
    ...stackEnv(stack),
    SLUICE_HOME: BENCH_HOME,
    SLUICE_SOURCE_ID: 'bench',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  Object.assign(process.env, env);
  const config = loadConfig(env);
  const clients = createClients(config);
  await initResources(config, clients);
  return { stack, env, config, clients };
}

export interface ProcessRun {
  code: number | null;
  seconds: number;
  peakRssMb: number;
  stdout: string;
  stderr: string;
}

/** Runs `command` as its own process; wall time from spawn to exit, peak RSS as GNU time reports it. */
export function measure(command: string, args: string[], options: { env?: Record<string, string>; stdout?: 'discard' } = {}): Promise<ProcessRun> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const rssFile = join(dir, 'rss');
  const out = options.stdout === 'discard' ? openSync('/dev/null', 'w') : 'pipe';
  const began = process.hrtime.bigint();
  const child = spawn(TIME, ['-f', '%M', '-o', rssFile, command, ...args], { env: { ...process.env, ...options.env }, stdio: ['ignore', out, 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = Number(process.hrtime.bigint() - began) / 1e9;
      const rss = Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop());
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, seconds, peakRssMb: rss / 1024, stdout, stderr });
    });
  });
}

/** Throws with the process's output unless it exited 0. */
export function ok(run: ProcessRun, what: string): ProcessRun {
  if (run.code !== 0) throw new Error(`${what} exited ${run.code}:\n${run.stdout}\n${run.stderr}`);
  return run;
}

/** The report a sluice process prints on stderr at exit under SLUICE_PROFILE=1 (lib/profile.ts). */
export interface Profile {
  wallMs: number;
  splitMs: Record<string, number>;
  loopIdleMs: number;
  gcMs: number;
  cpuMs: { user: number; system: number };
  peakRssMb: number;
  requests: { s3: Record<string, number>; dynamodb: Record<string, number> };
}

/**
 * How the benchmarks label the one sluice run per workload that runs with SLUICE_PROFILE=1: its
 * report gives the split and the request counts, but its wall time is not reported as sluice's,
 * since the accounting costs some 6% (~0.08 s of a 1.3 s capture) that users do not pay.
 */
export const PROFILED = 'profiled run (not timed; profiling adds ~6%)';

export function profileOf(run: ProcessRun): Profile {
  const line = run.stderr
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{"sluiceProfile"'));
  if (!line) throw new Error(`no SLUICE_PROFILE report on stderr:\n${run.stderr}`);
  return JSON.parse(line) as Profile;
}

export const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** One line: the in-process split of a sluice run, then loop idle, GC, CPU and requests. */
export function describeProfile(p: Profile): string[] {
  const split = Object.entries(p.splitMs)
    .filter(([, ms]) => ms > 0)
    .map(([k, ms]) => `${k} ${ms}`)
    .join(', ');
  const requests = (counts: Record<string, number>) =>
    `${total(counts)} (${Object.entries(counts)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')})`;
  return [
    `    split ms : ${split}`,
    `    also     : event loop idle ${p.loopIdleMs} ms, GC ${p.gcMs} ms, CPU ${p.cpuMs.user + p.cpuMs.system} ms (user ${p.cpuMs.user})`,
    `    requests : S3 ${requests(p.requests.s3)}; DynamoDB ${requests(p.requests.dynamodb)}`,
  ];
}

/** The run with the median wall time. */
export function median<T extends { seconds: number }>(runs: T[]): T {
  return [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor((runs.length - 1) / 2)] as T;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** A Markdown table, so a run's output can be pasted into docs/PERFORMANCE.md as it is. */
export function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const width = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(width[i] ?? 0)).join(' | ')} |`;
  return [line(head), `|${width.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.slice(1).map(line)].join('\n');
}

/** Node version, cores and load: figures from a loaded machine are not comparable. */
export function machine(): string {
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  return `node ${process.version}, ${cpus().length} cores, load average ${load} (figures from a busy machine are noise), median of ${RUNS} runs`;
}

/** The S3 emulator keeps objects in memory: drop a run's output so later runs are not slowed. */
export async function dropOutput(clients: ReturnType<typeof createClients>, bucket: string, prefix: string): Promise<void> {
  const keys: string[] = [];
  for await (const key of listKeys(clients.s3, bucket, prefix)) keys.push(key);
  await deleteObjects(clients.s3, bucket, keys);
}

/** `node bin/sluice.js …`, the command a user runs. */
export const SLUICE = [join(process.cwd(), 'bin', 'sluice.js')];
