import type { DuckDBConnection } from '@duckdb/node-api';
import { formatTableRef, type TableRef, tableKey } from '../core/table-ref.ts';
import { sqlString, valueSql } from '../materialize/projection.ts';

/** One table's comparison: counts, and the first examples of each kind of difference. */
export interface TableVerdict {
  /** The table as text (`formatTableRef`), for people. */
  table: string;
  ref: TableRef;
  /** `changing`: a DDL touched the table between the output's position and the MySQL read, so it was not compared. */
  status: 'compared' | 'changing';
  /** Compared by key (the output's key columns), or as a multiset of rows (keyless). */
  keyed: boolean;
  /** The output's current schema version (null: the output has nothing for the table; 0: format-v1 output without versions). */
  schemaVersion: number | null;
  mysqlRows: number;
  outputRows: number;
  compared: number;
  /** Keys (keyless: distinct rows) changed between the output's position and the MySQL read. */
  skipped: number;
  missing: number;
  extra: number;
  differing: number;
  /** Columns MySQL has and the output's current version lacks, and the reverse. */
  missingColumns: string[];
  extraColumns: string[];
  /** Both have the same columns, but not in the same order. */
  columnOrderDiffers: boolean;
  note?: string;
  examples: { missing: string[]; extra: string[]; differing: { key: string; columns: string[]; mysql: string; output: string }[] };
}

export const MiB = 1024 * 1024;

/** `read_csv` of `\x01`-separated text columns, buffers sized for the longest line. */
export function readLines(file: string, columns: string[], longest: number): string {
  const maxLine = Math.max(2 * MiB, longest + 1024);
  return `read_csv(${sqlString(file)}, columns = {${columns.map((c) => `${c}: 'VARCHAR'`).join(', ')}}, header = false, auto_detect = false,
    delim = E'\\x01', quote = '', escape = '', max_line_size = ${maxLine}, buffer_size = ${Math.max(32 * MiB, maxLine + MiB)})`;
}

/** Loads the rows changed while the two sides were read (`skipped`: tbl, k, a). */
export async function loadSkipped(duck: DuckDBConnection, file: string, longest: number): Promise<void> {
  await duck.run(`CREATE OR REPLACE TABLE skipped AS SELECT * FROM ${readLines(file, ['tbl', 'k', 'a'], longest)}`);
}

export interface CompareInput {
  ref: TableRef;
  mysql: { file: string; rows: number; columns: readonly string[]; key: readonly string[] | null; longest: number };
  /** The output's rows (DuckDB table id, row, n) and what describes them; undefined when the output has nothing. */
  output?: { state: string; version: number; columns: readonly string[]; key: readonly string[] | null; versioned: boolean; rows: number };
  examples: number;
}

/**
 * Compares a table's MySQL rows with the output materialized by the rule, leaving out keys (or,
 * keyless, rows) changed between the output's position and the MySQL read. Values are compared as
 * the exact text each side writes (both are the format's encoding). Rows of format-v1 output
 * (`versioned` false) may lack columns added after they were written: those are not compared.
 */
export async function compareTable(duck: DuckDBConnection, input: CompareInput): Promise<TableVerdict> {
  const { mysql, output } = input;
  const outColumns = output?.columns ?? mysql.columns;
  const common = mysql.columns.filter((c) => outColumns.includes(c));
  const keyed = mysql.key !== null && output !== undefined && JSON.stringify(mysql.key) === JSON.stringify(output.key);
  await duck.run(
    mysql.rows === 0
      ? 'CREATE OR REPLACE TABLE live (k VARCHAR, a VARCHAR)'
      : `CREATE OR REPLACE TABLE live AS SELECT * FROM ${readLines(mysql.file, ['k', 'a'], mysql.longest)}`,
  );
  await duck.run(
    `CREATE OR REPLACE TABLE out AS SELECT id, row, n FROM ${output ? output.state : '(SELECT NULL::VARCHAR AS id, NULL::VARCHAR AS row, 0::BIGINT AS n WHERE false)'}`,
  );
  const mine = `(SELECT a FROM skipped WHERE tbl = ${sqlString(tableKey(input.ref))})`;
  const one = async (sql: string) => (await duck.runAndReadAll(sql)).getRowObjects();
  const number = async (sql: string) => Number((await one(sql))[0]?.n ?? 0);
  const base = {
    table: formatTableRef(input.ref),
    ref: input.ref,
    status: 'compared' as const,
    keyed,
    schemaVersion: output?.version ?? null,
    mysqlRows: mysql.rows,
    outputRows: output?.rows ?? 0,
    missingColumns: mysql.columns.filter((c) => !outColumns.includes(c)),
    extraColumns: outColumns.filter((c) => !mysql.columns.includes(c)),
    columnOrderDiffers: common.length === mysql.columns.length && common.length === outColumns.length && common.some((c, i) => outColumns[i] !== c),
    ...(output && !output.versioned ? { note: 'format-v1 output (no schema versions): columns a row lacks are not compared' } : {}),
  };

  if (keyed) {
    const key = mysql.key as readonly string[];
    const keyOf = (row: string) => `${key.map((k, i) => `${sqlString(`${i ? ',' : '{'}${JSON.stringify(k)}:`)} || ${valueSql(row, k)}`).join(' || ')} || '}'`;
    await duck.run(`CREATE OR REPLACE TABLE excluded AS SELECT DISTINCT k FROM (SELECT ${keyOf('a')} AS k FROM ${mine}) WHERE k IS NOT NULL`);
    const lenient = output?.versioned === false;
    const columnDiffers = common.map((c) => {
      const [o, l] = [valueSql('o.row', c), valueSql('l.a', c)];
      return `CASE WHEN ${lenient ? `${o} IS NOT NULL AND ` : ''}${o} IS DISTINCT FROM ${l} THEN ${sqlString(c)} END`;
    });
    const missingSql = `SELECT l.k FROM live l ANTI JOIN out o ON o.id = l.k WHERE l.k NOT IN (SELECT k FROM excluded)`;
    const extraSql = `SELECT o.id AS k FROM out o ANTI JOIN live l ON l.k = o.id WHERE o.id NOT IN (SELECT k FROM excluded)`;
    const differingSql = `SELECT * FROM (
        SELECT o.id AS k, o.row AS output, l.a AS mysql, list_filter([${columnDiffers.join(', ') || 'NULL'}], c -> c IS NOT NULL) AS columns
        FROM out o JOIN live l ON l.k = o.id WHERE o.row <> l.a AND o.id NOT IN (SELECT k FROM excluded))
      WHERE len(columns) > 0`;
    const count = (sql: string) => number(`SELECT count(*) AS n FROM (${sql})`);
    const e = input.examples;
    return {
      ...base,
      compared: await count(`SELECT k FROM live WHERE k NOT IN (SELECT k FROM excluded)`),
      skipped: await count('SELECT k FROM excluded'),
      missing: await count(missingSql),
      extra: await count(extraSql),
      differing: await count(differingSql),
      examples: {
        missing: (await one(`${missingSql} ORDER BY 1 LIMIT ${e}`)).map((r) => String(r.k)),
        extra: (await one(`${extraSql} ORDER BY 1 LIMIT ${e}`)).map((r) => String(r.k)),
        differing: (await one(`${differingSql} ORDER BY 1 LIMIT ${e}`)).map((r) => ({
          key: String(r.k),
          columns: (r.columns as { items: unknown[] } | null)?.items?.map(String) ?? [],
          mysql: String(r.mysql),
          output: String(r.output),
        })),
      },
    };
  }

  // Keyless: compare multisets of rows, by their text when both sides have the same columns in one order.
  const same = common.length === mysql.columns.length && common.length === outColumns.length && !base.columnOrderDiffers;
  const ident = (row: string) => (same ? row : `concat_ws(E'\\x01', ${common.map((c) => `coalesce(${valueSql(row, c)}, '')`).join(', ') || "''"})`);
  await duck.run(`CREATE OR REPLACE TABLE excluded AS SELECT DISTINCT r FROM (SELECT ${ident('a')} AS r FROM ${mine}) WHERE r IS NOT NULL`);
  await duck.run(`CREATE OR REPLACE TABLE counted AS
    SELECT coalesce(l.r, o.r) AS r, coalesce(l.n, 0) AS mysql, coalesce(o.n, 0) AS output
    FROM (SELECT ${ident('a')} AS r, count(*) AS n FROM live GROUP BY 1) l
    FULL JOIN (SELECT ${ident('row')} AS r, sum(n) AS n FROM out GROUP BY 1) o ON l.r = o.r
    WHERE coalesce(l.r, o.r) NOT IN (SELECT r FROM excluded)`);
  const [sums] = await one(`SELECT coalesce(sum(mysql), 0) AS compared, coalesce(sum(greatest(0, mysql - output)), 0) AS missing,
      coalesce(sum(greatest(0, output - mysql)), 0) AS extra FROM counted`);
  const e = input.examples;
  const examples = async (more: string) =>
    (await one(`SELECT r, ${more} AS n FROM counted WHERE ${more} > 0 ORDER BY r LIMIT ${e}`)).map((r) => `${String(r.r)}${Number(r.n) > 1 ? ` ×${r.n}` : ''}`);
  return {
    ...base,
    compared: Number(sums?.compared ?? 0),
    skipped: await number('SELECT count(*) AS n FROM excluded'),
    missing: Number(sums?.missing ?? 0),
    extra: Number(sums?.extra ?? 0),
    differing: 0,
    examples: { missing: await examples('mysql - output'), extra: await examples('output - mysql'), differing: [] },
  };
}
