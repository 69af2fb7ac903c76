import { createClients, type Env, initResources } from '../aws.ts';
import { runCapture } from '../capture/run.ts';
import { loadConfig } from '../config/config.ts';
import { formatPosition } from '../core/position.ts';
import { runIcebergMerge } from '../iceberg/merge/merge.ts';
import { loadVersion } from '../iceberg/table/table.ts';
import { adminConnection, type LocalServer, env as stackEnv, stackHome, up } from '../local/stack.ts';
import { silentLog } from '../log.ts';
import { eventLines } from '../materialize/change-log.ts';
import { sourceStatus } from '../ops/status.ts';
import { s3ObjectStore } from '../sink/s3/object-store.ts';
import { runSnapshotWorker } from '../snapshot/worker.ts';

/** `count` rows of a VALUES list, numbered from 1 (MariaDB's seq_1_to_N tables do not exist on MySQL). */
const rows = (count: number, row: (n: number) => string) => Array.from({ length: count }, (_, i) => `(${row(i + 1)})`).join(',');

const SCHEMA = `
DROP DATABASE IF EXISTS shop; CREATE DATABASE shop; USE shop;
CREATE TABLE customers (id BIGINT UNSIGNED PRIMARY KEY, email VARCHAR(120) NOT NULL, created_at DATETIME(6) NOT NULL);
CREATE TABLE orders (
  id BIGINT UNSIGNED PRIMARY KEY, customer_id BIGINT UNSIGNED NOT NULL, total DECIMAL(12,2) NOT NULL,
  status ENUM('new','paid','shipped','cancelled') NOT NULL, placed_at TIMESTAMP(3) NOT NULL, meta JSON);
INSERT INTO customers VALUES ${rows(500, (n) => `${n}, 'early${n}@example.com', NOW(6)`)};
INSERT INTO orders VALUES ${rows(2000, (n) => `${n}, ${1 + (n % 500)}, ${n % 900}.99, 'shipped', NOW(3), NULL`)};`;

/** One burst of business: new customers, orders in multi-table transactions, status changes, cancellations. */
async function writeBurst(conn: Awaited<ReturnType<typeof adminConnection>>, round: number): Promise<number> {
  let changes = 0;
  const base = round * 1000;
  for (let t = 0; t < 20; t++) {
    const customer = base + t;
    const orders = Array.from(
      { length: 5 },
      (_, i) => `(${customer * 10 + i}, ${customer}, ${(Math.random() * 500).toFixed(2)}, 'new', NOW(3), '{"channel":"web","items":${i + 1}}')`,
    );
    await conn.query(
      `BEGIN; INSERT INTO customers VALUES (${customer}, 'c${customer}@example.com', NOW(6)); INSERT INTO orders VALUES ${orders.join(',')}; COMMIT;`,
    );
    changes += 6;
  }
  const [paid] = (await conn.query(`UPDATE orders SET status = 'paid' WHERE customer_id BETWEEN ${base} AND ${base + 9}`)) as unknown as [
    { affectedRows: number },
  ];
  const [cancelled] = (await conn.query(`DELETE FROM orders WHERE customer_id = ${base + 19}`)) as unknown as [{ affectedRows: number }];
  // A primary-key change: lands as a delete of the old key and a create of the new one.
  await conn.query(`UPDATE customers SET id = id + 500 WHERE id = ${base + 18}`);
  return changes + paid.affectedRows + cancelled.affectedRows + 2;
}

/**
 * `npm start`: the local stack, a stream of changes, captures as the schedule would run them, and
 * what landed. Returns whether S3 matched MySQL.
 */
export async function runDemo(rounds: number, io: { env: Env; server: LocalServer; say: (line: string) => void }): Promise<boolean> {
  const { say, server } = io;
  say(`sluice demo: starting the embedded local stack (${server === 'mysql' ? 'MySQL 8.0' : 'MariaDB'}, DynamoDB Local, S3 emulator)…`);
  const stack = await up({ home: stackHome(io.env, server), server, log: (line) => say(`  ${line}`) });
  const sourceId = `demo-${Date.now()}`;
  const env = { ...io.env, ...stackEnv(stack), SLUICE_SOURCE_ID: sourceId, SLUICE_INCLUDE: 'shop\\..*', SLUICE_PREFIX: 'demo' };
  const config = loadConfig(env);
  const clients = createClients(config, env);
  await initResources(config, clients);
  const conn = await adminConnection(stack);
  await conn.query(SCHEMA);
  const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: silentLog };
  // First run (startup "initial"): records where the stream starts and requests a snapshot of the 2,500 existing rows.
  const first = await runCapture(deps, { budgetMs: 60_000, stopWhenCaughtUp: true });
  say(`source ${sourceId}: capturing shop.* into s3://${config.bucket}/${config.prefix}`);
  let written = 0;
  const snapshotting = runSnapshotWorker(deps, { budgetMs: 60_000, snapshotId: first.snapshotRequested });
  const duringSnapshot = await writeBurst(conn, 1); // changes land while the snapshot copies the tables
  written += duringSnapshot;
  const snapshot = await snapshotting;
  say(`snapshot ${snapshot.snapshot}: copied ${snapshot.rows} existing rows in ${snapshot.pages} pages while the app kept writing\n`);

  for (let round = 1; round <= rounds; round++) {
    const changes = round === 1 ? duringSnapshot : await writeBurst(conn, round);
    if (round > 1) written += changes;
    const started = Date.now();
    const result = await runCapture(deps, { budgetMs: 60_000, stopWhenCaughtUp: true });
    say(
      `tick ${round}: wrote ${changes} row changes → captured ${result.events} events in ${result.transactions} transactions, ${result.commits} commit(s), ${Date.now() - started} ms`,
    );
  }

  // What landed: replay the feed by the format's rule (greatest seq per key wins; d = absent).
  const latest = new Map<string, { seq: string; op: string }>();
  const perTable = new Map<string, number>();
  let sample = '';
  for await (const { line } of eventLines(clients.s3, config.bucket, config.prefix, sourceId)) {
    const event = JSON.parse(line) as { op: string; table: string; key: unknown; seq: string };
    // Snapshot rows and binlog events merge by one rule: per key, the greatest seq wins.
    perTable.set(event.table, (perTable.get(event.table) ?? 0) + 1);
    const id = `${event.table}:${JSON.stringify(event.key)}`;
    if ((latest.get(id)?.seq ?? '') < event.seq) latest.set(id, { seq: event.seq, op: event.op });
    if (event.table === 'orders' && event.op === 'u') sample = line;
  }
  say('\nwhat landed in S3:');
  let consistent = true;
  for (const table of ['customers', 'orders']) {
    const [[{ n }]] = (await conn.query(`SELECT COUNT(*) AS n FROM shop.${table}`)) as unknown as [[{ n: number }]];
    const live = [...latest].filter(([id, e]) => id.startsWith(`${table}:`) && e.op !== 'd').length;
    consistent &&= live === Number(n);
    say(`  shop.${table.padEnd(10)} ${String(perTable.get(table) ?? 0).padStart(5)} change events → ${live} live rows (MySQL has ${n})`);
  }
  // The same tables as Iceberg: one merge of the change log (lib/iceberg/merge/merge.ts), read back from its metadata.
  const merged = await runIcebergMerge({ ...deps, merges: clients.merges });
  const store = s3ObjectStore(clients.s3, config.bucket);
  say('\nas Iceberg tables (`sluice iceberg`):');
  for (const t of merged.tables) {
    if (!t.metadataKey) {
      consistent = false;
      say(`  ${t.table.db}.${t.table.table}: ${t.status}${t.reason ? ` (${t.reason})` : ''}`);
      continue;
    }
    const snapshot = (await loadVersion(store, t.metadataKey)).metadata.snapshots.at(-1)?.summary;
    const [[{ n }]] = (await conn.query(`SELECT COUNT(*) AS n FROM shop.\`${t.table.table}\``)) as unknown as [[{ n: number }]];
    // A first merge writes the table whole (no delete files): its snapshot's record count is its row count.
    const rows = snapshot?.['total-delete-files'] === '0' ? Number(snapshot['total-records']) : undefined;
    if (rows !== undefined) consistent &&= rows === Number(n);
    say(`  ${store.uri(t.metadataKey.replace(/\/metadata\/.*$/, ''))}: ${rows ?? '?'} rows (MySQL has ${n}), ${snapshot?.['total-data-files']} data file(s)`);
  }
  const status = await sourceStatus(config, clients.store);
  say(
    `  2500 rows snapshotted, ${written} row changes written; ${[...perTable.values()].reduce((a, b) => a + b, 0)} events in all (a key change counts twice)`,
  );
  say(`  position ${status.stored ? formatPosition(status.stored) : '-'}, lag ${status.lagBytes ?? '?'} bytes, ${status.commitSeq} commits`);
  say(`\na change event (gzip JSON Lines, one per line):\n${JSON.stringify(JSON.parse(sample), null, 2)}`);
  say(
    consistent
      ? `\nS3 matches MySQL. Stop the stack with: npx sluice local down${server === 'mysql' ? ' --server mysql' : ''}`
      : '\nMISMATCH between S3 and MySQL — please report this.',
  );
  await conn.end();
  clients.s3.destroy();
  clients.dynamo.destroy();
  return consistent;
}
