import type { Column } from '../../format/types.ts';

/**
 * How a sluice column (docs/FORMAT.md value encoding) becomes an Iceberg column. Values reach the
 * writer as the change log's JSON text, read by DuckDB: `json` is the DuckDB type the JSON value is
 * parsed as (exact: integers as BIGINT/UBIGINT, decimals and temporals as their text), `duck` the
 * DuckDB type written to Parquet, which DuckDB maps to the Parquet type the spec asks for `iceberg`.
 * docs/ICEBERG.md has the same table for users; a unit test keeps the two equal.
 */
export interface TypeMapping {
  /** Iceberg type, as serialized in table metadata (`long`, `decimal(20,0)`, ...). */
  readonly iceberg: string;
  /** DuckDB type of the Parquet column. */
  readonly duck: string;
  /** DuckDB type read_json parses the sluice JSON value as. */
  readonly json: string;
  /** SQL turning the parsed JSON value `expr` into `duck`; NULL where Iceberg has no such value. */
  convert(expr: string): string;
  /** True when a non-null source value can become NULL (MySQL zero dates): counted and reported. */
  readonly lossy?: boolean;
}

const cast = (duck: string) => (expr: string) => `CAST(${expr} AS ${duck})`;
const same = (expr: string) => expr;

function of(iceberg: string, duck: string, json: string, convert: (expr: string) => string, lossy = false): TypeMapping {
  return { iceberg, duck, json, convert, ...(lossy ? { lossy } : {}) };
}

const INT = of('int', 'INTEGER', 'BIGINT', cast('INTEGER'));
const LONG = of('long', 'BIGINT', 'BIGINT', same);
const UNSIGNED_64 = of('decimal(20,0)', 'DECIMAL(20,0)', 'UBIGINT', cast('DECIMAL(20,0)'));
const STRING = of('string', 'VARCHAR', 'VARCHAR', same);

/** The Iceberg column for a sluice column description. */
export function typeMapping(column: Pick<Column, 'kind' | 'sqlType'>): TypeMapping {
  const sqlType = column.sqlType.toLowerCase();
  const unsigned = /\bunsigned\b/.test(sqlType);
  const base = sqlType.replace(/\s*unsigned\b/, '').trim();
  switch (column.kind) {
    case 'int':
      // MySQL INT UNSIGNED reaches 4294967295 and BIGINT UNSIGNED 2^64-1: each needs the next wider type.
      if (base === 'bigint') return unsigned ? UNSIGNED_64 : LONG;
      if (base === 'int' || base === 'integer') return unsigned ? LONG : INT;
      return INT; // tinyint, smallint, mediumint: signed or not, they fit 32 bits
    case 'year':
      return INT;
    case 'bit': {
      const bits = Number(/\((\d+)\)/.exec(base)?.[1] ?? 64);
      return bits <= 63 ? of('long', 'BIGINT', 'UBIGINT', cast('BIGINT')) : UNSIGNED_64;
    }
    case 'decimal': {
      const match = /\((\d+)\s*,\s*(\d+)\)/.exec(base);
      const precision = Number(match?.[1] ?? 10);
      const scale = Number(match?.[2] ?? 0);
      // Iceberg decimals stop at 38 digits; MySQL's go to 65: those keep their exact text.
      if (precision > 38) return STRING;
      return of(`decimal(${precision},${scale})`, `DECIMAL(${precision},${scale})`, 'VARCHAR', cast(`DECIMAL(${precision},${scale})`));
    }
    case 'float':
      // The JSON holds the shortest text that reads back as the stored float32: DOUBLE → FLOAT is exact.
      return of('float', 'FLOAT', 'DOUBLE', cast('FLOAT'));
    case 'double':
      return of('double', 'DOUBLE', 'DOUBLE', same);
    case 'date':
      return of('date', 'DATE', 'VARCHAR', (expr) => `TRY_CAST(${expr} AS DATE)`, true);
    case 'datetime':
      return of('timestamp', 'TIMESTAMP', 'VARCHAR', (expr) => `TRY_CAST(${expr} AS TIMESTAMP)`, true);
    case 'timestamp':
      return of('timestamptz', 'TIMESTAMPTZ', 'VARCHAR', (expr) => `TRY_CAST(${expr} AS TIMESTAMPTZ)`, true);
    case 'time':
      // MySQL TIME spans -838:59:59 .. 838:59:59 (a duration); Iceberg time is a time of day.
      return STRING;
    case 'binary':
      return of('binary', 'BLOB', 'VARCHAR', (expr) => `from_base64(${expr})`);
    default:
      return STRING;
  }
}

/** DuckDB type of an Iceberg primitive type (what a Parquet column of that type reads as). */
export function duckTypeOf(iceberg: string): string {
  const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(iceberg);
  if (decimal) return `DECIMAL(${decimal[1]},${decimal[2]})`;
  const types: Record<string, string> = {
    boolean: 'BOOLEAN',
    int: 'INTEGER',
    long: 'BIGINT',
    float: 'FLOAT',
    double: 'DOUBLE',
    date: 'DATE',
    time: 'TIME',
    timestamp: 'TIMESTAMP',
    timestamptz: 'TIMESTAMPTZ',
    string: 'VARCHAR',
    binary: 'BLOB',
  };
  const duck = types[iceberg];
  if (!duck) throw new Error(`Iceberg type ${iceberg} is not one sluice writes`);
  return duck;
}

/** Whether the spec lets a column of type `from` be read as `to` (v2 promotions; same type included). */
export function canPromote(from: string, to: string): boolean {
  if (from === to) return true;
  if (from === 'int' && to === 'long') return true;
  if (from === 'float' && to === 'double') return true;
  const a = /^decimal\((\d+),(\d+)\)$/.exec(from);
  const b = /^decimal\((\d+),(\d+)\)$/.exec(to);
  return !!a && !!b && a[2] === b[2] && Number(b[1]) > Number(a[1]);
}
