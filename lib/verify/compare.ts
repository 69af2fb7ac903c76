import type { DuckDBConnection } from '@duckdb/node-api';
import { formatTableRef, type TableRef, tableKey } from '../core/table-ref.ts';

/** One table's comparison: counts, and the first examples of each kind of difference. */
export interface TableVerdict {
  /** The table as text (`formatTableRef`), for people. */
  table: string;
  ref: TableRef;
  mysqlRows: number;
  outputRows: number;
  compared: number;
  skipped: number;
  missing: number;
  extra: number;
  differing: number;
  examples: { missing: string[]; extra: string[]; differing: { key: string; columns: string[]; mysql: string; output: string }[] };
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Loads the output's events (`events`: op, db, tbl, k, a, seq) from gzip JSON Lines files matching `glob`, or an empty table. */
export async function loadEvents(duck: DuckDBConnection, glob: string | undefined): Promise<void> {
  await duck.run(
    glob === undefined
      ? 'CREATE TABLE events (op VARCHAR, db VARCHAR, tbl VARCHAR, k VARCHAR, a VARCHAR, seq VARCHAR)'
      : `CREATE TABLE events AS SELECT op, db, "table" AS tbl, json(key)::VARCHAR AS k, json(after)::VARCHAR AS a, seq
         FROM read_json(${literal(glob)}, format = 'newline_delimited', compression = 'gzip',
           columns = {op: 'VARCHAR', db: 'VARCHAR', "table": 'VARCHAR', key: 'JSON', after: 'JSON', seq: 'VARCHAR'})
         WHERE op IN ('c', 'u', 'd', 'r')`,
  );
}

/** Loads the keys changing while the two sides were read (`skipped`: tbl = the table's `tableKey`, k). */
export async function loadSkipped(duck: DuckDBConnection, file: string): Promise<void> {
  await duck.run(`CREATE TABLE skipped AS SELECT DISTINCT tbl, json(k)::VARCHAR AS k FROM read_json(${literal(file)}, columns = {tbl: 'VARCHAR', k: 'JSON'})`);
}

/**
 * Compares one table's MySQL rows (`{k, a}` lines in `liveFile`) with the output materialized by
 * the format's rule, leaving out keys whose output is newer than `after` or that were changing.
 */
export async function compareTable(
  duck: DuckDBConnection,
  input: { db: string; table: string; mysqlRows: number; liveFile: string; after: string; examples: number },
): Promise<TableVerdict> {
  const { db, table, mysqlRows, examples } = input;
  await duck.run(
    mysqlRows === 0
      ? 'CREATE OR REPLACE TABLE live (k VARCHAR, a VARCHAR)'
      : `CREATE OR REPLACE TABLE live AS SELECT json(k)::VARCHAR AS k, json(a)::VARCHAR AS a FROM read_json(${literal(input.liveFile)}, columns = {k: 'JSON', a: 'JSON'})`,
  );
  await duck.run(`CREATE OR REPLACE TABLE latest AS
    SELECT k, arg_max(op, seq) AS op, arg_max(a, seq) AS a, max(seq) AS seq FROM events WHERE db = ${literal(db)} AND tbl = ${literal(table)} GROUP BY k`);
  await duck.run(`CREATE OR REPLACE TABLE excluded AS
    SELECT k FROM latest WHERE seq > ${literal(input.after)} UNION SELECT k FROM skipped WHERE tbl = ${literal(tableKey({ db, table }))}`);
  const one = async (sql: string) => (await duck.runAndReadAll(sql)).getRowObjects();
  const count = async (sql: string) => Number((await one(`SELECT count(*) AS n FROM (${sql})`))[0]?.n ?? 0);
  const missingSql = `SELECT l.k FROM live l LEFT JOIN latest o ON o.k = l.k WHERE (o.k IS NULL OR o.op = 'd') AND l.k NOT IN (SELECT k FROM excluded)`;
  const extraSql = `SELECT o.k FROM latest o LEFT JOIN live l ON l.k = o.k WHERE o.op <> 'd' AND l.k IS NULL AND o.k NOT IN (SELECT k FROM excluded)`;
  // Compare the columns the output row has; a column it lacks was added later and never written since.
  const differingSql = `SELECT o.k, o.a AS output, l.a AS mysql,
      list_filter(json_keys(o.a), c -> json_extract(o.a, '$."' || c || '"')::VARCHAR IS DISTINCT FROM json_extract(l.a, '$."' || c || '"')::VARCHAR) AS columns
    FROM latest o JOIN live l ON l.k = o.k WHERE o.op <> 'd' AND o.a <> l.a AND o.k NOT IN (SELECT k FROM excluded)`;
  const differing = `SELECT * FROM (${differingSql}) WHERE len(columns) > 0`;
  return {
    table: formatTableRef({ db, table }),
    ref: { db, table },
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
}
