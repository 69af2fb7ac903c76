import type { Column, ColumnKind } from './types.ts';

/** MySQL protocol type codes as they appear in binlog TABLE_MAP events. */
const T = {
  DECIMAL: 0,
  TINY: 1,
  SHORT: 2,
  LONG: 3,
  FLOAT: 4,
  DOUBLE: 5,
  TIMESTAMP: 7,
  LONGLONG: 8,
  INT24: 9,
  DATE: 10,
  TIME: 11,
  DATETIME: 12,
  YEAR: 13,
  NEWDATE: 14,
  VARCHAR: 15,
  BIT: 16,
  TIMESTAMP2: 17,
  DATETIME2: 18,
  TIME2: 19,
  JSON: 245,
  NEWDECIMAL: 246,
  ENUM: 247,
  SET: 248,
  TINY_BLOB: 249,
  MEDIUM_BLOB: 250,
  LONG_BLOB: 251,
  BLOB: 252,
  VAR_STRING: 253,
  STRING: 254,
  GEOMETRY: 255,
} as const;

/** A column as zongji describes it in `tableMap[id].columns`. */
export interface ZongjiColumn {
  name: string;
  type: number;
  charset?: string | null;
  metadata?: Record<string, number> | null;
}

function fraction(metadata: ZongjiColumn['metadata']): string {
  const decimals = metadata?.decimals ?? 0;
  return decimals > 0 ? `(${decimals})` : '';
}

/** Maps a binlog column to the format's kind; binary vs text is told by the charset (null = binary). */
export function binlogColumn(column: ZongjiColumn, unsigned = false): Column {
  const m = column.metadata;
  const text = column.charset !== null && column.charset !== undefined;
  const temporal =
    column.type === T.DATETIME ||
    column.type === T.DATETIME2 ||
    column.type === T.TIMESTAMP ||
    column.type === T.TIMESTAMP2 ||
    column.type === T.TIME ||
    column.type === T.TIME2;
  const of = (kind: ColumnKind, sqlType: string): Column => ({
    name: column.name,
    kind,
    sqlType: unsigned ? `${sqlType} unsigned` : sqlType,
    ...(temporal ? { fsp: m?.decimals ?? 0 } : {}),
  });
  switch (column.type) {
    case T.TINY:
      return of('int', 'tinyint');
    case T.SHORT:
      return of('int', 'smallint');
    case T.INT24:
      return of('int', 'mediumint');
    case T.LONG:
      return of('int', 'int');
    case T.LONGLONG:
      return of('int', 'bigint');
    case T.DECIMAL:
    case T.NEWDECIMAL:
      return of('decimal', `decimal(${m?.precision},${m?.decimals})`);
    case T.FLOAT:
      return of('float', 'float');
    case T.DOUBLE:
      return of('double', 'double');
    case T.YEAR:
      return of('year', 'year');
    case T.BIT:
      return of('bit', `bit(${m?.bits})`);
    case T.DATE:
    case T.NEWDATE:
      return of('date', 'date');
    case T.DATETIME:
    case T.DATETIME2:
      return of('datetime', `datetime${fraction(m)}`);
    case T.TIMESTAMP:
    case T.TIMESTAMP2:
      return of('timestamp', `timestamp${fraction(m)}`);
    case T.TIME:
    case T.TIME2:
      return of('time', `time${fraction(m)}`);
    case T.ENUM:
      return of('string', 'enum');
    case T.SET:
      return of('string', 'set');
    case T.JSON:
      return of('string', 'json');
    case T.VARCHAR:
    case T.VAR_STRING:
      return text ? of('string', 'varchar') : of('binary', 'varbinary');
    case T.STRING:
      return text ? of('string', 'char') : of('binary', 'binary');
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB:
      return text ? of('string', 'text') : of('binary', 'blob');
    case T.GEOMETRY:
      return of('binary', 'geometry');
    default:
      return of('string', `type${column.type}`);
  }
}
