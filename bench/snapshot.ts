/**
 * npm run bench:snapshot — what a user waits for: `sluice snapshot --workers 1` as a whole process
 * (node start to exit: plan, page, encode, gzip, S3, commits) beside two readers of the same table,
 * in the same run, interleaved: the C client, `mariadb --quick -e 'SELECT * …' > /dev/null`, and a
 * bare mysql2 process (bench/bare-mysql2.js: the binary protocol, rows streamed and counted,
 * nothing encoded or written). Prints wall times, the ratio mariadb/sluice (target ≥ 0.5 per
 * worker), mysql2/mariadb (mariadb s ÷ mysql2 s, on the ratio's scale: how near the client library
 * sluice must use comes to the C client with none of sluice's work — the ceiling it puts on the
 * ratio, loosely: sluice's wire path takes most rows' bytes without mysql2's row parser, which the
 * bare process runs), peak RSS of mariadb and sluice (target ≤ 192 MB and flat as the table
 * grows), and where the sluice process spent its time.
 *
 * The timed sluice runs run without SLUICE_PROFILE (its accounting costs some 6% that users do not
 * pay). One more sluice run per table, after the timed ones and not timed, runs with
 * SLUICE_PROFILE=1: its report gives the split and the request counts.
 *
 * Tables (BIGINT key, VARCHAR, DECIMAL, INT, DATETIME, as bench:capture) of SNAPSHOT_ROWS rows
 * (250000,1000000), created once and kept in .sluice/bench. BENCH_RUNS (3) sets the repetitions;
 * each sluice run is a fresh source. Every run's row count is checked.
 */
import { adminConnection } from '../lib/local/stack.ts';
import { benchStack, describeProfile, dropOutput, machine, measure, median, ok, PROFILED, profileOf, RUNS, SLUICE, table, total } from './support.ts';

const SIZES = (process.env.SNAPSHOT_ROWS ?? '250000,1000000').split(',').map(Number);

const { stack, config, clients } = await benchStack();
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

const admin = new URL(stack.mariadb.adminUrl);
const mariadbArgs = (name: string) => [
  '--quick',
  '-h127.0.0.1',
  `-P${admin.port}`,
  `-u${decodeURIComponent(admin.username)}`,
  `-p${decodeURIComponent(admin.password)}`,
  '-e',
  `SELECT * FROM ${name}`,
];

/** One `sluice snapshot --workers 1` of the table as a fresh source; checks that it copied every row. */
const snapshot = async (name: string, size: number, env: Record<string, string> = {}) => {
  const sourceId = `bench-snapshot-${Date.now()}`;
  const s = ok(
    await measure(process.execPath, [...SLUICE, 'snapshot', '--workers', '1', '--tables', name], {
      env: { SLUICE_SOURCE_ID: sourceId, SLUICE_PREFIX: `bench/${sourceId}`, ...env },
    }),
    'sluice snapshot',
  );
  const copied = Number(/: (\d+) rows in \d+ pages this run; complete/.exec(s.stdout)?.[1]);
  if (copied !== size) throw new Error(`sluice snapshot copied ${copied} rows, expected ${size}:\n${s.stdout}`);
  await dropOutput(clients, config.bucket, `bench/${sourceId}/`);
  return s;
};

const rows: (string | number)[][] = [];
const details: string[] = [];
for (const size of SIZES) {
  const name = `bench_snapshot.t${size}`;
  await measure('mariadb', mariadbArgs(name), { stdout: 'discard' }); // warm the buffer pool for all readers alike
  const quick = [];
  const bare = [];
  const sluice = [];
  for (let run = 0; run < RUNS; run++) {
    quick.push(ok(await measure('mariadb', mariadbArgs(name), { stdout: 'discard' }), 'mariadb --quick'));
    const m = ok(await measure(process.execPath, ['bench/bare-mysql2.js', stack.mariadb.adminUrl, name]), 'bare mysql2');
    if (Number(m.stdout.trim()) !== size) throw new Error(`bare mysql2 read ${m.stdout.trim()} rows, expected ${size}`);
    bare.push(m);
    sluice.push(await snapshot(name, size));
  }
  const profiled = await snapshot(name, size, { SLUICE_PROFILE: '1' });
  const profile = profileOf(profiled);
  const q = median(quick);
  const m = median(bare);
  const s = median(sluice);
  rows.push([
    `${size.toLocaleString('en-US')} rows`,
    q.seconds.toFixed(2),
    m.seconds.toFixed(2),
    (q.seconds / m.seconds).toFixed(2),
    s.seconds.toFixed(2),
    (q.seconds / s.seconds).toFixed(2),
    q.peakRssMb.toFixed(0),
    s.peakRssMb.toFixed(0),
    `${total(profile.requests.s3)} / ${total(profile.requests.dynamodb)}`,
  ]);
  details.push(
    `${name} — sluice ${PROFILED}, ${profiled.seconds.toFixed(2)} s (timed median ${s.seconds.toFixed(2)} s); reading and encoding rows count as js:`,
    ...describeProfile(profile),
  );
}

console.log(`\n${machine()}; page ${config.snapshot.pageRows.toLocaleString('en-US')} rows\n`);
console.log(
  table(
    [
      'table',
      'mariadb --quick s',
      'mysql2 alone s',
      'mysql2/mariadb',
      'sluice snapshot --workers 1 s',
      'ratio (≥ 0.5)',
      'mariadb RSS MB',
      'sluice RSS MB (≤ 192)',
      'S3 / DynamoDB requests (profiled run)',
    ],
    rows,
  ),
);
console.log(`\nmysql2/mariadb is mariadb s ÷ mysql2 alone s, on the ratio's scale: mysql2 reading and parsing the rows (binary protocol), doing nothing else.`);
console.log(`\n${details.join('\n')}`);
