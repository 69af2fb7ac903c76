/**
 * npm run bench:capture — what a user waits for: `sluice capture --once` as a whole process (node
 * start, module load, lease, recovery, decode, encode, gzip, S3, the DynamoDB commit, exit) beside
 * a bare @vlasky/zongji process decoding the same binlog range (bench/bare-zongji.js), both spawned
 * by this script in the same run, interleaved. Prints wall times, the ratio zongji/sluice (target
 * ≥ 0.6), peak RSS of each process, and where the sluice process spent its time.
 *
 * The timed sluice runs run without SLUICE_PROFILE (its accounting costs some 6% that users do not
 * pay). One more sluice run per workload, before the timed ones and not timed, runs with
 * SLUICE_PROFILE=1: its report gives the split and the request counts, and it writes the CLI's
 * code cache as a user's first run does (bin/sluice.js).
 *
 * Workloads (table: BIGINT key, VARCHAR, DECIMAL, INT, DATETIME):
 *   bulk  CAPTURE_BULK_ROWS (300,000) rows inserted by one statement, one transaction;
 *   oltp  CAPTURE_OLTP_TXNS (20,000) single-row transactions.
 * BENCH_RUNS (3) sets the repetitions; each sluice run is a fresh source starting at the workload.
 * Every run's row count is checked.
 */

import type { BinlogPosition } from '../lib/core/position.ts';
import { adminConnection, sourceServer } from '../lib/local/stack.ts';
import { benchStack, describeProfile, dropOutput, machine, measure, median, ok, PROFILED, profileOf, RUNS, SLUICE, table, total } from './support.ts';

const BULK_ROWS = Number(process.env.CAPTURE_BULK_ROWS ?? 300_000);
const OLTP_TXNS = Number(process.env.CAPTURE_OLTP_TXNS ?? 20_000);

const { stack, config, clients } = await benchStack();
await using _stack = stack;
const conn = await adminConnection(stack);
const position = async (): Promise<BinlogPosition> => {
  const [[row]] = (await conn.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number }]];
  return { file: row.File, pos: Number(row.Position) };
};
const columns = 'id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME NOT NULL';
await conn.query(`DROP DATABASE IF EXISTS bench_capture; CREATE DATABASE bench_capture;
  CREATE TABLE bench_capture.bulk (${columns}); CREATE TABLE bench_capture.oltp (${columns});
  CREATE PROCEDURE bench_capture.oltp(n INT) BEGIN
    DECLARE i INT DEFAULT 0;
    WHILE i < n DO
      INSERT INTO bench_capture.oltp VALUES (i, CONCAT('customer-', i), i / 7, i % 1000, NOW() - INTERVAL i SECOND);
      SET i = i + 1;
    END WHILE;
  END`);

const workloads = [
  {
    name: `bulk: ${BULK_ROWS.toLocaleString('en-US')} rows, 1 transaction`,
    rows: BULK_ROWS,
    write: () =>
      conn.query(
        `INSERT INTO bench_capture.bulk SELECT seq, CONCAT('customer-', seq), seq / 7, seq % 1000, NOW() - INTERVAL seq SECOND FROM bench_capture.seq_1_to_${BULK_ROWS}`,
      ),
  },
  {
    // Autocommit inside the procedure: each INSERT is its own transaction (own GTID and XID).
    name: `oltp: ${OLTP_TXNS.toLocaleString('en-US')} single-row transactions`,
    rows: OLTP_TXNS,
    write: () => conn.query(`CALL bench_capture.oltp(${OLTP_TXNS})`),
  },
];

/** One `sluice capture --once` as a fresh source from `start`; checks that it captured every row. */
const capture = async (start: BinlogPosition, expected: number, env: Record<string, string> = {}) => {
  const sourceId = `bench-capture-${Date.now()}`;
  const s = ok(
    await measure(process.execPath, [...SLUICE, 'capture', '--once'], {
      env: {
        SLUICE_SOURCE_ID: sourceId,
        SLUICE_PREFIX: `bench/${sourceId}`,
        SLUICE_INCLUDE: 'bench_capture\\..*',
        SLUICE_STARTUP: `position:${start.file}:${start.pos}`,
        ...env,
      },
    }),
    'sluice capture --once',
  );
  const captured = Number(/captured (\d+) events/.exec(s.stdout)?.[1]);
  if (captured !== expected) throw new Error(`sluice captured ${captured} events, expected ${expected}:\n${s.stdout}`);
  await dropOutput(clients, config.bucket, `bench/${sourceId}/`);
  return s;
};

const rows: (string | number)[][] = [];
const details: string[] = [];
for (const workload of workloads) {
  const start = await position();
  await workload.write();
  const end = await position();
  console.error(`${workload.name}: binlog ${start.file}:${start.pos} → ${end.file}:${end.pos}`);
  const profiled = await capture(start, workload.rows, { SLUICE_PROFILE: '1' });
  const profile = profileOf(profiled);
  const zongji = [];
  const sluice = [];
  for (let run = 0; run < RUNS; run++) {
    const z = ok(
      await measure(process.execPath, ['bench/bare-zongji.js', sourceServer(stack).url, start.file, String(start.pos), end.file, String(end.pos)]),
      'bare zongji',
    );
    if (Number(z.stdout.trim()) !== workload.rows) throw new Error(`bare zongji decoded ${z.stdout.trim()} rows, expected ${workload.rows}`);
    zongji.push(z);
    sluice.push(await capture(start, workload.rows));
  }
  const z = median(zongji);
  const s = median(sluice);
  rows.push([
    workload.name,
    z.seconds.toFixed(2),
    s.seconds.toFixed(2),
    (z.seconds / s.seconds).toFixed(2),
    z.peakRssMb.toFixed(0),
    s.peakRssMb.toFixed(0),
    `${total(profile.requests.s3)} / ${total(profile.requests.dynamodb)}`,
  ]);
  details.push(
    `${workload.name} — sluice ${PROFILED}, ${profiled.seconds.toFixed(2)} s (timed median ${s.seconds.toFixed(2)} s):`,
    ...describeProfile(profile),
  );
}
await conn.end();

console.log(`\n${machine()}\n`);
console.log(
  table(
    [
      'workload',
      'bare zongji s',
      'sluice capture --once s',
      'ratio (≥ 0.6)',
      'zongji RSS MB',
      'sluice RSS MB (≤ 192)',
      'S3 / DynamoDB requests (profiled run)',
    ],
    rows,
  ),
);
console.log(`\n${details.join('\n')}`);
