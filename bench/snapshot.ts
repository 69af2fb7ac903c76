/**
 * npm run bench:snapshot — rows/s of one sluice snapshot worker (paging, encoding, gzip, S3, commits)
 * vs `mariadb --quick -e 'SELECT * …' > /dev/null` on the same table, in one run, and the worker's
 * peak RSS on a 250k- and a 1M-row table (it must stay flat as the table grows). Not a test.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createClients, initResources } from '../lib/aws.ts';
import { loadConfig } from '../lib/config/config.ts';
import { adminConnection, env as stackEnv, up } from '../lib/local/stack.ts';
import { silentLog } from '../lib/log.ts';
import { deleteObjects, listKeys } from '../lib/sink/s3/objects.ts';
import { requestSnapshot } from '../lib/snapshot/plan.ts';
import { runSnapshotWorker } from '../lib/snapshot/worker.ts';

const home = join(process.cwd(), '.sluice', 'bench');

interface Measure {
  rows: number;
  seconds: number;
  peakRssMb: number;
}

/** Child: a fresh source snapshots `table` with one worker. */
async function worker(table: string): Promise<Measure> {
  const sourceId = `snapbench-${Date.now()}`;
  const config = loadConfig({ ...process.env, SLUICE_SOURCE_ID: sourceId, SLUICE_PREFIX: `bench/${sourceId}` });
  const clients = createClients(config);
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: silentLog };
  const began = process.hrtime.bigint();
  const job = await requestSnapshot(deps, [table]);
  const result = await runSnapshotWorker(deps, { budgetMs: 3_600_000, snapshotId: job.id });
  const seconds = Number(process.hrtime.bigint() - began) / 1e9;
  if (!result.complete) throw new Error('snapshot did not complete');
  const measure = { rows: result.rows, seconds, peakRssMb: process.resourceUsage().maxRSS / 1024 };
  const keys: string[] = [];
  for await (const key of listKeys(clients.s3, config.bucket, config.prefix)) keys.push(key);
  await deleteObjects(clients.s3, config.bucket, keys); // the S3 emulator keeps objects in memory
  return measure;
}

function child(table: string, env: Record<string, string>): Measure {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/snapshot.ts', 'worker', table], {
    env: { ...process.env, ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Measure;
}

function mariadbQuick(port: number, table: string): number {
  const began = process.hrtime.bigint();
  execFileSync('sh', ['-c', `mariadb --quick -h127.0.0.1 -P${port} -usluice_admin -psluice-admin -e 'SELECT * FROM ${table}' > /dev/null`]);
  return Number(process.hrtime.bigint() - began) / 1e9;
}

async function main() {
  const [mode, table] = process.argv.slice(2);
  if (mode === 'worker') return console.log(JSON.stringify(await worker(table ?? '')));

  const stack = await up({ home, log: (line) => console.error(`[stack] ${line}`) });
  const env = stackEnv(stack);
  Object.assign(process.env, env);
  const config = loadConfig({ ...env, SLUICE_SOURCE_ID: 'bench' });
  await initResources(config, createClients(config));
  const conn = await adminConnection(stack);
  await conn.query('CREATE DATABASE IF NOT EXISTS bench');
  const sizes = [250_000, 1_000_000];
  for (const rows of sizes) {
    const [[existing]] = (await conn.query(
      `SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench' AND TABLE_NAME = 'snap${rows}'`,
    )) as unknown as [[{ n: number }]];
    if (Number(existing.n) > 0) continue;
    console.error(`creating bench.snap${rows}…`);
    await conn.query(`CREATE TABLE bench.snap${rows} (
      id BIGINT UNSIGNED PRIMARY KEY, account INT NOT NULL, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL,
      created DATETIME(6) NOT NULL, score DOUBLE NOT NULL, flag TINYINT NOT NULL, note VARCHAR(255) NULL)`);
    for (let from = 1; from <= rows; from += 100_000) {
      await conn.query(`INSERT INTO bench.snap${rows} SELECT seq, seq % 1000, CONCAT('customer-', seq), seq / 7, NOW(6), seq * 1.5, seq % 2,
        IF(seq % 3 = 0, NULL, 'a note of modest length') FROM bench.seq_${from}_to_${Math.min(from + 99_999, rows)}`);
    }
  }
  await conn.end();

  const report: string[] = [];
  for (const rows of sizes) {
    const table = `bench.snap${rows}`;
    mariadbQuick(stack.mariadb.port, table); // warm the buffer pool for both readers alike
    const quick = mariadbQuick(stack.mariadb.port, table);
    const s = child(table, env);
    if (s.rows !== rows) throw new Error(`sluice copied ${s.rows} rows of ${rows}`);
    const quickRate = rows / quick;
    const rate = s.rows / s.seconds;
    report.push(
      `${table} (${rows.toLocaleString('en-US')} rows, 8 columns)`,
      `  mariadb --quick > /dev/null : ${Math.round(quickRate).toLocaleString('en-US')} rows/s (${quick.toFixed(2)} s)`,
      `  sluice snapshot, 1 worker   : ${Math.round(rate).toLocaleString('en-US')} rows/s (${s.seconds.toFixed(2)} s), peak RSS ${s.peakRssMb.toFixed(0)} MB (target <= 256, flat)`,
      `  ratio sluice/mariadb        : ${(rate / quickRate).toFixed(2)} (target >= 0.50)`,
    );
  }
  console.log(`\nnode ${process.version}, ${(await import('node:os')).cpus().length} cores; page ${config.snapshot.pageRows} rows\n${report.join('\n')}`);
}

await main();
