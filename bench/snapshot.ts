/**
 * npm run bench:snapshot — what a user waits for: `sluice snapshot --workers 1` as a whole process
 * (node start to exit: plan, page, encode, gzip, S3, commits) beside two processes reading the same
 * table, in the same run, interleaved: the C client, `mariadb --quick -e 'SELECT * …' > /dev/null`,
 * and a floor (bench/floor-snapshot.js: mysql2 framing the rows unparsed, sluice's own lines of the
 * table copied out one per row and gzipped, nothing else). Prints wall times, the
 * ratio mariadb/sluice (target ≥ 0.5 per worker), mariadb/floor on the same scale (what no
 * snapshot writing these lines through mysql2 can pass on this machine), peak RSS of mariadb and
 * sluice (target ≤ 192 MB and flat as the table grows), and where the sluice process spent its time.
 *
 * The timed sluice runs run without SLUICE_PROFILE (its accounting costs some 6% that users do not
 * pay). One more sluice run per table, before the timed ones and not timed, runs with
 * SLUICE_PROFILE=1: its report gives the split and the request counts, its output the lines the
 * floor copies, and it writes the CLI's code cache as a user's first run does (bin/sluice.js).
 *
 * Tables (BIGINT key, VARCHAR, DECIMAL, INT, DATETIME, as bench:capture) of SNAPSHOT_ROWS rows
 * (250000,1000000), created once and kept in .sluice/bench. BENCH_RUNS (3) sets the repetitions;
 * each sluice run is a fresh source. Every run's row count is checked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { adminConnection, sourceServer } from '../lib/local/stack.ts';
import { listKeys } from '../lib/sink/s3/objects.ts';
import { benchStack, describeProfile, dropOutput, machine, measure, median, ok, PROFILED, profileOf, RUNS, SLUICE, table, total } from './support.ts';

const SIZES = (process.env.SNAPSHOT_ROWS ?? '250000,1000000').split(',').map(Number);

const { stack, config, clients } = await benchStack();
await using _stack = stack;
const conn = await adminConnection(stack);
await conn.query('CREATE DATABASE IF NOT EXISTS bench_snapshot');
for (const size of SIZES) {
  const [[existing]] = (await conn.query(`SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench_snapshot' AND TABLE_NAME = ?`, [
    `t${size}`,
  ])) as unknown as [[{ n: number }]];
  if (Number(existing.n) > 0) continue;
  console.error(`creating bench_snapshot.t${size}…`);
  await conn.query(`CREATE TABLE bench_snapshot.t${size} (
    id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME NOT NULL)`);
  for (let from = 1; from <= size; from += 100_000) {
    await conn.query(`INSERT INTO bench_snapshot.t${size} SELECT seq, CONCAT('customer-', seq), seq / 7, seq % 1000, NOW() - INTERVAL seq SECOND
      FROM bench_snapshot.seq_${from}_to_${Math.min(from + 99_999, size)}`);
  }
  await conn.query(`ANALYZE TABLE bench_snapshot.t${size}`);
}
await conn.end();

const admin = new URL(sourceServer(stack).adminUrl);
const mariadbArgs = (name: string) => [
  '--quick',
  '-h127.0.0.1',
  `-P${admin.port}`,
  `-u${decodeURIComponent(admin.username)}`,
  `-p${decodeURIComponent(admin.password)}`,
  '-e',
  `SELECT * FROM ${name}`,
];

/** The lines of the first data object under `prefix`, kept in a file for the floor; and their mean size. */
const sampleLines = async (prefix: string) => {
  for await (const key of listKeys(clients.s3, config.bucket, prefix)) {
    const object = await clients.s3.send(new GetObjectCommand({ Bucket: config.bucket, Key: key }));
    const text = gunzipSync(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
    const file = join(mkdtempSync(join(tmpdir(), 'sluice-floor-')), 'lines.jsonl');
    writeFileSync(file, text);
    return { file, lineBytes: Math.round(text.length / text.toString('latin1').split('\n').filter(Boolean).length) };
  }
  throw new Error(`no data object under ${prefix}`);
};

/** One `sluice snapshot --workers 1` of the table as a fresh source; checks that it copied every row. */
const snapshot = async (name: string, size: number, env: Record<string, string> = {}, sample = false) => {
  const sourceId = `bench-snapshot-${Date.now()}`;
  const s = ok(
    await measure(process.execPath, [...SLUICE, 'snapshot', '--workers', '1', '--tables', name], {
      env: { SLUICE_SOURCE_ID: sourceId, SLUICE_PREFIX: `bench/${sourceId}`, ...env },
    }),
    'sluice snapshot',
  );
  const copied = Number(/: (\d+) rows in \d+ pages this run; complete/.exec(s.stdout)?.[1]);
  if (copied !== size) throw new Error(`sluice snapshot copied ${copied} rows, expected ${size}:\n${s.stdout}`);
  const lines = sample ? await sampleLines(`bench/${sourceId}/tables/`) : undefined;
  await dropOutput(clients, config.bucket, `bench/${sourceId}/`);
  return { ...s, lines };
};

const rows: (string | number)[][] = [];
const details: string[] = [];
for (const size of SIZES) {
  const name = `bench_snapshot.t${size}`;
  await measure('mariadb', mariadbArgs(name), { stdout: 'discard' }); // warm the buffer pool for all readers alike
  const profiled = await snapshot(name, size, { SLUICE_PROFILE: '1' }, true);
  const lines = profiled.lines as NonNullable<typeof profiled.lines>;
  const profile = profileOf(profiled);
  const quick = [];
  const floor = [];
  const sluice = [];
  for (let run = 0; run < RUNS; run++) {
    quick.push(ok(await measure('mariadb', mariadbArgs(name), { stdout: 'discard' }), 'mariadb --quick'));
    const f = ok(await measure(process.execPath, ['bench/floor-snapshot.js', sourceServer(stack).adminUrl, name, lines.file]), 'floor');
    if (Number(f.stdout.trim()) !== size) throw new Error(`the floor read ${f.stdout.trim()} rows, expected ${size}`);
    floor.push(f);
    sluice.push(await snapshot(name, size));
  }
  rmSync(dirname(lines.file), { recursive: true, force: true });
  const q = median(quick);
  const f = median(floor);
  const s = median(sluice);
  rows.push([
    `${size.toLocaleString('en-US')} rows`,
    q.seconds.toFixed(2),
    f.seconds.toFixed(2),
    (q.seconds / f.seconds).toFixed(2),
    s.seconds.toFixed(2),
    (q.seconds / s.seconds).toFixed(2),
    q.peakRssMb.toFixed(0),
    s.peakRssMb.toFixed(0),
    `${total(profile.requests.s3)} / ${total(profile.requests.dynamodb)}`,
  ]);
  details.push(
    `${name} — lines of ${lines.lineBytes} bytes; sluice ${PROFILED}, ${profiled.seconds.toFixed(2)} s (timed median ${s.seconds.toFixed(2)} s); reading and encoding rows count as js:`,
    ...describeProfile(profile),
  );
}

console.log(`\n${machine()}; page ${config.snapshot.pageRows.toLocaleString('en-US')} rows\n`);
console.log(
  table(
    [
      'table',
      'mariadb --quick s',
      'floor s',
      'mariadb/floor',
      'sluice snapshot --workers 1 s',
      'ratio (≥ 0.5)',
      'mariadb RSS MB',
      'sluice RSS MB (≤ 192)',
      'S3 / DynamoDB requests (profiled run)',
    ],
    rows,
  ),
);
console.log(
  `\nmariadb/floor is on the ratio's scale: bench/floor-snapshot.js does only what every snapshot writing these lines through mysql2 must (frame the rows, copy a line per row, gzip), so sluice's ratio stays below it.`,
);
console.log(`\n${details.join('\n')}`);
