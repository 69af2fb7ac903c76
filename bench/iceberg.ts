/**
 * npm run bench:iceberg — what one Iceberg merge costs when 1% of a table changed, for both delete
 * modes (SLUICE_ICEBERG_DELETES=position|equality): wall time, bytes read and written, data files
 * touched, S3 requests (GET / PUT / LIST, counted by an instrumented object store).
 *
 * It stages through the Iceberg layer directly (lib/iceberg/table/table.ts), against the local S3
 * emulator: the base table by `stageReplace` (key ranges of 500,000 rows, as a first merge or a
 * compaction leaves it), the 1% by `stageChanges` (80% updated, 10% deleted, 10% as many inserted),
 * each mode's merge staged on the same base. No MariaDB, no change log: the capture and the
 * change-log reading a real merge adds are measured by bench:capture and bench:snapshot.
 *
 * Tables: ICEBERG_ROWS (default 1000000) rows; ICEBERG_10M=1 adds a 10,000,000-row table (several
 * minutes here). Keys: sequential (BIGINT 1..N) and random (UUID-like text). ICEBERG_CHANGED (0.01).
 *
 * Then first loads through the merge itself (bench/iceberg-load.ts): rows/s at each size, and at the
 * largest the wall time split across 1, 2 and 4 workers (ICEBERG_LOADS=0 skips them); ICEBERG_SPARK=1
 * then reads the table the 4-worker load committed with Spark and compares it with MariaDB.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Column } from '../lib/format/types.ts';
import { type DeleteMode, type Staged, stageChanges, stageReplace, type TableSpec, type TableVersion } from '../lib/iceberg/table/table.ts';
import { type ObjectStore, s3ObjectStore } from '../lib/sink/s3/object-store.ts';
import { firstLoads } from './iceberg-load.ts';
import { benchStack, machine, table } from './support.ts';

const SIZES = [Number(process.env.ICEBERG_ROWS ?? 1_000_000), ...(process.env.ICEBERG_10M === '1' ? [10_000_000] : [])];
const CHANGED = Number(process.env.ICEBERG_CHANGED ?? 0.01);
const MODES: DeleteMode[] = ['position', 'equality'];

const bench = await benchStack();
const { stack, config, clients } = bench;
const base = s3ObjectStore(clients.s3, config.bucket);
const work = mkdtempSync(join(tmpdir(), 'bench-iceberg-'));

interface Counts {
  get: number;
  put: number;
  list: number;
  bytesRead: number;
  bytesWritten: number;
  dataRead: Set<string>;
}

/** The store with its requests counted (a multipart upload counts as one PUT here). */
function counted(inner: ObjectStore): { store: ObjectStore; counts: Counts } {
  const counts: Counts = { get: 0, put: 0, list: 0, bytesRead: 0, bytesWritten: 0, dataRead: new Set() };
  const read = (key: string, bytes: number) => {
    counts.get++;
    counts.bytesRead += bytes;
    if (key.includes('/data/')) counts.dataRead.add(key);
  };
  const store: ObjectStore = {
    ...inner,
    async get(key) {
      const body = await inner.get(key);
      read(key, body?.length ?? 0);
      return body;
    },
    async getFile(key, path) {
      await inner.getFile(key, path);
      const { statSync } = await import('node:fs');
      read(key, statSync(path).size);
    },
    async getRange(key, start, end) {
      const body = await inner.getRange(key, start, end);
      read(key, body.length);
      return body;
    },
    async put(key, body) {
      counts.put++;
      counts.bytesWritten += typeof body === 'string' ? Buffer.byteLength(body) : body.length;
      await inner.put(key, body);
    },
    async putFile(key, path) {
      counts.put++;
      const { statSync } = await import('node:fs');
      counts.bytesWritten += statSync(path).size;
      await inner.putFile(key, path);
    },
    async *list(prefix) {
      counts.list++;
      yield* inner.list(prefix);
    },
  };
  return { store, counts };
}

const uuid = (i: number) => {
  const h = createHash('sha1').update(String(i)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};
const keys = {
  sequential: { column: { name: 'id', kind: 'int', sqlType: 'bigint' } as Column, key: (i: number) => i },
  random: { column: { name: 'id', kind: 'string', sqlType: 'char(36)' } as Column, key: (i: number) => uuid(i) },
};
const rest: Column[] = [
  { name: 'name', kind: 'string', sqlType: 'varchar(64)' },
  { name: 'amount', kind: 'decimal', sqlType: 'decimal(12,2)' },
  { name: 'qty', kind: 'int', sqlType: 'int' },
  { name: 'created', kind: 'datetime', sqlType: 'datetime', fsp: 0 },
];
const row = (id: number | string, i: number, version: number) =>
  JSON.stringify({
    id,
    name: `customer-${i}`,
    amount: ((i + version) / 7).toFixed(2),
    qty: (i + version) % 1000,
    created: new Date(Date.UTC(2026, 0, 1) - i * 1000).toISOString().slice(0, 19).replace('T', ' '),
  });

const mb = (bytes: number) => (bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(0)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
const rows: (string | number)[][] = [];
const started = Date.now();

for (const size of SIZES) {
  for (const [kind, k] of Object.entries(keys)) {
    const location = `bench/iceberg-${Date.now()}/iceberg/bench/t${size}_${kind}`;
    const spec: TableSpec = { location, columns: [k.column, ...rest], key: ['id'] };
    console.error(`${size} rows, ${kind} keys: staging the base table…`);
    const loadBegan = process.hrtime.bigint();
    async function* all() {
      for (let i = 1; i <= size; i++) yield row(k.key(i), i, 0);
    }
    const loaded = await stageReplace({ store: base, workDir: work }, undefined, spec, all(), { tag: 'base', timestampMs: Date.now() });
    const current: TableVersion = loaded.version;
    const loadSeconds = Number(process.hrtime.bigint() - loadBegan) / 1e9;
    rows.push([size, kind, 'base (stageReplace)', loadSeconds.toFixed(1), '-', '-', `${loaded.stats.dataFiles} written`, '-', '-', '-']);
    const changed = Math.round(size * CHANGED);
    const step = Math.max(1, Math.floor(size / changed));
    const upserts: string[] = [];
    const deletes: string[] = [];
    for (let i = step; i <= size; i += step) {
      if (i % (step * 10) === step) deletes.push(JSON.stringify({ id: k.key(i) }));
      else upserts.push(row(k.key(i), i, 1));
    }
    for (let i = 1; i <= Math.round(changed / 10); i++) upserts.push(row(k.key(size + i), size + i, 1));
    for (const mode of MODES) {
      const { store, counts } = counted(base);
      const began = process.hrtime.bigint();
      const staged: Staged = await stageChanges(
        { store, workDir: work },
        current,
        spec,
        { upserts, deletes },
        { tag: `c-${mode}`, timestampMs: Date.now(), deletes: mode },
      );
      const seconds = Number(process.hrtime.bigint() - began) / 1e9;
      const summary: Readonly<Record<string, string>> = staged.version.metadata.snapshots.at(-1)?.summary ?? {};
      rows.push([
        size,
        kind,
        `1% merge, ${mode}`,
        seconds.toFixed(2),
        mb(counts.bytesRead),
        mb(counts.bytesWritten),
        `${counts.dataRead.size} read, ${staged.stats.dataFiles + staged.stats.deleteFiles} written`,
        counts.get,
        counts.put,
        counts.list,
      ]);
      console.error(
        `  ${mode}: ${seconds.toFixed(2)} s, ${upserts.length} upserts, ${deletes.length} deletes, ${summary['added-position-deletes'] ?? 0} position / ${summary['added-equality-deletes'] ?? 0} equality deletes`,
      );
    }
  }
}
rmSync(work, { recursive: true, force: true });
const { figures: loads, spark } =
  process.env.ICEBERG_LOADS === '0' ? { figures: [] } : await firstLoads(bench, SIZES, [1, 2, 4], process.env.ICEBERG_SPARK === '1');

console.log(`\nbench:iceberg on ${machine().replace(/, median of \d+ runs$/, ', one run each')}`);
console.log(
  `Staged through the Iceberg layer directly (stageReplace for the base, stageChanges for the ${(CHANGED * 100).toFixed(1)}%: 80% updated, 10% deleted, 10% as many inserted), S3 emulator; no capture, no change log. Total ${((Date.now() - started) / 1000).toFixed(0)} s.\n`,
);
console.log(table(['rows', 'keys', 'step', 'wall s', 'read', 'written', 'data files', 'GET', 'PUT', 'LIST'], rows));
if (loads.length) {
  console.log(
    `\nFirst loads through the merge (snapshot pages and 1,000 updates in the change log → runIcebergMerge), workers in process on ${machine().replace(/, median of \d+ runs$/, '')}:\n`,
  );
  console.log(
    table(
      ['rows', 'load', 'wall s', 'rows/s'],
      loads.map((l) => [l.rows, l.how, l.seconds.toFixed(1), Math.round(l.rows / l.seconds)]),
    ),
  );
}
if (spark) {
  console.log(
    `\nThe largest split load read by ${spark.spark.version} (${spark.spark.files} data and delete files, ${spark.seconds.toFixed(0)} s with its start): ${spark.rows} rows, ${spark.equal ? 'equal to MariaDB' : 'NOT equal to MariaDB'} (count, distinct keys, column sums, CRC32 digest of every row)`,
  );
  console.log(
    table(
      ['', ...Object.keys(spark.mariadb)],
      [
        ['MariaDB', ...Object.values(spark.mariadb)],
        ['Spark', ...Object.keys(spark.mariadb).map((k) => spark.spark[k] ?? '')],
      ],
    ),
  );
  if (!spark.equal) process.exitCode = 1;
}
await stack[Symbol.asyncDispose]();
process.exit(process.exitCode ?? 0);
