import { MysqlType } from '../core/mysql-types.ts';
import type { Column, ColumnKind, LogicalType } from './types.ts';

/** The binlog TABLE_MAP's type codes. */
const T = MysqlType;

/** A column as zongji describes it in `tableMap[id].columns`. */
export interface ZongjiColumn {
  name: string;
  type: number;
  charset?: string | null;
  metadata?: Record<string, number> | null;
  /** What the column was before `rawBinlogValues` retyped it (see there). */
  sluiceOriginal?: { type: number; charset: string | null | undefined; metadata: ZongjiColumn['metadata'] };
}

/** The column as the binlog describes it, whether or not `rawBinlogValues` has retyped it since. */
const original = (column: ZongjiColumn) => column.sluiceOriginal ?? column;

/** MariaDB's names of the spatial types, by the binlog's GEOMETRY_TYPE metadata (Field_geom::geometry_type). */
const SPATIAL = ['geometry', 'point', 'linestring', 'polygon', 'multipoint', 'multilinestring', 'multipolygon', 'geometrycollection'];

/** zongji's per-column schema (information_schema's row, or one built from FULL metadata). */
export interface ZongjiColumnSchema {
  COLUMN_TYPE?: string;
  ENUM_VALUES?: string[];
  SET_VALUES?: string[];
}

/** What the TABLE_MAP says about a column besides zongji's descriptor. */
export interface ColumnFacts {
  unsigned?: boolean;
  /** The binlog's GEOMETRY_TYPE, for spatial columns. */
  geometryType?: number;
  schema?: ZongjiColumnSchema;
}

/**
 * Fraction digits of a temporal column. MariaDB 5.3-format columns (tables from before 10.0 never
 * rebuilt, or made with mysql56_temporal_format=OFF) use the classic type codes with no metadata;
 * only the definition tells ("time(3)" plus a mariadb-5.3 comment), and zongji reads values by it too.
 */
function fractionDigits(type: number, metadata: ZongjiColumn['metadata'], schema: ZongjiColumnSchema | undefined): number {
  if (type === T.TIME || type === T.DATETIME || type === T.TIMESTAMP) return Number(/^\w+\((\d)\)/.exec(schema?.COLUMN_TYPE ?? '')?.[1] ?? 0);
  return metadata?.decimals ?? 0;
}

/**
 * Maps a binlog column to the format's kind and the type name information_schema gives (the
 * snapshot's), so both paths write the same manifests. Binary vs text is told by the charset (null =
 * binary).
 */
export function binlogColumn(column: ZongjiColumn, facts: ColumnFacts = {}): Column {
  const { type, charset, metadata: m } = original(column);
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
 * Appends everything binlogColumn and rawBinlogValues read of a column to `out`: a table's shape and
 * its decoders are rebuilt only when these values change, not at each of its TABLE_MAPs. Compared
 * value by value (no text is built: a TABLE_MAP comes with every transaction that writes the table).
 */
export function pushColumnFacts(
  out: unknown[],
  column: ZongjiColumn,
  unsigned: boolean,
  geometryType: number | undefined,
  schema: ZongjiColumnSchema | undefined,
  hasLabels: boolean,
): void {
  const { type, charset, metadata: m } = original(column);
  const classic = type === T.TIME || type === T.DATETIME || type === T.TIMESTAMP ? schema?.COLUMN_TYPE : '';
  out.push(column.name, type, charset, unsigned, geometryType, m?.decimals, m?.precision, m?.bits, m?.max_length, hasLabels, classic, m?.dimensions);
}

const LOGICAL_WIDTH: Record<LogicalType, number> = { uuid: 16, inet4: 4, inet6: 16 };

/** Whether the column may be a UUID, INET4 or INET6 (a BINARY(4) or BINARY(16) in the binlog). */
export function maybeLogical(column: ZongjiColumn): boolean {
  const { type, charset, metadata } = original(column);
  return type === T.STRING && (charset === null || charset === undefined) && (metadata?.max_length === 4 || metadata?.max_length === 16);
}

/** The column as the logical type information_schema names, if its binlog shape can hold it. */
export function withLogicalType(column: Column, binlog: ZongjiColumn, logical: LogicalType | undefined): Column {
  if (!logical || !maybeLogical(binlog) || original(binlog).metadata?.max_length !== LOGICAL_WIDTH[logical]) return column;
  return { name: column.name, kind: logical, sqlType: logical };
}

/** Converts one zongji value of a column into what the format's encoder expects. */
export type BinlogDecoder = (value: unknown) => unknown;

/**
 * How a column's zongji values are made exact (see rawBinlogValues): what to change in zongji's
 * descriptors at every TABLE_MAP, and how to read the values it then gives.
 */
export interface RawValues {
  /** zongji's descriptor becomes this, so it hands over raw bytes. */
  readonly retype?: Pick<ZongjiColumn, 'type' | 'charset' | 'metadata'>;
  /** zongji's ENUM/SET labels become the raw label bytes (one char per byte). */
  readonly rawLabels?: boolean;
  readonly decode?: BinlogDecoder;
  /** `decode` yields ServerText, which the server must convert before the value is encoded. */
  readonly byServer?: boolean;
}

/** Text in a charset only the server decodes exactly: its bytes, to be converted by the server. */
export class ServerText {
  constructor(
    readonly bytes: Buffer,
    readonly charset: string,
  ) {}
}

/** MariaDB's latin1 is cp1252 with its five holes (0x81 0x8D 0x8F 0x90 0x9D) read as the C1 controls. */
const CP1252_HIGH = '€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8DŽ\x8F\x90‘’“”•–—˜™š›œ\x9DžŸ';
const latin1Text = (raw: string) => raw.replace(/[\x80-\x9f]/g, (ch) => CP1252_HIGH[ch.charCodeAt(0) - 0x80] as string);

/** Charsets zongji decodes exactly as the server does (Unicode; the differential type test checks them). */
const EXACT = new Set(['utf8', 'utf8mb3', 'utf8mb4', 'utf16', 'utf16le', 'utf32', 'ucs2', 'binary']);

/** ascii bytes above 0x7F: zongji (iconv) gives U+FFFD, the server prints '?'. */
const asciiText = (value: unknown) => (typeof value === 'string' && value.includes('\uFFFD') ? value.replaceAll('\uFFFD', '?') : value);

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
    // Cannot come from a valid value; spelled as zongji would (the last four digits of the year).
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
 * TIMESTAMP2 bytes as zongji printed them with timezone 'Z': 4 bytes big-endian seconds since the
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

/** ENUM's invalid value (index 0) is undefined from zongji, '' from the server. */
const orBlank =
  (decode: BinlogDecoder): BinlogDecoder =>
  (value) =>
    value === undefined ? '' : decode(value);
const enumAsIs = orBlank((value) => value);
const classicTime: BinlogDecoder = (value) => (Buffer.isBuffer(value) ? classicTimeText(value) : value);
const time2Decoder =
  (fsp: number): BinlogDecoder =>
  (value) =>
    Buffer.isBuffer(value) ? time2Text(value, fsp) : value;
const time2 = [0, 1, 2, 3, 4, 5, 6].map(time2Decoder);
const datetime2 = [0, 1, 2, 3, 4, 5, 6].map(
  (fsp): BinlogDecoder =>
    (value) =>
      Buffer.isBuffer(value) ? datetime2Text(value, fsp) : value,
);
const timestamp2 = [0, 1, 2, 3, 4, 5, 6].map(
  (fsp): BinlogDecoder =>
    (value) =>
      Buffer.isBuffer(value) ? timestamp2Text(value, fsp) : value,
);
const decimals = new Map<string, BinlogDecoder>();
/** The decoder of a DECIMAL(precision, scale), made once per type. */
function decimalDecoder(precision: number, scale: number): BinlogDecoder {
  const type = `${precision},${scale}`;
  let decode = decimals.get(type);
  if (!decode) {
    decode = (value) => (Buffer.isBuffer(value) ? decimalText(value, precision, scale) : value);
    decimals.set(type, decode);
  }
  return decode;
}
/** zongji's descriptor of a column it is to hand over as `bytes` raw bytes (a BIT of that width). */
const rawBytes = (charset: ZongjiColumn['charset'], bytes: number) => ({ type: T.BIT, charset, metadata: { bits: 8 * bytes } });
const latin1: BinlogDecoder = (value) => (typeof value === 'string' ? latin1Text(value) : value);
const serverDecoders = new Map<string, BinlogDecoder>();
/** zongji's one-char-per-byte string back to bytes, for the server to convert. */
function serverText(charset: string): BinlogDecoder {
  let decode = serverDecoders.get(charset);
  if (!decode) {
    decode = (value) => (typeof value === 'string' ? new ServerText(Buffer.from(value, 'latin1'), charset) : value);
    serverDecoders.set(charset, decode);
  }
  return decode;
}

/**
 * Where zongji's decoding of a column loses information, says how to make zongji hand over the
 * raw bytes and how to read them the server's way:
 * - GEOMETRY: zongji parses it into {x, y} objects, dropping the SRID; retyped as a BLOB, the value
 *   is the bytes MariaDB stores (4-byte little-endian SRID, then WKB).
 * - TIME2, and the classic TIME of old tables: zongji mis-borrows negative values ("-01:00:00"
 *   comes out as "-00:63:64" or "-00:99:00"); retyped as a BIT of the same width, the bytes are
 *   decoded here.
 * - Text in other charsets than Unicode: zongji decodes it with iconv, whose tables differ from
 *   the server's (latin1's five holes, sjis's wave dash, swe7, …). Retyped to iconv's 'binary' (one
 *   char per byte), latin1 is decoded here and the rest by the server (ServerText); ascii keeps
 *   zongji's decoding, with the server's '?' for bytes above 0x7F. ENUM/SET labels in such
 *   charsets are swapped for the TABLE_MAP's raw label bytes (FULL metadata) the same way.
 * - ENUM: zongji gives undefined for the invalid value (index 0), which the server prints as ''.
 * - DATETIME2, TIMESTAMP2, NEWDECIMAL: not lossy, but zongji builds their text from many small
 *   strings (its zeroPad was ~10% of a capture's CPU); retyped as a BIT of their width, the bytes
 *   are printed here as one flat string, the same text (docs/PERFORMANCE.md).
 * Computed once per table shape; `applyRaw` does the retyping at every TABLE_MAP.
 */
export function rawBinlogValues(column: ZongjiColumn, schema: ZongjiColumnSchema | undefined, hasLabels: boolean): RawValues | undefined {
  const { type, charset, metadata } = original(column);
  switch (type) {
    case T.GEOMETRY:
      return { retype: { type: T.BLOB, charset: null, metadata } };
    case T.TIME2: {
      const fsp = metadata?.decimals ?? 0;
      return { retype: rawBytes(charset, 3 + Math.ceil(fsp / 2)), decode: time2[fsp] ?? time2Decoder(fsp) };
    }
    case T.DATETIME2: {
      const fsp = metadata?.decimals ?? 0;
      const decode = datetime2[fsp];
      return decode && { retype: rawBytes(charset, 5 + Math.ceil(fsp / 2)), decode };
    }
    case T.TIMESTAMP2: {
      const fsp = metadata?.decimals ?? 0;
      const decode = timestamp2[fsp];
      return decode && { retype: rawBytes(charset, 4 + Math.ceil(fsp / 2)), decode };
    }
    case T.NEWDECIMAL: {
      const precision = metadata?.precision;
      const scale = metadata?.decimals;
      if (precision === undefined || scale === undefined) return undefined;
      return { retype: rawBytes(charset, decimalSize(precision, scale)), decode: decimalDecoder(precision, scale) };
    }
    case T.TIME:
      // With fraction digits this is MariaDB 5.3's own format, which zongji reads right.
      if (fractionDigits(type, metadata, schema)) return undefined;
      return { retype: { type: T.BIT, charset, metadata: { bits: 24 } }, decode: classicTime };
  }
  const enumOrSet = type === T.ENUM || type === T.SET;
  const exact = charset === null || charset === undefined || EXACT.has(charset) || (charset === 'ascii' && enumOrSet) || (enumOrSet && !hasLabels);
  if (exact) return type === T.ENUM ? { decode: enumAsIs } : undefined;
  if (charset === 'ascii') return { decode: asciiText };
  const decode = charset === 'latin1' ? latin1 : serverText(charset);
  const how = enumOrSet ? { rawLabels: true } : { retype: { type, charset: 'binary', metadata } };
  return { ...how, decode: type === T.ENUM ? orBlank(decode) : decode, byServer: decode !== latin1 };
}

/** Applies `raw` to zongji's descriptors of this TABLE_MAP (zongji rebuilds them at each one). */
export function applyRaw(column: ZongjiColumn, raw: RawValues, schema: ZongjiColumnSchema | undefined, labels: Buffer[] | undefined): void {
  if (raw.retype) {
    column.sluiceOriginal ??= { type: column.type, charset: column.charset, metadata: column.metadata };
    Object.assign(column, raw.retype);
  }
  if (raw.rawLabels && schema && labels) {
    schema[original(column).type === T.ENUM ? 'ENUM_VALUES' : 'SET_VALUES'] = labels.map((label) => label.toString('latin1'));
  }
}
