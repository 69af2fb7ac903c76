import type { TableMetadata } from '../../lib/iceberg/files/metadata.ts';
import { quoted, type TestSource } from '../support/source.ts';

/*
 * MariaDB's side of the engines' comparison: each column through the documented type mapping
 * (docs/ICEBERG.md "Types") to the canonical text of its Iceberg type that test/engines/canon.py
 * gives every engine's values: ints and longs as integers, decimals as exact text at the scale,
 * float as the float32's shortest text, double as Python's repr, dates and timestamps as ISO with
 * microseconds (timestamptz in UTC, `+00:00`), binary as lowercase hex, strings as they are.
 */

/** A table's rows as canonical cells, in the order of `columns`. */
export interface CanonicalTable {
  readonly columns: readonly { readonly name: string; readonly type: string }[];
  /** Indexes of the key columns (the schema's identifier fields); empty for a keyless table. */
  readonly key: readonly number[];
  readonly rows: readonly (readonly (string | null)[])[];
  /** Columns whose Iceberg type is not the one the documented mapping gives their MariaDB type. */
  readonly typeErrors: readonly string[];
}

/** Python's repr of a double: the shortest round-trip digits, fixed from 1e-4 to below 1e16, else d.ddde±XX. */
export function pythonRepr(x: number): string {
  if (Object.is(x, -0)) return '-0.0';
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
  const [mantissa, exp] = x.toExponential().split('e') as [string, string];
  const e = Number(exp);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (e < -4 || e >= 16)
    return `${sign}${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ''}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  if (e < 0) return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  const whole = digits.padEnd(e + 1, '0');
  const fraction = digits.slice(e + 1);
  return `${sign}${whole.slice(0, e + 1)}.${fraction || '0'}`;
}

/** The float32 nearest `x`, as Python's repr of its shortest decimal text. */
export function float32Text(x: number): string {
  const f = Math.fround(x);
  for (let digits = 1; digits <= 9; digits++) {
    const text = f.toPrecision(digits);
    if (Math.fround(Number(text)) === f) return pythonRepr(Number(text));
  }
  return pythonRepr(f);
}

/** The Iceberg type the documented mapping gives a MariaDB column (information_schema's DATA_TYPE and COLUMN_TYPE). */
export function mappedType(dataType: string, columnType: string): string {
  const unsigned = columnType.includes('unsigned');
  switch (dataType) {
    case 'tinyint':
    case 'smallint':
    case 'mediumint':
    case 'year':
      return 'int';
    case 'int':
      return unsigned ? 'long' : 'int';
    case 'bigint':
      return unsigned ? 'decimal(20,0)' : 'long';
    case 'decimal': {
      const [, p, s] = /\((\d+),(\d+)\)/.exec(columnType) ?? [];
      return Number(p) <= 38 ? `decimal(${p},${s})` : 'string';
    }
    case 'float':
      return 'float';
    case 'double':
      return 'double';
    case 'bit':
      return /\(64\)/.test(columnType) ? 'decimal(20,0)' : 'long';
    case 'date':
      return 'date';
    case 'datetime':
      return 'timestamp';
    case 'timestamp':
      return 'timestamptz';
    case 'binary':
    case 'varbinary':
    case 'tinyblob':
    case 'blob':
    case 'mediumblob':
    case 'longblob':
    case 'geometry':
    case 'point':
    case 'linestring':
    case 'polygon':
      return 'binary';
    default:
      return 'string';
  }
}

/** The SELECT expression whose text the TypeScript side turns into the canonical cell. */
function expression(column: string, dataType: string, type: string): string {
  const c = quoted(column);
  if (dataType === 'bit') return `CAST(${c} + 0 AS CHAR)`;
  if (type === 'float') return `CAST(CAST(${c} AS DOUBLE) AS CHAR)`;
  if (type === 'date') return `DATE_FORMAT(${c}, '%Y-%m-%d')`;
  if (type === 'timestamp') return `DATE_FORMAT(${c}, '%Y-%m-%dT%H:%i:%s.%f')`;
  // The session's time zone is UTC (set before the SELECT).
  if (type === 'timestamptz') return `CONCAT(DATE_FORMAT(${c}, '%Y-%m-%dT%H:%i:%s.%f'), '+00:00')`;
  if (type === 'binary') return `LOWER(HEX(${c}))`;
  return `CAST(${c} AS CHAR)`;
}

const cell = (text: string | null, type: string) => {
  if (text === null) return null;
  if (type === 'float') return float32Text(Number(text));
  if (type === 'double') return pythonRepr(Number(text));
  return text;
};

/** MariaDB's table as canonical cells, its columns in the order and with the types of the Iceberg table's current schema. */
export async function mariadbTable(source: TestSource, table: string, metadata: TableMetadata): Promise<CanonicalTable> {
  const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  if (!schema) throw new Error(`${table}: the metadata has no current schema`);
  const info = await source.sql(
    'SELECT COLUMN_NAME AS name, DATA_TYPE AS dataType, COLUMN_TYPE AS columnType FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
    [source.db, table],
  );
  const byName = new Map(info.map((r) => [String(r.name), { dataType: String(r.dataType), columnType: String(r.columnType) }]));
  const typeErrors: string[] = [];
  const names = schema.fields.map((f) => f.name);
  if (JSON.stringify([...byName.keys()]) !== JSON.stringify(names))
    typeErrors.push(`columns: Iceberg ${JSON.stringify(names)}, MariaDB ${JSON.stringify([...byName.keys()])}`);
  const columns = schema.fields.map((f) => ({ name: f.name, type: String(f.type) }));
  for (const { name, type } of columns) {
    const mariadb = byName.get(name);
    if (mariadb && mappedType(mariadb.dataType, mariadb.columnType) !== type.replace(/\s/g, ''))
      typeErrors.push(`${name}: ${mariadb.columnType} is written as ${type}, the mapping says ${mappedType(mariadb.dataType, mariadb.columnType)}`);
  }
  const present = columns.filter((c) => byName.has(c.name));
  await source.sql("SET time_zone = '+00:00'");
  const select = present.map((c, i) => `${expression(c.name, byName.get(c.name)?.dataType as string, c.type)} AS c${i}`);
  const rows = await source.sql(`SELECT ${select.join(', ')} FROM ${quoted(source.db)}.${quoted(table)}`);
  const ids = schema['identifier-field-ids'] ?? [];
  return {
    columns,
    key: ids.map((id) => schema.fields.findIndex((f) => f.id === id)),
    rows: rows.map((r) =>
      columns.map((c) => {
        const i = present.indexOf(c);
        return i < 0 ? null : cell(r[`c${i}`] === null ? null : String(r[`c${i}`]), c.type);
      }),
    ),
    typeErrors,
  };
}

/** What one engine's read of a table has against MariaDB's. */
export interface Comparison {
  readonly engineRows: number;
  readonly mariadbRows: number;
  readonly cells: number;
  readonly differences: string[];
}

/** Compares rows cell by cell: keyed tables row by key, keyless ones as multisets of rows. */
export function compare(expected: CanonicalTable, actual: readonly (readonly (string | null)[])[]): Comparison {
  const differences: string[] = [...expected.typeErrors];
  const keyOf = (row: readonly (string | null)[]) => JSON.stringify(expected.key.length ? expected.key.map((i) => row[i]) : row);
  const group = (rows: readonly (readonly (string | null)[])[]) => {
    const groups = new Map<string, (readonly (string | null)[])[]>();
    for (const row of rows) groups.set(keyOf(row), [...(groups.get(keyOf(row)) ?? []), row]);
    return groups;
  };
  const mine = group(expected.rows);
  const theirs = group(actual);
  let cells = 0;
  for (const [key, rows] of mine) {
    const other = theirs.get(key) ?? [];
    if (other.length !== rows.length) differences.push(`${expected.key.length ? 'key' : 'row'} ${key}: ${rows.length} in MariaDB, ${other.length} read`);
    for (const [n, row] of rows.entries()) {
      const read = other[n];
      if (!read) continue;
      for (const [i, column] of expected.columns.entries()) {
        cells++;
        if (read[i] !== row[i])
          differences.push(`key ${key} column ${column.name} (${column.type}): read ${JSON.stringify(read[i])}, MariaDB ${JSON.stringify(row[i])}`);
      }
    }
  }
  for (const [key, rows] of theirs) if (!mine.has(key)) differences.push(`${expected.key.length ? 'key' : 'row'} ${key}: 0 in MariaDB, ${rows.length} read`);
  return { engineRows: actual.length, mariadbRows: expected.rows.length, cells, differences };
}
