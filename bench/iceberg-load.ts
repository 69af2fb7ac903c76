/**
 * bench:iceberg's first-load part: a real first merge — a MariaDB table copied into the change log
 * by the snapshot, a few binlog changes after it, then `runIcebergMerge` reading the change log and
 * writing the Iceberg table — timed at each size; at the largest, also split into buckets
 * (lib/iceberg/merge/rewrite.ts) and written by 1, 2 and 4 workers, in process as the Lambda Invoke API
 * would start them. Each timed load starts from a fresh merge ledger (its files of the earlier
 * load are discarded as an uncommitted attempt's).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { createClients } from '../lib/aws.ts';
import { runCapture } from '../lib/capture/run.ts';
import { type Config, loadConfig } from '../lib/config/config.ts';
import { tablePath } from '../lib/core/table-path.ts';
import { runIcebergMerge } from '../lib/iceberg/merge/merge.ts';
import { type RewriteEvent, runRewriteWorker } from '../lib/iceberg/merge/rewrite.ts';
import { adminConnection } from '../lib/local/stack.ts';
import { silentLog } from '../lib/log.ts';
import { runSnapshotWorker } from '../lib/snapshot/worker.ts';
import { sparkTools } from '../test/engines/tools.ts';
import type { benchStack } from './support.ts';

const run = promisify(execFile);

export interface LoadFigure {
  readonly rows: number;
  readonly how: string;
  readonly seconds: number;
}

/** The largest load's table as Spark and MariaDB see it (ICEBERG_SPARK=1): count, sums and an order-free row digest. */
export interface SparkCheck {
  readonly rows: number;
  readonly equal: boolean;
  readonly spark: Record<string, string>;
  readonly mariadb: Record<string, string>;
  readonly seconds: number;
}

/**
 * First loads of `sizes` rows (whole), and at the largest, split with each of `workers`; with `spark`,
 * the table the largest split load committed is then read by Spark and compared with MariaDB.
 */
export async function firstLoads(
  bench: Awaited<ReturnType<typeof benchStack>>,
  sizes: readonly number[],
  workers: readonly number[],
  spark = false,
): Promise<{ figures: LoadFigure[]; spark?: SparkCheck }> {
  const { stack, env } = bench;
  const conn = await adminConnection(stack);
  await conn.query('CREATE DATABASE IF NOT EXISTS bench_iceberg');
  for (const size of sizes) {
    const [[existing]] = (await conn.query(`SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench_iceberg' AND TABLE_NAME = ?`, [
      `t${size}`,
    ])) as unknown as [[{ n: number }]];
    if (Number(existing.n) > 0) continue;
    console.error(`creating bench_iceberg.t${size}…`);
    await conn.query(`CREATE TABLE bench_iceberg.t${size} (
      id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME NOT NULL)`);
    for (let from = 1; from <= size; from += 1_000_000)
      await conn.query(`INSERT INTO bench_iceberg.t${size} SELECT seq, CONCAT('customer-', seq), seq / 7, seq % 1000, '2026-01-01' - INTERVAL seq SECOND
        FROM bench_iceberg.seq_${from}_to_${Math.min(from + 999_999, size)}`);
  }
  const figures: LoadFigure[] = [];
  let largest: { name: string; metadataKey: string } | undefined;
  for (const size of sizes) {
    const name = `t${size}`;
    const sourceId = `bench-load-${size}-${Date.now()}`;
    const config = loadConfig({ ...env, SLUICE_SOURCE_ID: sourceId, SLUICE_PREFIX: `bench/${sourceId}/`, SLUICE_INCLUDE: `bench_iceberg.${name}` });
    const clients = createClients(config);
    const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: silentLog };
    console.error(`${size} rows: snapshot into the change log…`);
    const first = await runCapture(deps, { budgetMs: 3_600_000, stopWhenCaughtUp: true });
    await runSnapshotWorker(deps, { budgetMs: 3_600_000, snapshotId: first.snapshotRequested });
    await conn.query(`UPDATE bench_iceberg.${name} SET qty = qty + 1 WHERE id <= 1000`);
    await runCapture(deps, { budgetMs: 3_600_000, stopWhenCaughtUp: true });
    const table = { db: 'bench_iceberg', table: name };
    const load = async (how: string, iceberg: Partial<Config['iceberg']>) => {
      const cfg: Config = { ...config, iceberg: { ...config.iceberg, ...iceberg } };
      await clients.dynamo.send(new DeleteItemCommand({ TableName: config.stateTable, Key: { pk: { S: `iceberg#${sourceId}#${tablePath(table)}` } } }));
      const running: Promise<unknown>[] = [];
      const mergeDeps = { ...deps, config: cfg, merges: clients.merges, buckets: clients.buckets };
      const invoke = async (event: RewriteEvent) => {
        running.push(runRewriteWorker({ ...mergeDeps, invoke }, event.rewrite, { budgetMs: 3_600_000 }));
      };
      console.error(`${size} rows: first load, ${how}…`);
      const began = process.hrtime.bigint();
      const result = await runIcebergMerge({ ...mergeDeps, invoke }, { tables: [table], owner: `bench-${Date.now()}` });
      await Promise.all(running);
      const seconds = Number(process.hrtime.bigint() - began) / 1e9;
      const t = result.tables[0];
      if (t?.status !== 'merged' || t.rowsWritten !== size) throw new Error(`${size} rows, ${how}: ${t?.status} ${t?.reason ?? ''} (${t?.rowsWritten} rows)`);
      figures.push({ rows: size, how, seconds });
      if (t.metadataKey) largest = { name, metadataKey: t.metadataKey };
    };
    await load('whole', { workers: 1, bucketRows: Number.MAX_SAFE_INTEGER });
    if (size === Math.max(...sizes))
      for (const w of workers)
        await load(`${w} worker${w === 1 ? '' : 's'}, ${Math.max(w, Math.ceil(size / config.iceberg.bucketRows))} buckets`, { workers: w });
  }
  const check = spark && largest ? await sparkCheck(bench, conn, largest.name, largest.metadataKey) : undefined;
  await conn.end();
  return { figures, ...(check ? { spark: check } : {}) };
}

/** Spark (test/engines/spark_digest.py) against MariaDB by the same row formula; integers compared as integers. */
async function sparkCheck(bench: Awaited<ReturnType<typeof benchStack>>, conn: Awaited<ReturnType<typeof adminConnection>>, name: string, metadataKey: string) {
  const { python, jars } = await sparkTools();
  const scratch = mkdtempSync(join(tmpdir(), 'bench-spark-'));
  const input = join(scratch, 'input.json');
  const env = bench.env;
  writeFileSync(
    input,
    JSON.stringify({
      s3: { endpoint: env.AWS_ENDPOINT_URL_S3, region: env.AWS_REGION, accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY },
      jars,
      scratch,
      metadata: `s3://${bench.config.bucket}/${metadataKey}`,
    }),
  );
  console.error(`reading ${name} with Spark…`);
  const began = process.hrtime.bigint();
  const { stdout } = await run(python, ['test/engines/spark_digest.py', input], { maxBuffer: 16 * 1024 * 1024, timeout: 30 * 60_000 });
  const seconds = Number(process.hrtime.bigint() - began) / 1e9;
  rmSync(scratch, { recursive: true, force: true });
  const spark = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, string>;
  const [[row]] = (await conn.query(`SELECT COUNT(*) AS \`rows\`, COUNT(DISTINCT id) AS ids, SUM(id) AS id_sum, SUM(qty) AS qty_sum, SUM(amount) AS amount_sum,
      SUM(CRC32(CONCAT_WS('|', id, name, amount, qty, DATE_FORMAT(created, '%Y-%m-%d %H:%i:%s')))) AS digest FROM bench_iceberg.${name}`)) as unknown as [
    [Record<string, string | number>],
  ];
  const mariadb = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, String(v)]));
  const same = (k: string) => (k === 'amount_sum' ? spark[k] === mariadb[k] : BigInt(spark[k] ?? -1) === BigInt(mariadb[k] ?? -2));
  return { rows: Number(mariadb.rows), equal: Object.keys(mariadb).every(same), spark, mariadb, seconds };
}
