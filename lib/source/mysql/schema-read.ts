import { type BinlogPosition, comparePositions, unwrapLogPos } from '../../core/position.ts';
import { tableKey } from '../../schema/catalog.ts';
import { CharsetTable } from '../../schema/charsets.ts';
import { type InformationSchemaColumn, UnsupportedTypeError } from '../../schema/column-type.ts';
import type { TableRef } from '../../schema/definition.ts';
import { type InformationSchemaIndexRow, type SchemaVersion, versionFromInformationSchema } from '../../schema/version.ts';
import { type ClassifyContext, classifyDdl } from './ddl/classify.ts';
import type { CommentRules } from './ddl/lexer.ts';
import type { Dialect } from './dialect/dialect.ts';
import { listTables } from './schema.ts';
import { binaryLogs, masterPosition, type SqlConnection } from './server.ts';

/*
 * Table structures as the server describes them now (information_schema), as schema versions:
 * for the catalog a source starts with, for tables that enter the captured set, and for DDL whose
 * resulting structure the statement alone does not give.
 */

async function rows<T>(conn: SqlConnection, sql: string, values: unknown[] = []): Promise<T[]> {
  const [result] = await conn.query(sql, values);
  return result as T[];
}

/** What the server tells about how it reads DDL (read once per run). */
export interface ServerTraits {
  /** Which executable comments ran: the server's dialect's rules. */
  readonly comments: CommentRules;
  readonly lowerCaseTableNames: boolean;
  readonly explicitDefaultsForTimestamp: boolean;
  /** `@@collation_server`: the defaults of a CREATE DATABASE that names no charset or collation. */
  readonly serverCollation?: string;
}

/** What decides how the server (of `dialect`) read a DDL statement (the binlog's statements are read by the same rules). */
export async function serverTraits(conn: SqlConnection, dialect: Dialect): Promise<ServerTraits> {
  const [row] = await rows<{ lower: number | string; explicit: number | string | null; collation: string | null }>(
    conn,
    'SELECT @@lower_case_table_names AS `lower`, @@explicit_defaults_for_timestamp AS explicit, @@collation_server AS collation',
  );
  // The versions this connection reads include MySQL's generated invisible primary key.
  await dialect.prepareSession(conn);
  return {
    comments: dialect.comments,
    lowerCaseTableNames: Number(row?.lower ?? 0) === 1,
    explicitDefaultsForTimestamp: Number(row?.explicit ?? 1) === 1,
    ...(row?.collation ? { serverCollation: row.collation } : {}),
  };
}

/** One table now, numbered after `previous` (its next version number, column ids after its last); undefined if it does not exist. */
export async function readTableVersion(conn: SqlConnection, table: TableRef, previous: SchemaVersion | undefined): Promise<SchemaVersion | undefined> {
  return (await readVersions(conn, [table], new Map(previous ? [[key(table), previous]] : [])))[0];
}

const key = (t: TableRef) => JSON.stringify([t.db, t.table]);

/** The tables' versions now (those that exist), each numbered after its entry in `previous`. */
export async function readVersions(conn: SqlConnection, tables: readonly TableRef[], previous: ReadonlyMap<string, SchemaVersion>): Promise<SchemaVersion[]> {
  const out: SchemaVersion[] = [];
  for (const table of tables) {
    const columns = await rows<InformationSchemaColumn & { EXTRA?: string; GENERATION_EXPRESSION?: string | null }>(
      conn,
      `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION,
              CHARACTER_SET_NAME, COLLATION_NAME, EXTRA, COLUMN_DEFAULT, GENERATION_EXPRESSION
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
      [table.db, table.table],
    );
    if (!columns.length) continue;
    const statistics = await rows<InformationSchemaIndexRow>(
      conn,
      `SELECT INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME, SUB_PART, INDEX_TYPE
         FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME = 'PRIMARY' DESC, NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX`,
      [table.db, table.table],
    );
    const [info] = await rows<{ TABLE_COLLATION: string | null; TABLE_TYPE: string | null }>(
      conn,
      'SELECT TABLE_COLLATION, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
      [table.db, table.table],
    );
    const before = previous.get(key(table));
    try {
      out.push(
        versionFromInformationSchema(
          { db: table.db, table: table.table, version: (before?.version ?? 0) + 1, firstId: (before?.lastColumnId ?? 0) + 1 },
          columns,
          statistics,
          info?.TABLE_COLLATION ?? null,
          info?.TABLE_TYPE === 'SYSTEM VERSIONED',
        ),
      );
    } catch (error) {
      // A column type the schema history cannot describe: the table's rows are still captured
      // (their values are exact), without a version; its DDL is unknown (re-copied, or DDL_UNKNOWN).
      if (!(error instanceof UnsupportedTypeError)) throw error;
    }
  }
  return out;
}

/**
 * The server's character sets: information_schema.CHARACTER_SETS, with the default collations
 * MariaDB 11.2+ sets by `character_set_collations` (SHOW VARIABLES lists nothing on other servers).
 */
export async function readCharsets(conn: SqlConnection): Promise<CharsetTable> {
  const sets = await rows<{ CHARACTER_SET_NAME: string; DEFAULT_COLLATE_NAME: string; MAXLEN: number | string }>(
    conn,
    'SELECT CHARACTER_SET_NAME, DEFAULT_COLLATE_NAME, MAXLEN FROM information_schema.CHARACTER_SETS',
  );
  const [chosen] = await rows<{ Value: string }>(conn, "SHOW VARIABLES LIKE 'character_set_collations'");
  return CharsetTable.fromServer(
    sets.map((r) => ({ charset: r.CHARACTER_SET_NAME, defaultCollation: r.DEFAULT_COLLATE_NAME, maxlen: Number(r.MAXLEN) })),
    chosen?.Value ?? '',
  );
}

/** Default collations of the databases (for CREATE TABLE without a charset). */
export async function databaseCollations(conn: SqlConnection): Promise<Map<string, string>> {
  const all = await rows<{ SCHEMA_NAME: string; DEFAULT_COLLATION_NAME: string }>(
    conn,
    'SELECT SCHEMA_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA',
  );
  return new Map(all.map((r) => [r.SCHEMA_NAME, r.DEFAULT_COLLATION_NAME]));
}

/** The statements (not BEGIN/COMMIT/XA control) logged in [from, to): DDL, or DML in statement format. */
export async function statementsBetween(conn: SqlConnection, from: BinlogPosition, to: BinlogPosition): Promise<{ db: string; query: string }[]> {
  const found: { db: string; query: string }[] = [];
  if (comparePositions(from, to) >= 0) return found;
  const files = (await binaryLogs(conn)).map((l) => l.file).filter((f) => comparePositions({ file: f, pos: 0 }, { file: from.file, pos: 0 }) >= 0);
  for (const file of files) {
    let pos = file === from.file ? from.pos : 4;
    for (;;) {
      const events = await rows<{ Pos: number | string; End_log_pos: number | string; Event_type: string; Info: string }>(
        conn,
        'SHOW BINLOG EVENTS IN ? FROM ? LIMIT 1000',
        [file, pos],
      );
      for (const e of events) {
        if (comparePositions({ file, pos: Number(e.Pos) }, to) >= 0) return found;
        if (e.Event_type !== 'Query') continue;
        // Info is "use `db`; <statement>" when the session had a default database.
        const m = /^use `((?:[^`]|``)*)`; ([\s\S]*)$/.exec(e.Info);
        const query = (m ? m[2] : e.Info) ?? '';
        if (/^(BEGIN|COMMIT|ROLLBACK|XA |SAVEPOINT)/i.test(query.trim())) continue;
        found.push({ db: m ? (m[1] ?? '').replaceAll('``', '`') : '', query });
      }
      if (events.length < 1000) break;
      // End_log_pos is the header's log_pos, the end offset modulo 4 GiB past 4 GiB; Pos is exact.
      const last = events[events.length - 1];
      pos = unwrapLogPos(Number(last?.End_log_pos), Number(last?.Pos));
    }
    if (file === to.file) break;
  }
  return found;
}

/**
 * The tables and databases the binlog creates between `from` and the server's position now, each
 * named by `tableKey`/its name. What the server describes of them now is what their last CREATE
 * made, not what was there at `from` (nothing, or a table dropped since), so a catalog for `from`
 * holds no version of them read from the server: their CREATE in the binlog gives the version,
 * with the charsets and keys it had then, and rows before a DROP of an earlier table of the name
 * take theirs from the TABLE_MAP. A statement the classifier cannot read leaves its tables as
 * they were (the server's version; a TABLE_MAP that disagrees is caught, schema-tracker.ts).
 */
export async function createdSince(
  conn: SqlConnection,
  from: BinlogPosition,
  context: Omit<ClassifyContext, 'defaultDb'>,
): Promise<{ tables: Set<string>; databases: Set<string> }> {
  const tables = new Set<string>();
  const databases = new Set<string>();
  for (const statement of await statementsBetween(conn, from, await masterPosition(conn))) {
    const result = await classifyDdl(statement.query, { ...context, defaultDb: statement.db });
    if (result.kind === 'database' && result.op === 'create') databases.add(result.db);
    if (result.kind !== 'tables') continue;
    for (const { table, change } of result.effects)
      if (['create', 'create-like', 'create-select', 'rename-in'].includes(change.kind)) tables.add(tableKey(table));
  }
  return { tables, databases };
}

/**
 * Every included table's version at a binlog position P the server is at: the structures read with
 * no statement logged between P and the end of the read (else read again), so no DDL can sit
 * between the versions and P. Returns P with them.
 */
export async function versionsNow(
  conn: SqlConnection,
  accept: (db: string, table: string) => boolean,
): Promise<{ position: BinlogPosition; versions: SchemaVersion[]; databases: Map<string, string> }> {
  for (let attempt = 0; ; attempt++) {
    const position = await masterPosition(conn);
    const tables = await listTables(conn, accept);
    const versions = await readVersions(conn, tables, new Map());
    const databases = await databaseCollations(conn);
    const after = await masterPosition(conn);
    const statements = await statementsBetween(conn, position, after);
    if (!statements.some((s) => !/^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(s.query)) || attempt >= 4) return { position, versions, databases };
  }
}
