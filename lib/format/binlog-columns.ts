import { MysqlType } from '../core/mysql-types.ts';
import type { Column, ColumnKind, LogicalType } from './types.ts';

/** The binlog TABLE_MAP's type codes. */
const T = MysqlType;

/** A column as the binlog's TABLE_MAP describes it: type code, charset (null = binary), metadata. */
export interface BinlogColumn {
  name: string;
  type: number;
  charset?: string | null;
  metadata?: Record<string, number> | null;
}

/** MariaDB's names of the spatial types, by the binlog's GEOMETRY_TYPE metadata (Field_geom::geometry_type). */
const SPATIAL = ['geometry', 'point', 'linestring', 'polygon', 'multipoint', 'multilinestring', 'multipolygon', 'geometrycollection'];

/** What a column's definition adds: information_schema's row, or one built from FULL metadata. */
export interface ColumnDefinition {
  COLUMN_TYPE?: string;
  ENUM_VALUES?: string[];
  SET_VALUES?: string[];
}

/** What the TABLE_MAP says about a column besides its type, charset and metadata. */
export interface ColumnFacts {
  unsigned?: boolean;
  /** The binlog's GEOMETRY_TYPE, for spatial columns. */
  geometryType?: number;
  schema?: ColumnDefinition;
}

/**
 * Fraction digits of a temporal column. MariaDB 5.3-format columns (tables from before 10.0 never
 * rebuilt, or made with mysql56_temporal_format=OFF) use the classic type codes with no metadata;
 * only the definition tells ("time(3)" plus a mariadb-5.3 comment), and values are read by it too.
 */
export function fractionDigits(type: number, metadata: BinlogColumn['metadata'], schema: ColumnDefinition | undefined): number {
  if (type === T.TIME || type === T.DATETIME || type === T.TIMESTAMP) return Number(/^\w+\((\d)\)/.exec(schema?.COLUMN_TYPE ?? '')?.[1] ?? 0);
  return metadata?.decimals ?? 0;
}

/**
 * Maps a binlog column to the format's kind and the type name information_schema gives (the
 * snapshot's), so both paths write the same manifests. Binary vs text is told by the charset (null =
 * binary).
 */
export function binlogColumn(column: BinlogColumn, facts: ColumnFacts = {}): Column {
  const { type, charset, metadata: m } = column;
  const text = charset !== null && charset !== undefined;
  const temporal = type === T.DATETIME || type === T.DATETIME2 || type === T.TIMESTAMP || type === T.TIMESTAMP2 || type === T.TIME || type === T.TIME2;
  const fsp = temporal ? fractionDigits(type, m, facts.schema) : 0;
  const fraction = fsp ? `(${fsp})` : '';
  const of = (kind: ColumnKind, sqlType: string): Column => ({
    name: column.name,
    kind,
    // YEAR is flagged unsigned in the binlog, but information_schema does not say so.
    sqlType: facts.unsigned && type !== T.YEAR ? `${sqlType} unsigned` : sqlType,
    ...(temporal ? { fsp } : {}),
  });
  switch (type) {
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
      return of('datetime', `datetime${fraction}`);
    case T.TIMESTAMP:
    case T.TIMESTAMP2:
      return of('timestamp', `timestamp${fraction}`);
    case T.TIME:
    case T.TIME2:
      return of('time', `time${fraction}`);
    case T.ENUM:
      return of('string', 'enum');
    case T.SET:
      return of('string', 'set');
    case T.JSON:
      return of('string', 'json');
    case T.VARCHAR:
    case T.VAR_STRING:
    case T.VARCHAR_COMPRESSED:
      return text ? of('string', 'varchar') : of('binary', 'varbinary');
    case T.STRING:
      return text ? of('string', 'char') : of('binary', 'binary');
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB:
    case T.BLOB_COMPRESSED:
      return text ? of('string', 'text') : of('binary', 'blob');
    case T.GEOMETRY:
      return of('binary', SPATIAL[facts.geometryType ?? 0] ?? 'geometry');
    case T.VECTOR:
      return of('binary', m?.dimensions === undefined ? 'vector' : `vector(${m.dimensions})`);
    default:
      return of('string', `type${type}`);
  }
}

/**
 * Appends everything binlogColumn and the reader's raw-value plan (source/mysql/binlog/raw-values.ts)
 * read of a column to `out`: a table's shape and its decoders are rebuilt only when these values
 * change, not at each of its TABLE_MAPs. Compared value by value (no text is built: a TABLE_MAP
 * comes with every transaction that writes the table).
 */
export function pushColumnFacts(
  out: unknown[],
  column: BinlogColumn,
  unsigned: boolean,
  geometryType: number | undefined,
  schema: ColumnDefinition | undefined,
  hasLabels: boolean,
): void {
  const { type, charset, metadata: m } = column;
  const classic = type === T.TIME || type === T.DATETIME || type === T.TIMESTAMP ? schema?.COLUMN_TYPE : '';
  out.push(column.name, type, charset, unsigned, geometryType, m?.decimals, m?.precision, m?.bits, m?.max_length, hasLabels, classic, m?.dimensions);
}

const LOGICAL_WIDTH: Record<LogicalType, number> = { uuid: 16, inet4: 4, inet6: 16 };

/** Whether the column may be a UUID, INET4 or INET6 (a BINARY(4) or BINARY(16) in the binlog). */
export function maybeLogical(column: BinlogColumn): boolean {
  const { type, charset, metadata } = column;
  return type === T.STRING && (charset === null || charset === undefined) && (metadata?.max_length === 4 || metadata?.max_length === 16);
}

/** The column as the logical type information_schema names, if its binlog shape can hold it. */
export function withLogicalType(column: Column, binlog: BinlogColumn, logical: LogicalType | undefined): Column {
  if (!logical || !maybeLogical(binlog) || binlog.metadata?.max_length !== LOGICAL_WIDTH[logical]) return column;
  return { name: column.name, kind: logical, sqlType: logical };
}

/**
 * MySQL's TIME2 bytes as MariaDB prints them: "[-]HH:MM:SS[.f]" with `fsp` digits
 * (my_time_packed_from_binary, then TIME_from_longlong_time_packed).
 */
export function time2Text(bytes: Buffer, fsp: number): string {
  let packed: number; // (hms << 24) + microseconds, negative for negative times
  const intPart = bytes.readUIntBE(0, 3) - 0x800000;
  if (fsp >= 5) packed = bytes.readUIntBE(0, 6) - 0x800000000000;
  else if (fsp >= 1) {
    const width = fsp <= 2 ? 1 : 2;
    let frac = bytes.readUIntBE(3, width);
    let whole = intPart;
    // Negative values store the fraction's complement, for binary sort order.
    if (whole < 0 && frac) {
      whole++;
      frac -= 2 ** (8 * width);
    }
    packed = whole * 2 ** 24 + frac * (fsp <= 2 ? 10_000 : 100);
  } else packed = intPart * 2 ** 24;
  const negative = packed < 0;
  const magnitude = Math.abs(packed);
  const hms = Math.floor(magnitude / 2 ** 24);
  const micros = magnitude % 2 ** 24;
  const two = (n: number) => String(n).padStart(2, '0');
  const text = `${negative ? '-' : ''}${two((hms >> 12) % 1024)}:${two((hms >> 6) % 64)}:${two(hms % 64)}`;
  return fsp ? `${text}.${String(micros).padStart(6, '0').slice(0, fsp)}` : text;
}

const char = String.fromCharCode;
const digit = (n: number) => 48 + n;

/** `n` (0–99) as two digits. */
const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/**
 * `.` and the `fsp` fraction digits stored after a DATETIME2/TIMESTAMP2/TIME2's whole seconds:
 * ceil(fsp / 2) big-endian bytes, holding the fraction times 10 when fsp is odd. Empty for fsp 0.
 */
function fractionText(bytes: Buffer, at: number, fsp: number): string {
  if (!fsp) return '';
  const width = (fsp + 1) >> 1;
  let value = bytes.readUIntBE(at, width);
  if (fsp & 1) value = Math.floor(value / 10);
  return `.${String(value).padStart(fsp, '0')}`;
}

/** `YYYY-MM-DD HH:MM:SS` from its parts, each in range, as one flat string (no concatenation). */
function dateTimeText(year: number, month: number, day: number, hour: number, minute: number, second: number): string {
  if (year > 9999 || month > 99 || day > 99 || hour > 99) {
    // Cannot come from a valid value; spelled as the binlog's value reader spells it (the last four digits of the year).
    return `${String(year).padStart(4, '0').slice(-4)}-${two(month)}-${two(day)} ${two(hour)}:${two(minute)}:${two(second)}`;
  }
  return char(
    digit(Math.floor(year / 1000)),
    digit(Math.floor(year / 100) % 10),
    digit(Math.floor(year / 10) % 10),
    digit(year % 10),
    45,
    digit(Math.floor(month / 10)),
    digit(month % 10),
    45,
    digit(Math.floor(day / 10)),
    digit(day % 10),
    32,
    digit(Math.floor(hour / 10)),
    digit(hour % 10),
    58,
    digit(Math.floor(minute / 10)),
    digit(minute % 10),
    58,
    digit(Math.floor(second / 10)),
    digit(second % 10),
  );
}

/**
 * DATETIME2 bytes as MariaDB prints them, "YYYY-MM-DD HH:MM:SS[.f]" with `fsp` digits: 5 bytes
 * big-endian, a sign bit (always set), year × 13 + month in 17 bits, day 5, hour 5, minute 6,
 * second 6 (TIME_from_longlong_datetime_packed); then the fraction. Zero dates stay zero.
 */
export function datetime2Text(bytes: Buffer, fsp: number): string {
  const yearMonth = (((bytes[0] as number) & 0x7f) << 10) | ((bytes[1] as number) << 2) | ((bytes[2] as number) >> 6);
  const rest = (((bytes[2] as number) & 0x3f) << 16) | ((bytes[3] as number) << 8) | (bytes[4] as number);
  const text = dateTimeText(Math.floor(yearMonth / 13), yearMonth % 13, rest >> 17, (rest >> 12) & 31, (rest >> 6) & 63, rest & 63);
  return fsp ? text + fractionText(bytes, 5, fsp) : text;
}

/**
 * TIMESTAMP2 bytes as the binlog's value reader prints them with timezone 'Z': 4 bytes big-endian seconds since the
 * epoch (unsigned: MariaDB 11.5 stores instants up to 2106), then the fraction, as UTC
 * "YYYY-MM-DD HH:MM:SS[.f]"; the zero timestamp (0 seconds, zero fraction) as "0000-00-00 00:00:00[.0…]".
 */
export function timestamp2Text(bytes: Buffer, fsp: number): string {
  const seconds = bytes.readUInt32BE(0);
  const fraction = fractionText(bytes, 4, fsp);
  if (seconds === 0 && !/[1-9]/.test(fraction)) return `0000-00-00 00:00:00${fraction}`;
  // Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's civil_from_days).
  const days = Math.floor(seconds / 86_400);
  const time = seconds - days * 86_400;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const text = dateTimeText(year, month, day, Math.floor(time / 3600), Math.floor(time / 60) % 60, time % 60);
  return fsp ? text + fraction : text;
}

/** Bytes of a DECIMAL's group of fewer than 9 digits (dig2bytes in MySQL's decimal.c). */
const DIGIT_BYTES = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4] as const;

/** Bytes of a DECIMAL(precision, scale) value in the binlog (decimal_bin_size). */
export function decimalSize(precision: number, scale: number): number {
  const integral = precision - scale;
  return Math.floor(integral / 9) * 4 + (DIGIT_BYTES[integral % 9] ?? 0) + Math.floor(scale / 9) * 4 + (DIGIT_BYTES[scale % 9] ?? 0);
}

/**
 * NEWDECIMAL bytes as MariaDB prints them (decimal2bin's layout read back): groups of 9 digits in
 * 4 bytes big-endian, a shorter leading (integral) and trailing (fraction) group in fewer; a
 * negative value is stored with every bit inverted; the first bit is flipped (set when positive).
 * Leading zeros of the integral part are dropped (one digit kept), the fraction has `scale` digits.
 */
export function decimalText(bytes: Buffer, precision: number, scale: number): string {
  const integral = precision - scale;
  const negative = ((bytes[0] as number) & 0x80) === 0;
  const mask = negative ? 0xff : 0;
  let at = 0;
  const group = (width: number) => {
    let value = 0;
    for (let end = at + width; at < end; at++) value = value * 256 + (((bytes[at] as number) ^ mask ^ (at === 0 ? 0x80 : 0)) & 0xff);
    return value;
  };
  // Up to 15 integral digits are exact as one number, which drops the leading zeros by itself.
  const leading = integral % 9;
  let whole: string;
  if (integral <= 15) {
    let value = group(DIGIT_BYTES[leading] ?? 0);
    for (let i = Math.floor(integral / 9); i > 0; i--) value = value * 1e9 + group(4);
    whole = String(value);
  } else {
    whole = String(group(DIGIT_BYTES[leading] ?? 0));
    for (let i = Math.floor(integral / 9); i > 0; i--) whole += String(group(4)).padStart(9, '0');
    whole = whole.replace(/^0+(?=\d)/, '');
  }
  let text = negative ? `-${whole}` : whole;
  if (!scale) return text;
  text += '.';
  for (let i = Math.floor(scale / 9); i > 0; i--) text += String(group(4)).padStart(9, '0');
  const trailing = scale % 9;
  if (trailing) text += String(group(DIGIT_BYTES[trailing] ?? 0)).padStart(trailing, '0');
  return text;
}

/** A classic (fsp 0, pre-5.6.4 / MariaDB 5.3-format) TIME: ±HHMMSS in 3 bytes, little-endian. */
export function classicTimeText(bytes: Buffer): string {
  const value = bytes.readIntLE(0, 3);
  const magnitude = Math.abs(value);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${value < 0 ? '-' : ''}${two(Math.floor(magnitude / 10_000))}:${two(Math.floor(magnitude / 100) % 100)}:${two(magnitude % 100)}`;
}
