import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import mysql from 'mysql2/promise';
import { describe, expect, inject, it } from 'vitest';
import { fromTableKey, tableKey } from '../../lib/core/table-ref.ts';
import { tableFails, verify } from '../../lib/verify/verify.ts';
import { fold, loadHistory } from '../support/fold.ts';
import { type ChangeEvent, quoted, type TestSource, testSource } from '../support/source.ts';
import { splitStatements } from '../support/sql-script.ts';

/*
 * Debezium's own MySQL-connector test scripts (../shared/peer-data/debezium, README there) as a
 * differential test: each script is loaded into a database of its own, every keyed table is changed
 * (every row updated in every column a value can be changed in, some rows deleted, some keys moved),
 * and what sluice wrote is compared with the tables, along two paths per script:
 *
 *   binlog    capture runs from before the script loads: its rows arrive as change events;
 *   snapshot  the script is loaded first, `sluice snapshot` copies its tables, capture follows.
 *
 * Both paths are judged twice: by `sluice verify` (lib/verify: sluice's materialization against the
 * server read through sluice's snapshot reader and encoder), and by the reference fold of
 * test/support/fold.ts (the materialization rule written from docs/FORMAT.md, independent of lib/)
 * against the server's own rendering of every cell (`truthSql`: CAST … AS CHAR, HEX, ST_AsWKB),
 * turned into the documented JSON here, so that neither side's values come from sluice's encoder.
 * All scripts of a server share two sources (one per path), so the run takes a few captures and one
 * snapshot.
 *
 * The scripts are read where they are, never copied: SLUICE_DEBEZIUM_SCRIPTS, by default
 * ../shared/peer-data/debezium from the repository root. MariaDB loads the adapted copies (sql/);
 * MySQL the verbatim ones (orig/) — the adaptations replaced MySQL syntax MariaDB lacks — except
 * regression_test, whose adaptation is about loading (a DELIMITER for its stored function, its side
 * database named after the load's), so MySQL reads the adapted one too.
 */

const ROOT = resolve(process.env.SLUICE_DEBEZIUM_SCRIPTS ?? join(process.cwd(), '..', 'shared', 'peer-data', 'debezium'));
const ADAPTED_FOR_LOADING = new Set(['regression_test']);

/** How many scripts each server loads, and the ones it refuses by name: MariaDB's UUID type, an SRID MySQL 8 does not define. */
const EXPECTED: Record<'mariadb' | 'mysql', { loaded: number; refused: string[] }> = {
  mariadb: { loaded: 42, refused: [] },
  mysql: { loaded: 40, refused: ['geometry_test_5', 'mariadb_uuid_column_test'] },
};

interface Script {
  name: string;
  file: string;
}

function scripts(server: 'mariadb' | 'mysql'): Script[] {
  if (!existsSync(join(ROOT, 'README.md')) || !existsSync(join(ROOT, 'sql'))) {
    throw new Error(
      `Debezium's test scripts not found at ${ROOT}: set SLUICE_DEBEZIUM_SCRIPTS to the folder holding sql/ and orig/ (its README.md describes them)`,
    );
  }
  return readdirSync(join(ROOT, 'sql'))
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => {
      const name = f.slice(0, -'.sql'.length);
      const folder = server === 'mysql' && !ADAPTED_FOR_LOADING.has(name) ? 'orig' : 'sql';
      return { name, file: join(ROOT, folder, f) };
    });
}

/** The script's statements for database `db`, as Debezium's loader reads it (lines starting with `--` dropped). */
function statements(script: Script, db: string): string[] {
  const text = readFileSync(script.file, 'utf8')
    .replaceAll('$DB$', db)
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n');
  return splitStatements(text);
}

/** Loads a script into `db` on a connection of its own (scripts set session variables); the first error, if any. */
async function load(adminUrl: string, script: Script, db: string): Promise<string | undefined> {
  const conn = await mysql.createConnection({ uri: adminUrl });
  try {
    await conn.query(`USE ${quoted(db)}`);
    // The scripts store zero dates, as values and as defaults: MySQL 8's default mode refuses them
    // (NO_ZERO_DATE, NO_ZERO_IN_DATE), MariaDB's does not. Both load in MariaDB's default mode.
    await conn.query("SET SESSION sql_mode = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'");
    for (const statement of statements(script, db)) {
      try {
        await conn.query(statement);
      } catch (error) {
        return `${(error as Error).message} in: ${statement.replace(/\s+/g, ' ').slice(0, 120)}`;
      }
    }
    return undefined;
  } finally {
    await conn.end();
  }
}

interface Column {
  name: string;
  dataType: string;
  generated: boolean;
}

/** An SQL expression giving column `c` another value of its type (null for types left alone: spatial, MariaDB's own). */
function changed(column: Column): string | null {
  const c = quoted(column.name);
  switch (column.dataType) {
    case 'tinyint':
    case 'smallint':
    case 'mediumint':
    case 'int':
    case 'bigint':
      // Even ↔ odd neighbour: never out of range (every range starts even and ends odd).
      return `IF(${c} IS NULL, 1, IF(${c} % 2 = 0, ${c} + 1, ${c} - 1))`;
    case 'decimal':
    case 'float':
    case 'double':
      return `IF(${c} IS NULL OR ${c} = 0, 1, -${c})`;
    case 'bit':
      return `IF(${c} IS NULL, 0, ${c} ^ 1)`;
    case 'year':
      return `IF(${c} IS NULL OR ${c} = 0, 2000, IF(${c} < 2155, ${c} + 1, ${c} - 1))`;
    case 'date':
    case 'datetime':
    case 'timestamp':
      return `IF(${c} IS NULL, '2001-02-03 04:05:06', ${c} + INTERVAL 1 DAY)`;
    case 'time':
      return `IF(${c} IS NULL, '01:02:03', ADDTIME(${c}, '01:00:00'))`;
    case 'char':
    case 'varchar':
    case 'tinytext':
    case 'text':
    case 'mediumtext':
    case 'longtext':
      // Rotated by one character: the same length, so a CHAR(n) or a short VARCHAR keeps it.
      return `IF(${c} IS NULL, 'n', IF(CHAR_LENGTH(${c}) < 2, CONCAT(${c}, 'x'), CONCAT(SUBSTRING(${c}, 2), LEFT(${c}, 1))))`;
    case 'binary':
    case 'varbinary':
    case 'tinyblob':
    case 'blob':
    case 'mediumblob':
    case 'longblob':
      return `IF(${c} IS NULL, X'01', IF(LENGTH(${c}) < 2, CONCAT(${c}, X'00'), CONCAT(SUBSTRING(${c}, 2), LEFT(${c}, 1))))`;
    case 'enum':
    case 'set':
      return `IF(${c} + 0 = 1, 2, 1)`;
    case 'json':
      return `IF(${c} IS NULL, '{"n": 1}', JSON_ARRAY(${c}))`;
    default:
      return null;
  }
}

/** An SQL expression for a key column that moves the key, or null. */
function moved(column: Column, step: number): string | null {
  const c = quoted(column.name);
  if (/int|decimal|float|double/.test(column.dataType)) return `${c} + ${1000 + step}`;
  if (/char|text/.test(column.dataType)) return `CONCAT('~${step}', ${c})`;
  if (/binary|blob/.test(column.dataType)) return `CONCAT(X'FF0${step}', ${c})`;
  if (/date|timestamp/.test(column.dataType)) return `${c} + INTERVAL ${1000 + step} DAY`;
  if (column.dataType === 'year') return `${c} - ${1 + step}`;
  if (column.dataType === 'time') return `ADDTIME(${c}, '${100 + step}:00:00')`;
  return null;
}

/**
 * The change workload on every keyed table of `db` (a table with a primary key, or a unique key of
 * NOT NULL columns): every row updated in every column that can change, every third row deleted,
 * some keys moved. Rows a unique key or a foreign key would refuse are left as they are (IGNORE,
 * and no foreign key checks); values out of range are clamped (sql_mode=''): the server's rows are
 * the truth either way. Returns the rows changed.
 */
async function change(adminUrl: string, db: string): Promise<{ updated: number; deleted: number; moved: number }> {
  const conn = await mysql.createConnection({ uri: adminUrl, database: db, supportBigNumbers: true, bigNumberStrings: true, dateStrings: true });
  const totals = { updated: 0, deleted: 0, moved: 0 };
  try {
    await conn.query("SET SESSION sql_mode = '', foreign_key_checks = 0");
    // information_schema once per database: MariaDB opens every table for each of its queries.
    const [tables] = await conn.query<mysql.RowDataPacket[]>(
      "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
      [db],
    );
    const [cols] = await conn.query<mysql.RowDataPacket[]>(
      'SELECT TABLE_NAME AS t, COLUMN_NAME AS name, DATA_TYPE AS dataType, EXTRA AS extra FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION',
      [db],
    );
    const keys = await keysOf(conn, db);
    for (const { name } of tables) {
      const columns: Column[] = cols
        .filter((r) => r.t === name)
        .map((r) => ({ name: r.name, dataType: String(r.dataType).toLowerCase(), generated: /GENERATED|VIRTUAL|STORED|PERSISTENT/i.test(r.extra) }));
      const key = keys.get(name);
      if (!key) continue;
      const t = `${quoted(db)}.${quoted(name)}`;
      const sets = columns
        .filter((col) => !col.generated && !key.includes(col.name))
        .map((col) => [col, changed(col)] as const)
        .filter(([, expression]) => expression !== null)
        .map(([col, expression]) => `${quoted(col.name)} = ${expression}`);
      if (sets.length) totals.updated += (await conn.query<mysql.ResultSetHeader>(`UPDATE IGNORE ${t} SET ${sets.join(', ')}`))[0].affectedRows;
      const keyList = key.map(quoted).join(', ');
      const [rows] = await conn.query<mysql.RowDataPacket[]>(`SELECT ${keyList} FROM ${t} ORDER BY ${keyList}`);
      const where = `(${keyList}) = (${key.map(() => '?').join(', ')})`;
      const values = (row: mysql.RowDataPacket) => key.map((k) => row[k]);
      const doomed = rows.filter((_, i) => i % 3 === 1);
      if (doomed.length)
        totals.deleted += (
          await conn.query<mysql.ResultSetHeader>(`DELETE FROM ${t} WHERE ${doomed.map(() => where).join(' OR ')}`, doomed.flatMap(values))
        )[0].affectedRows;
      const first = columns.find((col) => col.name === key[0]) as Column;
      for (const [i, row] of rows.entries()) {
        const expression = i % 3 === 2 && i < 9 ? moved(first, i) : null;
        // A move past the type's range is an error even without strict mode: that key stays.
        if (expression)
          totals.moved += await conn
            .query<mysql.ResultSetHeader>(`UPDATE IGNORE ${t} SET ${quoted(first.name)} = ${expression} WHERE ${where}`, values(row))
            .then(([r]) => r.affectedRows)
            .catch((error: { errno?: number }) => {
              if (error.errno === 1690) return 0;
              throw error;
            });
      }
    }
  } finally {
    await conn.end();
  }
  return totals;
}

/** Each table's primary key, else its first unique key of NOT NULL whole columns; keyless tables are left out. */
async function keysOf(conn: mysql.Connection, db: string): Promise<Map<string, string[]>> {
  const [rows] = await conn.query<mysql.RowDataPacket[]>(
    `SELECT s.TABLE_NAME AS t, s.INDEX_NAME AS idx, s.COLUMN_NAME AS col, c.IS_NULLABLE AS nullable, s.SUB_PART AS part
       FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c
         ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME
      WHERE s.TABLE_SCHEMA = ? AND s.NON_UNIQUE = 0
      ORDER BY s.TABLE_NAME, s.INDEX_NAME <> 'PRIMARY', s.INDEX_NAME, s.SEQ_IN_INDEX`,
    [db],
  );
  const indexes = new Map<string, mysql.RowDataPacket[]>();
  for (const row of rows) indexes.set(JSON.stringify([row.t, row.idx]), [...(indexes.get(JSON.stringify([row.t, row.idx])) ?? []), row]);
  const keys = new Map<string, string[]>();
  for (const parts of indexes.values()) {
    const table = parts[0]?.t as string;
    if (!keys.has(table) && parts.every((p) => p.nullable === 'NO' && p.part === null))
      keys.set(
        table,
        parts.map((p) => p.col),
      );
  }
  return keys;
}

/** One path of one script: exact, or what differs. */
interface PathResult {
  script: string;
  path: 'binlog' | 'snapshot';
  tables: number;
  rows: number;
  problems: string[];
}

const INTEGER = /^(tinyint|smallint|mediumint|int|bigint|bit)$/;
const TEXT = /^(char|varchar|tinytext|text|mediumtext|longtext|enum|set|json)$/;
const BINARY = /^(binary|varbinary|tinyblob|blob|mediumblob|longblob)$/;
const GEOMETRY = /^(geometry|point|linestring|polygon|multipoint|multilinestring|multipolygon|geometrycollection|geomcollection)$/;

/**
 * The server's rendering of column `c` (an SQL expression), independent of sluice's reader and
 * encoder: its own text (CAST … AS CHAR, HEX, ST_SRID/ST_AsWKB), as type-differential.test.ts reads it.
 */
function truthSql(dataType: string, c: string): string {
  if (dataType === 'bit') return `CAST(CAST(${c} AS UNSIGNED) AS CHAR)`;
  if (dataType === 'float') return `CAST(CAST(${c} AS DOUBLE) AS CHAR)`;
  // MySQL's YEAR() takes a date only; MariaDB's YEAR() reads the zero year as 1900.
  if (dataType === 'year') return inject('stackServer') === 'mysql' ? `CAST(${c} + 0 AS CHAR)` : `CAST(YEAR(${c}) AS CHAR)`;
  if (TEXT.test(dataType)) return `HEX(CONVERT(${c} USING utf8mb4))`;
  if (BINARY.test(dataType)) return `HEX(${c})`;
  // MySQL writes a geographic SRID's WKB latitude first unless told to keep the stored order.
  if (GEOMETRY.test(dataType)) return `CONCAT(ST_SRID(${c}), ':', HEX(ST_AsWKB(${c}${inject('stackServer') === 'mysql' ? ", 'axis-order=long-lat'" : ''})))`;
  return `CAST(${c} AS CHAR)`;
}

/** The shortest decimal that reads back as the float32 `value` (FORMAT.md's FLOAT rule). */
function shortestFloat32(value: number): number {
  for (let digits = 1; digits <= 9; digits++) {
    const candidate = Number(value.toPrecision(digits));
    if (Math.fround(candidate) === value) return candidate;
  }
  throw new Error(`no float32 text for ${value}`);
}

/** The server's text as the value docs/FORMAT.md documents (after JSON.parse, as the fold holds it). */
function documented(dataType: string, text: string | null): unknown {
  if (text === null) return null;
  if (INTEGER.test(dataType) || dataType === 'double') return Number(text);
  if (dataType === 'year') return text === '1900' ? 0 : Number(text);
  if (dataType === 'float') return shortestFloat32(Number(text));
  if (dataType === 'decimal') return text.replace(/^(-?)0+(?=\d)/, '$1'); // ZEROFILL's padding is display only
  if (dataType === 'timestamp') return text.startsWith('0000-00-00') ? text : `${text.replace(' ', 'T')}Z`;
  if (TEXT.test(dataType)) return Buffer.from(text, 'hex').toString('utf8');
  if (BINARY.test(dataType)) return Buffer.from(text, 'hex').toString('base64');
  if (GEOMETRY.test(dataType)) {
    const [srid, wkb] = text.split(':') as [string, string];
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(Number(srid));
    return Buffer.concat([prefix, Buffer.from(wkb, 'hex')]).toString('base64');
  }
  return text;
}

/** The table's rows as the server renders them, each as the JSON text of its documented values, sorted (a multiset). */
async function serverRows(conn: mysql.Connection, db: string, table: string): Promise<string[]> {
  const [columns] = await conn.query<mysql.RowDataPacket[]>(
    'SELECT COLUMN_NAME AS name, DATA_TYPE AS dataType FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
    [db, table],
  );
  if (!columns.length) return [];
  const types = columns.map((c) => String(c.dataType).toLowerCase());
  const [rows] = await conn.query<mysql.RowDataPacket[]>({
    sql: `SELECT ${columns.map((c, i) => truthSql(types[i] as string, quoted(c.name))).join(', ')} FROM ${quoted(db)}.${quoted(table)}`,
    rowsAsArray: true,
  });
  return rows.map((row) => JSON.stringify(Object.fromEntries(columns.map((c, i) => [c.name, documented(types[i] as string, row[i] as string | null)])))).sort();
}

/** Judges every script's databases in `source` (its own, and regression_test's side one) by verify and by the reference fold. */
async function judge(source: TestSource, path: PathResult['path'], loaded: readonly string[], dbOf: (script: string) => string): Promise<PathResult[]> {
  // A table capture asked to copy again (a change it could not follow) is a path that is not exact;
  // verify would refuse to run while the copy waits.
  const asked = await source.clients.snapshots.activeJobs(source.config.sourceId);
  if (asked.length)
    return loaded.map((script) => ({ script, path, tables: 0, rows: 0, problems: [`snapshot asked: ${JSON.stringify(asked.map((j) => j.requested))}`] }));
  const verdict = await verify({ config: source.config, s3: source.clients.s3, store: source.clients.store, snapshots: source.clients.snapshots });
  const byTable = new Map<string, ChangeEvent[]>();
  for (const e of await source.events()) byTable.set(tableKey(e), [...(byTable.get(tableKey(e)) ?? []), e]);
  const truth = await mysql.createConnection({ uri: inject('stackEnv').SLUICE_LOCAL_ADMIN_URL as string });
  await truth.query("SET time_zone = '+00:00'");
  try {
    const results: PathResult[] = [];
    for (const script of loaded) {
      const dbs = [dbOf(script), `${dbOf(script)}_ext`];
      const mine = (db: string) => dbs.includes(db);
      const result: PathResult = { script, path, tables: 0, rows: 0, problems: [] };
      for (const t of verdict.tables.filter((v) => mine(v.ref.db))) {
        result.tables++;
        result.rows += t.mysqlRows;
        if (t.status !== 'compared') result.problems.push(`verify: ${t.table} ${t.status} ${t.note ?? ''}`);
        else if (tableFails(t))
          result.problems.push(
            `verify: ${t.table} ${t.missing} missing, ${t.extra} extra, ${t.differing} differing, columns ${JSON.stringify([t.missingColumns, t.extraColumns, t.columnOrderDiffers])} ${JSON.stringify(t.examples).slice(0, 600)}`,
          );
      }
      for (const o of verdict.orphans.filter((o) => mine(o.ref.db))) result.problems.push(`verify: orphan ${o.table} (${o.rows} rows, ${o.reason})`);
      for (const c of verdict.changing) if (dbs.some((db) => c.includes(db))) result.problems.push(`verify: ${c} changing`);

      // The fold, table by table: every table the server has, and every table the output has rows of.
      const [tables] = await source.admin.query<mysql.RowDataPacket[]>(
        `SELECT TABLE_SCHEMA AS db, TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (?, ?) AND TABLE_TYPE = 'BASE TABLE'`,
        dbs,
      );
      const names = new Set([...tables.map((r) => tableKey({ db: r.db, table: r.name })), ...[...byTable.keys()].filter((k) => mine(fromTableKey(k).db))]);
      for (const name of names) {
        const { db, table } = fromTableKey(name);
        const { config, clients } = source;
        const history = await loadHistory(clients.s3, config.bucket, config.prefix, config.sourceId, db, table);
        const events = byTable.get(name) ?? [];
        if (path === 'binlog' && events.some((e) => e.op === 'r')) result.problems.push(`${db}.${table} was copied on the binlog path`);
        if (events.length && !history.size) {
          result.problems.push(`fold: ${db}.${table} has ${events.length} events and no schema history`);
          continue;
        }
        const folded = fold(events, history);
        const server = await serverRows(truth, db, table);
        if (JSON.stringify(folded) !== JSON.stringify(server)) {
          const extra = folded.filter((r) => !server.includes(r)).slice(0, 2);
          const missing = server.filter((r) => !folded.includes(r)).slice(0, 2);
          result.problems.push(
            `fold: ${db}.${table} ${folded.length} rows, server ${server.length}; only in output ${extra.join(' ')}; only on server ${missing.join(' ')}`,
          );
        }
      }
      results.push(result);
    }
    return results;
  } finally {
    await truth.end();
  }
}

describe("Debezium's test scripts, loaded, changed and read back on both paths", () => {
  it('every path of every script that loads is exact', async () => {
    const server = inject('stackServer');
    const adminUrl = inject('stackEnv').SLUICE_LOCAL_ADMIN_URL as string;
    const started = Date.now();
    const all = scripts(server);
    // The snapshot path's databases load first, before its source captures anything.
    await using snap = await testSource('dbzs');
    await using binlog = await testSource('dbzb');
    const dbIn = (source: TestSource) => (script: string) => `${source.db}_${script}`;
    const refused: Record<string, string> = {};
    for (const script of all) {
      const db = await snap.database(`_${script.name}`);
      const error = await load(adminUrl, script, db);
      if (error) {
        refused[script.name] = error;
        await snap.sql(`DROP DATABASE ${quoted(db)}; DROP DATABASE IF EXISTS ${quoted(`${db}_ext`)}`);
      }
    }
    const loaded = all.map((s) => s.name).filter((name) => !(name in refused));

    // The binlog path: capture from before the scripts load.
    await binlog.capture();
    for (const script of all.filter((s) => loaded.includes(s.name))) {
      const error = await load(adminUrl, script, await binlog.database(`_${script.name}`));
      expect(error, `${script.name} loaded once, not twice`).toBeUndefined();
    }
    // The snapshot path: capture from now, a snapshot of everything there.
    await snap.capture();
    const copied = await snap.snapshot({ workers: 2 });
    expect(copied.complete).toBe(true);

    const work = { updated: 0, deleted: 0, moved: 0 };
    for (const source of [binlog, snap])
      for (const script of loaded) {
        const done = await change(adminUrl, dbIn(source)(script));
        work.updated += done.updated;
        work.deleted += done.deleted;
        work.moved += done.moved;
      }
    // Every change, loads included, is in the output before it is judged (the budget only bounds a stuck run).
    for (const source of [binlog, snap]) expect((await source.capture({ budgetMs: 120_000 })).caughtUp).toBe(true);

    const results = [...(await judge(binlog, 'binlog', loaded, dbIn(binlog))), ...(await judge(snap, 'snapshot', loaded, dbIn(snap)))];
    const exact = results.filter((r) => r.problems.length === 0);
    const refusedNames = Object.keys(refused);
    console.log(
      `peer scripts: ${server} ${loaded.length} loaded (${refusedNames.length} refused${refusedNames.length ? `: ${refusedNames.join(', ')}` : ''}), ${exact.length}/${results.length} paths exact; ${work.updated} rows updated, ${work.deleted} deleted, ${work.moved} keys moved; ${Math.round((Date.now() - started) / 1000)} s`,
    );

    expect.soft({ loaded: loaded.length, refused: refusedNames }, JSON.stringify(refused)).toEqual(EXPECTED[server]);
    expect.soft(results.filter((r) => r.problems.length).map((r) => `${r.script} (${r.path}): ${r.problems.join('; ')}`)).toEqual([]);
    // Each path compared tables with rows, and the workload changed rows of each kind.
    expect(results.filter((r) => r.tables === 0 || r.rows === 0).map((r) => `${r.script} (${r.path})`)).toEqual([]);
    expect(work.updated * work.deleted * work.moved).toBeGreaterThan(0);
  }, 300_000);
});
