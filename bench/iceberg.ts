/**
 * npm run bench:iceberg — what one Iceberg merge costs when 1% of a table changed: wall time, bytes
 * written to S3, S3 and DynamoDB requests; beside it the first load (the table written whole) and a
 * compaction of the table after the change (staged only, not committed).
 *
 * ICEBERG_ROWS (default 1000000) rows in bench_iceberg.t<rows> (BIGINT key, VARCHAR, DECIMAL, INT,
 * DATETIME, as bench:snapshot), created once and kept in .sluice/bench; ICEBERG_CHANGED (0.01) of
 * them changed between the two merges: 80% updated, 10% deleted, 10% as many inserted. Each run is a
 * fresh source (initial snapshot, captures) so the merge reads only its own change log. The
 * merge runs in this process (the library call `sluice iceberg` and the Lambda make).
 */
import { countRequests, createClients } from '../lib/aws.ts';
import { runCapture } from '../lib/capture/run.ts';
import { loadConfig } from '../lib/config/config.ts';
import { runIcebergMerge, type TableMergeResult } from '../lib/iceberg/merge.ts';
import { s3ObjectStore } from '../lib/iceberg/store.ts';
import { loadVersion, stageCompaction } from '../lib/iceberg/table.ts';
import { adminConnection } from '../lib/local/stack.ts';
import { silentLog } from '../lib/log.ts';
import { runSnapshotWorker } from '../lib/snapshot/worker.ts';
import { benchStack, machine, table } from './support.ts';

const ROWS = Number(process.env.ICEBERG_ROWS ?? 1_000_000);
const CHANGED = Number(process.env.ICEBERG_CHANGED ?? 0.01);

const { stack, env } = await benchStack();
const conn = await adminConnection(stack);
const name = `t${ROWS}`;
await conn.query('CREATE DATABASE IF NOT EXISTS bench_iceberg');
const [[existing]] = (await conn.query(`SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench_iceberg' AND TABLE_NAME = ?`, [
  name,
])) as unknown as [[{ n: number }]];
const [[count]] = Number(existing.n) ? ((await conn.query(`SELECT COUNT(*) AS n FROM bench_iceberg.${name}`)) as unknown as [[{ n: number }]]) : [[{ n: 0 }]];
if (Number(existing.n) && Number(count.n) !== ROWS) await conn.query(`DROP TABLE bench_iceberg.${name}`); // a run that stopped half-way
if (!Number(existing.n) || Number(count.n) !== ROWS) {
  console.error(`creating bench_iceberg.${name}…`);
  await conn.query(`CREATE TABLE bench_iceberg.${name} (
    id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME NOT NULL)`);
  for (let from = 1; from <= ROWS; from += 100_000)
    await conn.query(`INSERT INTO bench_iceberg.${name} SELECT seq, CONCAT('customer-', seq), seq / 7, seq % 1000, '2026-01-01' - INTERVAL seq SECOND
      FROM bench_iceberg.seq_${from}_to_${Math.min(from + 99_999, ROWS)}`);
}

const sourceId = `bench-iceberg-${Date.now()}`;
const config = loadConfig({
  ...env,
  SLUICE_SOURCE_ID: sourceId,
  SLUICE_PREFIX: `bench/${sourceId}`,
  SLUICE_INCLUDE: `bench_iceberg\\.${name}`,
  SLUICE_STARTUP: 'initial',
});
const clients = createClients(config);
const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: silentLog };
console.error(`copying ${ROWS} rows into the change log (snapshot)…`);
const first = await runCapture(deps, { budgetMs: 600_000, stopWhenCaughtUp: true });
await runSnapshotWorker(deps, { budgetMs: 3_600_000, snapshotId: first.snapshotRequested });
await runCapture(deps, { budgetMs: 600_000, stopWhenCaughtUp: true });

/** One merge with fresh request counters: wall time, bytes PUT, requests per command. */
async function measuredMerge(): Promise<{ seconds: number; bytes: number; s3: Map<string, number>; dynamo: Map<string, number>; result: TableMergeResult }> {
  // Fresh clients, so the counters see this merge alone.
  const fresh = createClients(config);
  const s3 = fresh.s3;
  const requests = countRequests(s3);
  const dynamoRequests = countRequests(fresh.dynamo);
  let bytes = 0;
  s3.middlewareStack.add(
    (next, context) => (args) => {
      const input = args.input as { Body?: { byteLength?: number; length?: number } };
      if (['PutObjectCommand', 'UploadPartCommand'].includes(context.commandName ?? '')) bytes += input.Body?.byteLength ?? input.Body?.length ?? 0;
      return next(args);
    },
    { step: 'initialize', name: 'benchBytes' },
  );
  const began = process.hrtime.bigint();
  const run = await runIcebergMerge({ ...deps, s3, store: fresh.store, snapshots: fresh.snapshots, merges: fresh.merges });
  const seconds = Number(process.hrtime.bigint() - began) / 1e9;
  s3.destroy();
  fresh.dynamo.destroy();
  const result = run.tables[0];
  if (result?.status !== 'merged' || !result) throw new Error(`the merge did not merge: ${JSON.stringify(run.tables)}`);
  return { seconds, bytes, s3: requests, dynamo: new Map(dynamoRequests), result };
}

console.error('first merge (the table written whole)…');
const load = await measuredMerge();
const changed = Math.round(ROWS * CHANGED);
const step = Math.max(1, Math.floor(ROWS / changed));
console.error(`changing ${changed} rows…`);
const affected = async (sql: string) => ((await conn.query(sql)) as unknown as [{ affectedRows: number }])[0].affectedRows;
const updated = await affected(
  `UPDATE bench_iceberg.${name} SET qty = qty + 1, amount = amount + 0.01 WHERE id % ${step} = 0 AND id % ${step * 10} <> ${step}`,
);
const deleted = await affected(`DELETE FROM bench_iceberg.${name} WHERE id % ${step * 10} = ${step}`);
const inserted = await affected(
  `INSERT INTO bench_iceberg.${name} SELECT ${ROWS} + seq, CONCAT('new-', seq), seq, 1, '2026-06-01' FROM bench_iceberg.seq_1_to_${Math.max(1, Math.round(changed / 10))}`,
);
await runCapture(deps, { budgetMs: 600_000, stopWhenCaughtUp: true });
console.error('merging the change…');
const merge = await measuredMerge();

console.error('compacting (staged only)…');
const store = s3ObjectStore(clients.s3, config.bucket);
const state = await clients.merges.get(sourceId, { db: 'bench_iceberg', table: name });
const current = await loadVersion(store, state?.metadataKey as string);
const compactBegan = process.hrtime.bigint();
const compaction = await stageCompaction({ store }, current, { tag: 'bench-c', timestampMs: Date.now() });
const compactSeconds = Number(process.hrtime.bigint() - compactBegan) / 1e9;
// Back to the table as created, for the next run.
await conn.query(`DELETE FROM bench_iceberg.${name} WHERE id > ${ROWS}`);
await conn.query(`UPDATE bench_iceberg.${name} SET qty = qty - 1, amount = amount - 0.01 WHERE id % ${step} = 0 AND id % ${step * 10} <> ${step}`);
await conn.query(`INSERT INTO bench_iceberg.${name} SELECT seq, CONCAT('customer-', seq), seq / 7, seq % 1000, '2026-01-01' - INTERVAL seq SECOND
  FROM bench_iceberg.seq_1_to_${ROWS} WHERE seq % ${step * 10} = ${step}`);
await conn.end();

const mb = (bytes: number) => (bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(0)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
const describe = (m: Map<string, number>) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k.replace(/Command$/, '')} ${v}`)
    .join(', ');
console.log(`\nbench:iceberg on ${machine().replace(/, median of \d+ runs$/, ', one run each')}`);
console.log(
  `table bench_iceberg.${name}: ${ROWS} rows; between the merges ${updated} updated, ${deleted} deleted, ${inserted} inserted (ICEBERG_CHANGED=${CHANGED})\n`,
);
console.log(
  table(
    ['step', 'mode', 'wall s', 'rows written', 'deletes', 'written', 'S3 requests', 'DynamoDB requests'],
    [
      [
        'first merge',
        load.result.mode ?? '',
        load.seconds.toFixed(2),
        load.result.rowsWritten ?? 0,
        load.result.deletes ?? 0,
        mb(load.bytes),
        [...load.s3.values()].reduce((a, b) => a + b, 0),
        [...load.dynamo.values()].reduce((a, b) => a + b, 0),
      ],
      [
        `merge of ${(CHANGED * 100).toFixed(1)}% changed`,
        merge.result.mode ?? '',
        merge.seconds.toFixed(2),
        merge.result.rowsWritten ?? 0,
        merge.result.deletes ?? 0,
        mb(merge.bytes),
        [...merge.s3.values()].reduce((a, b) => a + b, 0),
        [...merge.dynamo.values()].reduce((a, b) => a + b, 0),
      ],
      ['compaction (staged)', 'rewrite', compactSeconds.toFixed(2), compaction.stats.rowsWritten, 0, '-', '-', '-'],
    ],
  ),
);
console.log(`\nS3 requests of the 1% merge: ${describe(merge.s3)}`);
console.log(`DynamoDB requests of the 1% merge: ${describe(merge.dynamo)}`);
await stack[Symbol.asyncDispose]();
process.exit(0);
