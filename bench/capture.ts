/**
 * npm run bench:capture — rows/s of raw zongji decoding vs sluice capture end-to-end (binlog →
 * gzip JSONL in S3, committed), on the same binlog range, in one run. Each measurement runs in
 * its own child process so its peak RSS is its own. Not a test: it prints figures.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import ZongJi from '@vlasky/zongji';
import { countRequests, createClients, initResources } from '../lib/aws.ts';
import { runCapture } from '../lib/capture/run.ts';
import { loadConfig } from '../lib/config/config.ts';
import { type BinlogPosition, comparePositions } from '../lib/core/position.ts';
import { adminConnection, env as stackEnv, up } from '../lib/local/stack.ts';
import { silentLog } from '../lib/log.ts';
import { deleteObjects, listKeys } from '../lib/sink/s3/objects.ts';

const home = join(process.cwd(), '.sluice', 'bench');

interface Measure {
  rows: number;
  seconds: number;
  peakRssMb: number;
  s3Requests?: number;
  commits?: number;
}

/** Child: decode [start, end) with zongji alone, counting rows, no encoding or output. */
async function raw(url: string, start: BinlogPosition, end: BinlogPosition): Promise<Measure> {
  const zongji = new ZongJi({ uri: url, dateStrings: true, timezone: 'Z', supportBigNumbers: true, bigNumberStrings: true });
  let rows = 0;
  let file = start.file;
  const began = process.hrtime.bigint();
  await new Promise<void>((resolve, reject) => {
    // biome-ignore lint/suspicious/noExplicitAny: zongji events are untyped
    zongji.on('binlog', (ev: any) => {
      const type = ev.getTypeName();
      if (type === 'Rotate') file = ev.binlogName;
      else if (type.endsWith('Rows')) rows += ev.rows.length;
      else if (type === 'Xid' && comparePositions({ file, pos: ev.nextPosition }, end) >= 0) resolve();
    });
    zongji.on('error', reject);
    zongji.start({ serverId: 900_000 + process.pid, filename: start.file, position: start.pos });
  });
  const seconds = Number(process.hrtime.bigint() - began) / 1e9;
  zongji.stop();
  return { rows, seconds, peakRssMb: process.resourceUsage().maxRSS / 1024 };
}

/** Child: one sluice drain run from `start` (a fresh source), committed to S3 and DynamoDB. */
async function sluice(start: BinlogPosition, sourceId: string): Promise<Measure> {
  const config = loadConfig({
    ...process.env,
    SLUICE_SOURCE_ID: sourceId,
    SLUICE_PREFIX: `bench/${sourceId}`,
    SLUICE_INCLUDE: 'bench\\..*',
    SLUICE_STARTUP: `position:${start.file}:${start.pos}`,
  });
  const clients = createClients(config);
  const requests = countRequests(clients.s3);
  const began = process.hrtime.bigint();
  const result = await runCapture({ config, s3: clients.s3, store: clients.store, log: silentLog }, { budgetMs: 30 * 60_000, stopWhenCaughtUp: true });
  const seconds = Number(process.hrtime.bigint() - began) / 1e9;
  const measure = {
    rows: result.events,
    seconds,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    s3Requests: [...requests.values()].reduce((a, b) => a + b, 0),
    commits: result.commits,
  };
  // The S3 emulator keeps objects in memory: drop this run's output so later runs are not slowed.
  const keys: string[] = [];
  for await (const key of listKeys(clients.s3, config.bucket, config.prefix)) keys.push(key);
  await deleteObjects(clients.s3, config.bucket, keys);
  return measure;
}

const RUNS = 3;

/** Runs a measurement RUNS times in fresh processes and keeps the median by time (this box is shared and noisy). */
function median(args: () => string[], env: Record<string, string>): Measure {
  const runs = Array.from({ length: RUNS }, () => child(args(), env)).sort((a, b) => a.seconds - b.seconds);
  return runs[Math.floor(RUNS / 2)] as Measure;
}

function child(args: string[], env: Record<string, string>): Measure {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/capture.ts', ...args], {
    env: { ...process.env, ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Measure;
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode === 'raw') return console.log(JSON.stringify(await raw(rest[0] ?? '', JSON.parse(rest[1] ?? ''), JSON.parse(rest[2] ?? ''))));
  if (mode === 'sluice') return console.log(JSON.stringify(await sluice(JSON.parse(rest[0] ?? ''), rest[1] ?? '')));

  const stack = await up({ home, log: (line) => console.error(`[stack] ${line}`) });
  const env = stackEnv(stack);
  Object.assign(process.env, env);
  await initResources(loadConfig({ ...env, SLUICE_SOURCE_ID: 'bench' }), createClients(loadConfig({ ...env, SLUICE_SOURCE_ID: 'bench' })));
  const conn = await adminConnection(stack);
  const position = async (): Promise<BinlogPosition> => {
    const [[row]] = (await conn.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number }]];
    return { file: row.File, pos: Number(row.Position) };
  };
  await conn.query(`DROP DATABASE IF EXISTS bench; CREATE DATABASE bench; CREATE TABLE bench.t (
    id BIGINT UNSIGNED PRIMARY KEY, account INT NOT NULL, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL,
    created DATETIME(6) NOT NULL, score DOUBLE NOT NULL, flag TINYINT NOT NULL, note VARCHAR(255) NULL)`);

  const workloads: { name: string; write: () => Promise<number> }[] = [
    {
      name: 'bulk: 200k rows, 1000-row INSERTs',
      write: async () => {
        for (let i = 0; i < 200; i++) {
          await conn.query(
            `INSERT INTO bench.t SELECT seq, seq % 1000, CONCAT('customer-', seq), seq / 7, NOW(6), seq * 1.5, seq % 2, IF(seq % 3 = 0, NULL, 'a note of modest length') FROM bench.seq_${i * 1000 + 1}_to_${(i + 1) * 1000}`,
          );
        }
        return 200_000;
      },
    },
    {
      name: 'oltp: 20k single-row transactions',
      write: async () => {
        for (let i = 0; i < 20_000; i++) {
          await conn.query(`INSERT INTO bench.t VALUES (${1_000_000 + i}, ${i % 1000}, 'customer-${i}', ${i}.25, NOW(6), ${i * 1.5}, 1, NULL)`);
        }
        return 20_000;
      },
    },
  ];

  const report: string[] = [];
  for (const workload of workloads) {
    const start = await position();
    const rows = await workload.write();
    const end = await position();
    console.error(`${workload.name}: written ${start.file}:${start.pos} → ${end.file}:${end.pos}`);
    const r = median(() => ['raw', env.SLUICE_MYSQL_URL ?? '', JSON.stringify(start), JSON.stringify(end)], env);
    const s = median(() => ['sluice', JSON.stringify(start), `bench-${Date.now()}`], env);
    if (r.rows !== rows || s.rows !== rows) throw new Error(`row count mismatch: wrote ${rows}, zongji saw ${r.rows}, sluice captured ${s.rows}`);
    const rawRate = r.rows / r.seconds;
    const sluiceRate = s.rows / s.seconds;
    report.push(
      `${workload.name}`,
      `  zongji decode only : ${Math.round(rawRate).toLocaleString('en-US')} rows/s (${r.seconds.toFixed(2)} s, peak RSS ${r.peakRssMb.toFixed(0)} MB)`,
      `  sluice end-to-end  : ${Math.round(sluiceRate).toLocaleString('en-US')} rows/s (${s.seconds.toFixed(2)} s, peak RSS ${s.peakRssMb.toFixed(0)} MB, ${s.commits} commits)`,
      `  ratio sluice/zongji: ${(sluiceRate / rawRate).toFixed(2)} (target >= 0.60)`,
      `  S3 requests        : ${s.s3Requests} total, ${Math.round(((s.s3Requests ?? 0) / s.rows) * 1e6).toLocaleString('en-US')} per 1M rows`,
    );
  }
  await conn.end();
  console.log(`\nnode ${process.version}, ${(await import('node:os')).cpus().length} cores, median of ${RUNS} runs each\n${report.join('\n')}`);
}

await main();
