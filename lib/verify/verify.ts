import { copyFileSync, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { type Config, tableFilter } from '../config/config.ts';
import { type BinlogPosition, comparePositions } from '../core/position.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { encodeKey, encodeRow, encodeShape } from '../format/event.ts';
import { seqAfter } from '../format/seq.ts';
import { BinlogReader } from '../source/mysql/binlog-reader.ts';
import { listTables, tableInfo } from '../source/mysql/schema.ts';
import { pagingConnection } from '../source/mysql/snapshot-reader.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SnapshotStore } from '../state/snapshot-store.ts';
import type { StateStore } from '../state/store.ts';
import { manifests } from './feed.ts';

/*
 * `sluice verify`: does S3 hold exactly what MySQL holds?
 *
 * Method, safe on a live source. MySQL is read inside one consistent-snapshot transaction whose
 * binlog position S the server reports (MariaDB: binlog_snapshot_file/position). The output is
 * materialized by the format's rule (greatest seq per key; `d` = absent). A key is compared only
 * if both sides reflect the same point in its history:
 *   - keys with output events after S are skipped (the output is ahead of the MySQL read);
 *   - keys changed between the output's stored position O and S are skipped (the output has not
 *     caught up with them yet): found by scanning the binlog from O to S.
 * Every other key's last change is before min(O, S) on both sides, so they must agree exactly.
 * Values are compared as JSON normalized by DuckDB on both sides, so encoding is compared exactly.
 * Columns an output row does not have (added by a later ALTER TABLE, never written since) are not
 * compared. Both sides are spilled to disk in DuckDB, so tables larger than memory work.
 */

export interface TableVerdict {
  table: string;
  mysqlRows: number;
  outputRows: number;
  compared: number;
  skipped: number;
  missing: number;
  extra: number;
  differing: number;
  examples: { missing: string[]; extra: string[]; differing: { key: string; columns: string[]; mysql: string; output: string }[] };
}

export interface Verdict {
  ok: boolean;
  mysqlPosition: BinlogPosition;
  outputPosition?: BinlogPosition;
  tables: TableVerdict[];
}

async function download(s3: S3Client, bucket: string, key: string, file: string): Promise<void> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  await pipeline(object.Body as NodeJS.ReadableStream, createWriteStream(file));
}

const jsonLine = (fields: Record<string, string>) =>
  `{${Object.entries(fields)
    .map(([k, v]) => `"${k}":${v}`)
    .join(',')}}\n`;

/** Writes lines to a file with back-pressure. */
function lineFile(path: string) {
  const stream = createWriteStream(path);
  return {
    async write(line: string) {
      if (!stream.write(line)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
    },
    close: () => new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve()))),
  };
}

export async function verify(
  deps: { config: Config; s3: S3Client; store: StateStore; snapshots?: SnapshotStore },
  options: { tables?: string[]; examples?: number; workDir?: string } = {},
): Promise<Verdict> {
  const { config, s3 } = deps;
  const examples = options.examples ?? 5;
  const running = await deps.snapshots?.latestJob(config.sourceId);
  if (running && running.status !== 'done') {
    throw new SluiceError(
      ErrorCode.VERIFY_SNAPSHOT_RUNNING,
      `snapshot ${running.id} is still copying; verify once it completes (sluice status shows its progress), because its pages may see changes newer than the comparison point`,
    );
  }
  const work = options.workDir ?? mkdtempSync(join(tmpdir(), 'sluice-verify-'));
  const db = await DuckDBInstance.create(join(work, 'verify.duckdb'), { temp_directory: join(work, 'spill'), memory_limit: '512MB' });
  const duck = await db.connect();
  const target = await mysqlTarget(config);
  const reader = pagingConnection(target);
  try {
    await reader.init();
    // 1. The output: every committed object (binlog and snapshot), downloaded once.
    let files = 0;
    for await (const manifest of manifests(s3, config.bucket, config.prefix, config.sourceId)) {
      for (const object of manifest.objects) await download(s3, config.bucket, object.key, join(work, `out-${files++}.jsonl.gz`));
    }
    const outputPosition = (await deps.store.get(config.sourceId))?.position;
    await duck.run(
      files === 0
        ? 'CREATE TABLE events (op VARCHAR, db VARCHAR, tbl VARCHAR, k VARCHAR, a VARCHAR, seq VARCHAR)'
        : `CREATE TABLE events AS SELECT op, db, "table" AS tbl, json(key)::VARCHAR AS k, json(after)::VARCHAR AS a, seq
           FROM read_json('${join(work, 'out-*.jsonl.gz')}', format = 'newline_delimited', compression = 'gzip',
             columns = {op: 'VARCHAR', db: 'VARCHAR', "table": 'VARCHAR', key: 'JSON', after: 'JSON', seq: 'VARCHAR'})`,
    );

    // 2. MySQL, inside one consistent snapshot whose binlog position the server reports.
    await reader.sql.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
    const [status] = await reader.sql.query("SHOW STATUS LIKE 'binlog_snapshot_%'");
    const vars = Object.fromEntries((status as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name.toLowerCase(), r.Value]));
    if (!vars.binlog_snapshot_file)
      throw new SluiceError(
        ErrorCode.VERIFY_UNSUPPORTED,
        'the server does not report binlog_snapshot_file (MariaDB does); verify needs it to read MySQL at a known binlog position',
      );
    const mysqlPosition: BinlogPosition = { file: vars.binlog_snapshot_file, pos: Number(vars.binlog_snapshot_position) };
    const names = options.tables?.length
      ? options.tables.map((t) => {
          const [dbName, table] = t.split('.');
          return { db: dbName ?? '', table: table ?? '' };
        })
      : await listTables(reader.sql, tableFilter(config));

    // 3. Keys the two sides cannot both reflect: changed between the output's position and S.
    const skippedKeys = lineFile(join(work, 'skipped.jsonl'));
    await skippedKeys.write(jsonLine({ tbl: '""', k: 'null' }));
    if (outputPosition && comparePositions(outputPosition, mysqlPosition) < 0) {
      const wanted = new Set(names.map((n) => `${n.db}.${n.table}`));
      const scan = new BinlogReader({ target, start: outputPosition, filter: (d, t) => wanted.has(`${d}.${t}`), idleMs: 500 });
      try {
        for await (const item of scan) {
          if (item.kind === 'rows') {
            const rows = item.op === 'update' ? item.rows.flatMap((r) => [r.before, r.after]) : item.rows;
            for (const row of rows) await skippedKeys.write(jsonLine({ tbl: JSON.stringify(item.shape.table), k: encodeKey(item.shape, row) }));
          }
          if ((item.kind === 'commit' || item.kind === 'progress') && comparePositions(item.position, mysqlPosition) >= 0) break;
          if (item.kind === 'idle') break;
        }
      } finally {
        await scan.stop();
      }
    }
    await skippedKeys.close();
    await duck.run(
      `CREATE TABLE skipped AS SELECT DISTINCT tbl, json(k)::VARCHAR AS k FROM read_json('${join(work, 'skipped.jsonl')}', columns = {tbl: 'VARCHAR', k: 'JSON'})`,
    );
    // Output events after S: every seq above this one (snapshot rows read at watermark S stay below).
    const after = seqAfter(mysqlPosition);

    const tables: TableVerdict[] = [];
    for (const { db: dbName, table } of names) {
      const info = await tableInfo(reader.sql, dbName, table, config.keyColumns.get(`${dbName}.${table}`));
      const shape = encodeShape({ db: dbName, table, columns: info.columns, key: info.key.map((k) => info.columns.findIndex((c) => c.name === k)) });
      const file = join(work, `mysql-${tables.length}.jsonl`);
      const out = lineFile(file);
      let mysqlRows = 0;
      for await (const rows of reader.page(info, null, null, 1_000_000_000)) {
        for (const row of rows) {
          await out.write(jsonLine({ k: encodeKey(shape, row), a: encodeRow(shape, row) }));
          mysqlRows++;
        }
      }
      await out.close();
      await duck.run(
        mysqlRows === 0
          ? 'CREATE OR REPLACE TABLE live (k VARCHAR, a VARCHAR)'
          : `CREATE OR REPLACE TABLE live AS SELECT json(k)::VARCHAR AS k, json(a)::VARCHAR AS a FROM read_json('${file}', columns = {k: 'JSON', a: 'JSON'})`,
      );
      const t = `'${table.replaceAll("'", "''")}'`;
      const d = `'${dbName.replaceAll("'", "''")}'`;
      await duck.run(`CREATE OR REPLACE TABLE latest AS
        SELECT k, arg_max(op, seq) AS op, arg_max(a, seq) AS a, max(seq) AS seq FROM events WHERE db = ${d} AND tbl = ${t} GROUP BY k`);
      await duck.run(`CREATE OR REPLACE TABLE excluded AS
        SELECT k FROM latest WHERE seq > '${after}' UNION SELECT k FROM skipped WHERE tbl = ${t}`);
      const one = async (sql: string) => (await duck.runAndReadAll(sql)).getRowObjects();
      const count = async (sql: string) => Number((await one(`SELECT count(*) AS n FROM (${sql})`))[0]?.n ?? 0);
      const missingSql = `SELECT l.k FROM live l LEFT JOIN latest o ON o.k = l.k WHERE (o.k IS NULL OR o.op = 'd') AND l.k NOT IN (SELECT k FROM excluded)`;
      const extraSql = `SELECT o.k FROM latest o LEFT JOIN live l ON l.k = o.k WHERE o.op <> 'd' AND l.k IS NULL AND o.k NOT IN (SELECT k FROM excluded)`;
      // Compare the columns the output row has; a column it lacks was added later and never written since.
      const differingSql = `SELECT o.k, o.a AS output, l.a AS mysql,
          list_filter(json_keys(o.a), c -> json_extract(o.a, '$."' || c || '"')::VARCHAR IS DISTINCT FROM json_extract(l.a, '$."' || c || '"')::VARCHAR) AS columns
        FROM latest o JOIN live l ON l.k = o.k WHERE o.op <> 'd' AND o.a <> l.a AND o.k NOT IN (SELECT k FROM excluded)`;
      const differing = `SELECT * FROM (${differingSql}) WHERE len(columns) > 0`;
      const verdict: TableVerdict = {
        table: `${dbName}.${table}`,
        mysqlRows,
        outputRows: await count(`SELECT k FROM latest WHERE op <> 'd'`),
        compared: await count(`SELECT k FROM live WHERE k NOT IN (SELECT k FROM excluded)`),
        skipped: await count('SELECT k FROM excluded'),
        missing: await count(missingSql),
        extra: await count(extraSql),
        differing: await count(differing),
        examples: {
          missing: (await one(`${missingSql} ORDER BY 1 LIMIT ${examples}`)).map((r) => String(r.k)),
          extra: (await one(`${extraSql} ORDER BY 1 LIMIT ${examples}`)).map((r) => String(r.k)),
          differing: (await one(`${differing} ORDER BY 1 LIMIT ${examples}`)).map((r) => ({
            key: String(r.k),
            columns: (r.columns as { items: unknown[] } | null)?.items?.map(String) ?? [],
            mysql: String(r.mysql),
            output: String(r.output),
          })),
        },
      };
      tables.push(verdict);
    }
    await reader.sql.query('COMMIT');
    return { ok: tables.every((t) => t.missing + t.extra + t.differing === 0), mysqlPosition, outputPosition, tables };
  } finally {
    await reader.end();
    duck.closeSync();
    db.closeSync();
    if (!options.workDir) rmSync(work, { recursive: true, force: true });
  }
}

/** `sluice materialize`: a table's current state from the output, as Parquet (typed from the manifests) or JSON Lines (the format's own encoding). */
export async function materialize(deps: { config: Config; s3: S3Client }, table: string, outFile: string): Promise<number> {
  const [dbName, name] = table.split('.');
  if (!dbName || !name) throw new SluiceError(ErrorCode.MATERIALIZE_TABLE, `"${table}" is not <db>.<table>`);
  const format = outFile.endsWith('.parquet') ? 'parquet' : outFile.endsWith('.jsonl') ? 'jsonl' : undefined;
  if (!format) throw new SluiceError(ErrorCode.MATERIALIZE_FORMAT, `write to a .parquet or .jsonl file, not ${outFile}`);
  const work = mkdtempSync(join(tmpdir(), 'sluice-materialize-'));
  const db = await DuckDBInstance.create(join(work, 'm.duckdb'), { temp_directory: join(work, 'spill') });
  const duck = await db.connect();
  try {
    let files = 0;
    let columns: { name: string; type: string }[] = [];
    for await (const manifest of manifests(deps.s3, deps.config.bucket, deps.config.prefix, deps.config.sourceId)) {
      for (const object of manifest.objects) {
        if (object.db === dbName && object.table === name) await download(deps.s3, deps.config.bucket, object.key, join(work, `o-${files++}.jsonl.gz`));
      }
      // Binlog manifests come in commit order: the last one that mentions the table has its newest shape.
      const shape = manifest.tables[table];
      if (shape && manifest.commit_seq !== undefined) columns = shape.columns;
      else if (shape && !columns.length) columns = shape.columns;
    }
    if (files === 0) throw new SluiceError(ErrorCode.MATERIALIZE_EMPTY, `the output has no events for ${table}`);
    await duck.run(`CREATE TABLE rows AS SELECT arg_max(after, seq) AS after, arg_max(op, seq) AS op FROM read_json('${join(work, 'o-*.jsonl.gz')}', format = 'newline_delimited',
      compression = 'gzip', columns = {op: 'VARCHAR', key: 'JSON', after: 'JSON', seq: 'VARCHAR'}) GROUP BY json(key)::VARCHAR`);
    const live = join(work, 'live.jsonl');
    await duck.run(`COPY (SELECT after FROM rows WHERE op <> 'd') TO '${live}' (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01')`);
    const target = outFile.replaceAll("'", "''");
    // Typed from the manifest's schema: type inference would read unsigned BIGINTs beyond 2^63 as doubles.
    const schema = columns.map((c) => `${JSON.stringify(c.name).replaceAll("'", "''")}: '${duckType(c.type)}'`).join(', ');
    if (format === 'jsonl')
      copyFileSync(live, outFile); // the rows as the format encodes them: lossless
    else await duck.run(`COPY (SELECT * FROM read_json('${live}', format = 'newline_delimited', columns = {${schema}})) TO '${target}' (FORMAT parquet)`);
    return Number((await duck.runAndReadAll(`SELECT count(*) AS n FROM rows WHERE op <> 'd'`)).getRowObjects()[0]?.n ?? 0);
  } finally {
    duck.closeSync();
    db.closeSync();
    rmSync(work, { recursive: true, force: true });
  }
}

/** DuckDB column type for a manifest type; temporal types stay text, because MySQL allows zero dates. */
function duckType(sqlType: string): string {
  const unsigned = sqlType.endsWith(' unsigned');
  const base = sqlType.replace(' unsigned', '');
  const decimal = /^decimal\((\d+),(\d+)\)$/.exec(base);
  if (decimal) return Number(decimal[1]) <= 38 ? `DECIMAL(${decimal[1]},${decimal[2]})` : 'VARCHAR';
  switch (base) {
    case 'tinyint':
    case 'smallint':
    case 'mediumint':
    case 'int':
      return 'BIGINT';
    case 'bigint':
      return unsigned ? 'UBIGINT' : 'BIGINT';
    case 'year':
      return 'INTEGER';
    case 'float':
      return 'FLOAT';
    case 'double':
      return 'DOUBLE';
    default:
      return base.startsWith('bit') ? 'UBIGINT' : 'VARCHAR';
  }
}
