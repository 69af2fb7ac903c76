import { formatName, formatTableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { rowProperty } from '../../format/event.ts';
import type { Column, ColumnKind, LogicalType } from '../../format/types.ts';
import { GEOMETRIES } from '../../schema/column-type.ts';
import type { SqlConnection } from './server.ts';

/** A table as the snapshot sees it: the same column kinds and type names the binlog path produces. */
export interface TableInfo {
  readonly db: string;
  readonly table: string;
  readonly columns: readonly Column[];
  /** Per column, the SQL expression that reads it (aliased to its name) as the encoder expects it. */
  readonly selects: readonly string[];
  /** Names of the key columns the snapshot pages by (the primary key, or a configured unique NOT NULL column); empty for a table without either. */
  readonly key: readonly string[];
  /** Per key column: the SQL expression a cursor value is bound with, so comparison happens in SQL with the column's type. */
  readonly keyParams: readonly string[];
  readonly estimatedRows: number;
}

interface ColumnRow {
  COLUMN_NAME: string;
  DATA_TYPE: string;
  COLUMN_TYPE: string;
  IS_NULLABLE: string;
  NUMERIC_PRECISION: string | number | null;
  NUMERIC_SCALE: string | number | null;
  DATETIME_PRECISION: string | number | null;
  /** `ROW START` / `ROW END` for a system-versioned table's declared period columns (MariaDB). */
  GENERATION_EXPRESSION?: string | null;
}

const INTEGERS = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'bigint']);
const LOGICAL = new Set<string>(['uuid', 'inet4', 'inet6'] satisfies LogicalType[]);
const id = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/**
 * Whether the server says `table` does not exist (ER_NO_SUCH_TABLE), as opposed to existing out of
 * the user's sight (ER_TABLEACCESS_DENIED) — information_schema cannot tell the two apart.
 */
export async function tableIsGone(conn: SqlConnection, table: { db: string; table: string }): Promise<boolean> {
  try {
    await conn.query(`SELECT 1 FROM ${id(table.db)}.${id(table.table)} LIMIT 0`);
    return false;
  } catch (error) {
    return (error as { errno?: number }).errno === 1146;
  }
}

/** Maps an INFORMATION_SCHEMA column to the format's kind and the binlog path's type name (binlog-columns.ts). */
function schemaColumn(row: ColumnRow): Column {
  const type = row.DATA_TYPE.toLowerCase();
  const unsigned = /\bunsigned\b/i.test(row.COLUMN_TYPE);
  const fsp = Number(row.DATETIME_PRECISION ?? 0);
  const of = (kind: ColumnKind, sqlType: string): Column => ({ name: row.COLUMN_NAME, kind, sqlType: unsigned ? `${sqlType} unsigned` : sqlType });
  if (INTEGERS.has(type)) return of('int', type);
  switch (type) {
    case 'decimal':
    case 'numeric':
      return of('decimal', `decimal(${row.NUMERIC_PRECISION},${row.NUMERIC_SCALE})`);
    case 'float':
      return of('float', 'float');
    case 'double':
    case 'real':
      return of('double', 'double');
    case 'year':
      return of('year', 'year');
    case 'uuid':
    case 'inet4':
    case 'inet6':
      return of(type, type);
    case 'bit':
      return of('bit', `bit(${row.NUMERIC_PRECISION})`);
    case 'date':
      return of('date', 'date');
    case 'datetime':
    case 'timestamp':
    case 'time':
      return { ...of(type, `${type}${fsp > 0 ? `(${fsp})` : ''}`), fsp };
    case 'char':
    case 'varchar':
    case 'enum':
    case 'set':
      return of('string', type);
    case 'tinytext':
    case 'text':
    case 'mediumtext':
    case 'longtext':
      return of('string', 'text');
    case 'json': // MySQL's binary JSON (MariaDB's JSON is a LONGTEXT); the binlog names it alike
      return of('string', 'json');
    case 'binary':
    case 'varbinary':
      return of('binary', type);
    case 'tinyblob':
    case 'blob':
    case 'mediumblob':
    case 'longblob':
      return of('binary', 'blob');
    case 'geomcollection': // MySQL 8's name; the binlog path names it as MariaDB does (binlog-columns.ts)
      return of('binary', 'geometrycollection');
    default:
      // The spatial types, and anything newer: the bytes as MariaDB stores them.
      return of('binary', type);
  }
}

/**
 * How the snapshot reads a column so that it arrives as the binlog carries it:
 * - spatial values as their stored bytes (SRID + WKB); mysql2 would parse them into objects;
 * - YEAR(2) as the full year: the column itself reads as two digits, and 2000 and the zero year
 *   both as 0, while YEAR() reads the stored byte as the binlog does (1900 for the zero year).
 */
function readOf(row: ColumnRow): string {
  const type = row.DATA_TYPE.toLowerCase();
  if (GEOMETRIES.has(type)) return `CAST(${id(row.COLUMN_NAME)} AS BINARY)`;
  if (type === 'year' && /^year\(2\)/i.test(row.COLUMN_TYPE)) return `YEAR(${id(row.COLUMN_NAME)})`;
  return id(row.COLUMN_NAME);
}

/** `expression AS property`: a row's value arrives under the column's `rowProperty`. */
export function selectAs(expression: string, name: string): string {
  const as = id(rowProperty(name));
  return expression === as ? expression : `${expression} AS ${as}`;
}

const selectOf = (row: ColumnRow) => selectAs(readOf(row), row.COLUMN_NAME);

/**
 * How a cursor value is bound: integers and decimals are cast so the comparison is exact, never via
 * DOUBLE. An unsigned one goes through CHAR first: in a prepared statement (the pages are read over
 * the binary protocol) MySQL 8.0 reads a string parameter of CAST(? AS UNSIGNED) as a signed
 * BIGINT, so every key from 2^63 up became 9223372036854775807 and those rows were never paged.
 */
function keyParam(column: Column, row: ColumnRow): string {
  if (column.kind === 'int') return /\bunsigned\b/i.test(row.COLUMN_TYPE) ? 'CAST(CAST(? AS CHAR) AS UNSIGNED)' : 'CAST(? AS SIGNED)';
  if (column.kind === 'decimal') return `CAST(? AS DECIMAL(${row.NUMERIC_PRECISION},${row.NUMERIC_SCALE}))`;
  return '?';
}

async function rows<T>(conn: SqlConnection, sql: string, values: unknown[]): Promise<T[]> {
  const [result] = await conn.query(sql, values);
  return result as T[];
}

/**
 * Reads a table's columns, key and row estimate. Without a primary key, `chunkColumn` is the key
 * (checked: unique and NOT NULL, or paging could skip or repeat rows), else `identity` (a UNIQUE
 * NOT NULL key the caller took from the table's schema version). A table with none has no key
 * (`key: []`).
 */
export async function tableInfo(conn: SqlConnection, db: string, table: string, chunkColumn?: string, identity?: readonly string[]): Promise<TableInfo> {
  const columnRows = await rows<ColumnRow>(
    conn,
    `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, GENERATION_EXPRESSION
       FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
    [db, table],
  );
  if (!columnRows.length)
    throw new SluiceError(
      ErrorCode.TABLE_NOT_FOUND,
      `table ${formatTableRef({ db, table })} does not exist or the sluice user cannot see it (GRANT SELECT ON ${formatName(db)}.* TO ...)`,
    );
  const primary = await rows<{ COLUMN_NAME: string }>(
    conn,
    `SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
      WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`,
    [db, table],
  );
  // A system-versioned table's keys end with its row end (hidden, so not among the columns, or
  // declared): every current row, all a snapshot reads, holds the same one, so it identifies nothing.
  let key = primary
    .map((r) => r.COLUMN_NAME)
    .filter((name) => columnRows.some((r) => r.COLUMN_NAME === name && r.GENERATION_EXPRESSION?.toUpperCase() !== 'ROW END'));
  if (!key.length && chunkColumn) {
    await checkChunkColumn(conn, db, table, chunkColumn, columnRows);
    key = [chunkColumn];
  } else if (!key.length && identity) key = [...identity];
  // No key at all: the table is a multiset of rows; the snapshot reads it whole at one point
  // (lib/snapshot/worker.ts) and readers identify its rows by their full image.
  const [estimate] = await rows<{ TABLE_ROWS: string | number | null }>(
    conn,
    'SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
    [db, table],
  );
  const columns = columnRows.map(schemaColumn);
  for (const name of key) {
    const row = columnRows.find((r) => r.COLUMN_NAME === name) as ColumnRow;
    // Pages resume after the last key read; a key read through an expression would not compare
    // with the column (MariaDB even orders YEAR(2) by its full year but compares its two digits).
    if (readOf(row) !== id(name))
      throw new SluiceError(
        ErrorCode.SNAPSHOT_BAD_KEY,
        `table ${formatTableRef({ db, table })} is keyed by ${formatName(name)} (${row.COLUMN_TYPE}), which the snapshot cannot page by (MariaDB orders YEAR(2) by the full year but compares two digits; spatial values have no usable order). Change the key (e.g. to YEAR) or exclude the table (SLUICE_EXCLUDE).`,
      );
  }
  return {
    db,
    table,
    columns,
    selects: columnRows.map(selectOf),
    key,
    keyParams: key.map((name) => {
      const index = columnRows.findIndex((r) => r.COLUMN_NAME === name);
      return keyParam(columns[index] as Column, columnRows[index] as ColumnRow);
    }),
    estimatedRows: Number(estimate?.TABLE_ROWS ?? 0),
  };
}

async function checkChunkColumn(conn: SqlConnection, db: string, table: string, column: string, columnRows: ColumnRow[]): Promise<void> {
  const info = columnRows.find((r) => r.COLUMN_NAME === column);
  const unique = await rows<{ INDEX_NAME: string }>(
    conn,
    `SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0
      GROUP BY INDEX_NAME HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = ?`,
    [db, table, column],
  );
  if (info?.IS_NULLABLE !== 'NO' || !unique.length) {
    throw new SluiceError(
      'SNAPSHOT_BAD_CHUNK_COLUMN',
      `the chunk column ${formatName(column)} of ${formatTableRef({ db, table })} must exist, be NOT NULL and carry a single-column UNIQUE index; otherwise paging could skip or repeat rows`,
    );
  }
}

/**
 * The table's UUID, INET4 and INET6 columns by name: MariaDB's binlog logs them as BINARY(n), so
 * the binlog path asks here which of its BINARY columns are these.
 */
export async function logicalTypes(conn: SqlConnection, db: string, table: string): Promise<Map<string, LogicalType>> {
  const found = await rows<{ COLUMN_NAME: string; DATA_TYPE: string }>(
    conn,
    'SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
    [db, table],
  );
  return new Map(found.filter((r) => LOGICAL.has(r.DATA_TYPE.toLowerCase())).map((r) => [r.COLUMN_NAME, r.DATA_TYPE.toLowerCase() as LogicalType]));
}

/** What information_schema.TABLES calls a table that holds rows: MariaDB lists a system-versioned one apart. */
export const ROW_TABLE_TYPES = ['BASE TABLE', 'SYSTEM VERSIONED'];

/** Base tables (system-versioned ones included) passing `accept`, by their two names. */
export async function listTables(conn: SqlConnection, accept: (db: string, table: string) => boolean): Promise<{ db: string; table: string }[]> {
  const all = await rows<{ TABLE_SCHEMA: string; TABLE_NAME: string }>(
    conn,
    "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_SCHEMA, TABLE_NAME",
    [],
  );
  return all.map((r) => ({ db: r.TABLE_SCHEMA, table: r.TABLE_NAME })).filter((t) => accept(t.db, t.table));
}
