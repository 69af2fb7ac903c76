import zlib from 'node:zlib';
import type { ColumnSchema } from '@vlasky/zongji';
import iconv from 'iconv-lite';
import { MysqlType as T } from '../../../core/mysql-types.ts';
import { decimalSize, decimalText } from '../../../format/binlog-columns.ts';
import { hiresPrecision, readDate, readDatetime, readDatetime2, readTime, readTime2, readTimestamp, readTimestamp2 } from './temporal-values.ts';

/*
 * One column's value in a row image, read as zongji 0.9.0 reads it (lib/common.js readMysqlValue)
 * for the descriptors zongji's table map holds, those raw-values.ts retyped included, so that the
 * reader sees the values it always saw. JSON and VECTOR are their stored bytes (json.ts prints
 * JSON). Values of bytes (BIT, BLOB, VARBINARY) are views of the event's buffer, as zongji's are.
 */

/** Where a row image is read: its bytes and the offset reached. */
export interface Cursor {
  readonly buf: Buffer;
  pos: number;
}

/** A column as zongji's table map describes it (`tableMap[id].columns`). */
export interface ValueColumn {
  readonly name: string;
  readonly type: number;
  readonly charset?: string | null;
  readonly metadata?: Readonly<Record<string, unknown>> | null;
}

/** What the values of a column's definition depend on (information_schema's row, or FULL metadata's). */
export type ValueSchema = Pick<ColumnSchema, 'COLUMN_TYPE' | 'UNSIGNED' | 'ENUM_VALUES' | 'SET_VALUES'>;

/** The connection's options values are read by (mysql2's), and where an unreadable type is reported. */
export interface ValueOptions {
  /** mysql2's `dateStrings`, per type: text, else a Date. */
  readonly dateStrings: { readonly DATE: boolean; readonly DATETIME: boolean; readonly TIMESTAMP: boolean };
  /** mysql2's `timezone`: 'local' (or none), 'Z' or '±hh:mm'. */
  readonly timezone: string | undefined;
  /** mysql2's `decimalNumbers`: DECIMAL as a number, else its exact text. */
  readonly decimalNumbers: boolean;
  /** A column of a type with no reader: its value is undefined (zongji's 'error' event). */
  readonly report: (error: Error) => void;
}

/** The connection options of mysql2 that values depend on. */
export interface ValueConfig {
  readonly dateStrings?: unknown;
  readonly timezone?: string;
  readonly decimalNumbers?: boolean;
}

const wantsText = (dateStrings: unknown, type: string) =>
  dateStrings === true || ((Array.isArray(dateStrings) || typeof dateStrings === 'string') && dateStrings.indexOf(type) > -1);

/** The value options of a connection's config. */
export function valueOptions(config: ValueConfig | undefined, report: (error: Error) => void): ValueOptions {
  const dateStrings = config?.dateStrings;
  return {
    dateStrings: { DATE: wantsText(dateStrings, 'DATE'), DATETIME: wantsText(dateStrings, 'DATETIME'), TIMESTAMP: wantsText(dateStrings, 'TIMESTAMP') },
    timezone: config?.timezone,
    decimalNumbers: config?.decimalNumbers === true,
    report,
  };
}

const meta = (column: ValueColumn, key: string) => column.metadata?.[key] as number;

/**
 * MySQL charset names as iconv-lite spells them: MySQL's latin1 is cp1252, its Unicode charsets
 * are big-endian, and a few names differ. Charsets iconv-lite lacks (dec8, geostd8, hp8, keybcs2,
 * swe7) leave the bytes as they are.
 */
const ICONV_NAMES: Readonly<Record<string, string>> = {
  utf8mb3: 'utf8',
  utf8mb4: 'utf8',
  latin1: 'cp1252',
  ucs2: 'utf16-be',
  utf16: 'utf16-be',
  utf16le: 'utf16-le',
  utf32: 'utf32-be',
  ujis: 'eucjp',
  eucjpms: 'eucjp',
  macce: 'maccenteuro',
};

/** iconv-lite's name for a MySQL charset (utf8 when none is known). */
export const iconvName = (charset: string | null | undefined): string => (charset && ICONV_NAMES[charset]) || charset || 'utf8';

/** Text of a column's bytes in its charset (utf8 when none is known); the bytes when iconv-lite lacks the charset. */
export function decodeText(bytes: Buffer, charset: string | null | undefined): string | Buffer {
  const name = iconvName(charset);
  if (name === 'utf8') return bytes.toString('utf8');
  if (!iconv.encodingExists(name)) return bytes;
  // A leading U+FEFF is data, not a byte-order mark: the charset's byte order is fixed.
  return iconv.decode(bytes, name, { stripBOM: false });
}

/**
 * MariaDB's per-value envelope of COMPRESSED columns (sql/field_comp.cc): a header byte whose bits
 * 4-7 are the method (0 stored, 8 zlib), with zlib bits 0-2 the width of the length that follows
 * and bit 3 a raw deflate stream. An empty value has no header.
 */
export function uncompressColumnValue(bytes: Buffer): Buffer {
  if (bytes.length === 0) return bytes;
  const header = bytes[0] as number;
  const method = header >> 4;
  if (method === 0) return bytes.subarray(1);
  if (method !== 8) throw new Error(`Unknown MariaDB column compression method ${method}`);
  const compressed = bytes.subarray(1 + (header & 0x07));
  return header & 0x08 ? zlib.inflateRawSync(compressed) : zlib.inflateSync(compressed);
}

/** A length-coded integer (the protocol's net_field_length); 251 is NULL. */
export function readLengthCoded(cur: Cursor): number | null {
  const buf = cur.buf;
  const first = buf.readUInt8(cur.pos);
  const at = cur.pos + 1;
  if (first < 251) {
    cur.pos = at;
    return first;
  }
  if (first === 251) {
    cur.pos = at;
    return null;
  }
  if (first === 252 || first === 253) {
    cur.pos = at + first - 250;
    return buf.readUIntLE(at, first - 250);
  }
  if (first !== 254) throw new Error('Invalid length coded number');
  cur.pos = at + 8;
  return buf.readUInt32LE(at) + buf.readUInt32LE(at + 4) * 2 ** 32;
}

/** A value's bytes after a little-endian length of `width` bytes. */
function readPrefixed(cur: Cursor, width: number): Buffer {
  const length = cur.buf.readUIntLE(cur.pos, width);
  const start = cur.pos + width;
  cur.pos = start + length;
  return cur.buf.subarray(start, cur.pos);
}

function readBytes(cur: Cursor, length: number): Buffer {
  const start = cur.pos;
  cur.pos += length;
  return cur.buf.subarray(start, cur.pos);
}

/** Bytes zero-padded to `width` (the row image strips a BINARY's trailing zeros). */
function padded(bytes: Buffer, width: number): Buffer {
  const out = Buffer.alloc(width, 0);
  bytes.copy(out);
  return out;
}

/** TINYINT … BIGINT: little-endian; BIGINT beyond ±(2^53 - 1) as exact text. */
function readInteger(cur: Cursor, type: number, schema: ValueSchema | undefined): number | string {
  const unsigned = schema?.UNSIGNED ?? schema?.COLUMN_TYPE.includes('unsigned') ?? false;
  const buf = cur.buf;
  const at = cur.pos;
  switch (type) {
    case T.TINY:
      cur.pos += 1;
      return unsigned ? buf.readUInt8(at) : buf.readInt8(at);
    case T.SHORT:
      cur.pos += 2;
      return unsigned ? buf.readUInt16LE(at) : buf.readInt16LE(at);
    case T.INT24:
      cur.pos += 3;
      return unsigned ? buf.readUIntLE(at, 3) : buf.readIntLE(at, 3);
    case T.LONG:
      cur.pos += 4;
      return unsigned ? buf.readUInt32LE(at) : buf.readInt32LE(at);
  }
  cur.pos += 8;
  const high = buf.readUInt32LE(at + 4);
  if (high < 0x200000) return high * 2 ** 32 + buf.readUInt32LE(at);
  if (unsigned || high < 0x80000000) return buf.readBigUInt64LE(at).toString();
  const value = buf.readBigInt64LE(at);
  return value >= MIN_SAFE ? Number(value) : value.toString();
}
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);

/** The labels of an ENUM or SET: FULL metadata's, else from the definition ("enum('a','b')"). */
function labels(schema: ValueSchema | undefined, type: number): readonly (string | undefined)[] {
  const listed = type === T.SET ? schema?.SET_VALUES : schema?.ENUM_VALUES;
  if (listed) return listed;
  const definition = schema?.COLUMN_TYPE ?? '';
  const prefix = type === T.SET ? 4 : 5;
  return definition
    .substring(prefix, definition.length - 1)
    .split(',')
    .map((label) => (label[0] === '"' || label[0] === "'" ? label.substring(1, label.length - 1) : label));
}

/** A SET: a bitmap of `size` bytes, its labels joined by commas. */
function readSet(cur: Cursor, column: ValueColumn, schema: ValueSchema | undefined): string {
  const size = meta(column, 'size');
  const buf = cur.buf;
  const low = size === 8 ? buf.readUInt32LE(cur.pos) : buf.readUIntLE(cur.pos, size);
  const high = size === 8 ? buf.readUInt32LE(cur.pos + 4) : 0;
  cur.pos += size;
  const choices = labels(schema, T.SET);
  const chosen: (string | undefined)[] = [];
  for (let i = 0; i < 32; i++) if ((low >>> i) & 1) chosen.push(choices[i]);
  for (let i = 0; i < 32; i++) if ((high >>> i) & 1) chosen.push(choices[i + 32]);
  return chosen.map(String).join(',');
}

/** CHAR, VARCHAR and the MariaDB types on them (UUID, INET4, INET6, VECTOR), by the column's definition. */
function readString(cur: Cursor, column: ValueColumn, schema: ValueSchema | undefined): string | Buffer {
  const bytes = readPrefixed(cur, meta(column, 'max_length') > 255 ? 2 : 1);
  const definition = schema?.COLUMN_TYPE ?? '';
  if (definition === 'uuid') return formatUuid(padded(bytes, 16));
  if (definition === 'inet4') return formatInet4(padded(bytes, 4));
  if (definition === 'inet6') return formatInet6(padded(bytes, 16));
  const kind = definition.substring(0, 6);
  if (kind === 'vector' || kind === 'varbin') return bytes;
  if (kind === 'binary') return padded(bytes, Number.parseInt(definition.substring(7), 10));
  return decodeText(bytes, column.charset);
}

/** TINYBLOB … LONGBLOB and TEXT (their charset), MariaDB's COMPRESSED ones inflated. */
function readBlob(cur: Cursor, column: ValueColumn): string | Buffer {
  let bytes = readPrefixed(cur, meta(column, 'length_size'));
  if (column.type === T.BLOB_COMPRESSED) bytes = uncompressColumnValue(bytes);
  // A BLOB's charset is null; a TEXT's is its own, utf8 when none is known.
  return column.charset !== null ? decodeText(bytes, column.charset) : bytes;
}

function readDecimal(cur: Cursor, column: ValueColumn, opts: ValueOptions): string | number {
  const precision = meta(column, 'precision');
  const scale = meta(column, 'decimals');
  const text = decimalText(readBytes(cur, decimalSize(precision, scale)), precision, scale);
  return opts.decimalNumbers ? Number.parseFloat(text) : text;
}

/** The table a value belongs to, for the message about a type with no reader. */
export interface ValueTable {
  readonly tableName: string;
  readonly parentSchema: string;
}

/** A non-NULL value of `column` at the cursor, which moves past it. */
export function readValue(cur: Cursor, column: ValueColumn, schema: ValueSchema | undefined, table: ValueTable, opts: ValueOptions): unknown {
  const type = column.type;
  switch (type) {
    case T.TINY:
    case T.SHORT:
    case T.INT24:
    case T.LONG:
    case T.LONGLONG:
      return readInteger(cur, type, schema);
    case T.FLOAT:
      cur.pos += 4;
      return cur.buf.readFloatLE(cur.pos - 4);
    case T.DOUBLE:
      cur.pos += 8;
      return cur.buf.readDoubleLE(cur.pos - 8);
    case T.NEWDECIMAL:
      return readDecimal(cur, column, opts);
    case T.SET:
      return readSet(cur, column, schema);
    case T.ENUM: {
      const size = meta(column, 'size');
      const index = cur.buf.readUIntLE(cur.pos, size);
      cur.pos += size;
      return labels(schema, T.ENUM)[index - 1];
    }
    case T.VAR_STRING: {
      const length = readLengthCoded(cur);
      return length === null ? null : readBytes(cur, length).toString('utf8');
    }
    case T.VARCHAR_COMPRESSED: {
      const bytes = uncompressColumnValue(readPrefixed(cur, meta(column, 'max_length') > 255 ? 2 : 1));
      return schema?.COLUMN_TYPE.startsWith('varbin') ? bytes : decodeText(bytes, column.charset);
    }
    case T.VARCHAR:
    case T.STRING:
      return readString(cur, column, schema);
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB:
    case T.BLOB_COMPRESSED:
      return readBlob(cur, column);
    case T.JSON:
    case T.VECTOR:
      // The stored bytes: json.ts prints JSON; VECTOR's float32s are its value, as a query returns them.
      return readPrefixed(cur, meta(column, 'length_size'));
    case T.GEOMETRY:
      return parseGeometry(readPrefixed(cur, meta(column, 'length_size')));
    case T.YEAR:
      cur.pos += 1;
      return (cur.buf[cur.pos - 1] as number) + 1900;
    case T.BIT:
      return readBytes(cur, Math.floor((meta(column, 'bits') + 7) / 8));
  }
  return readTemporal(cur, column, schema, opts) ?? unreadable(column, table, opts);
}

function readTemporal(cur: Cursor, column: ValueColumn, schema: ValueSchema | undefined, opts: ValueOptions): string | Date | undefined {
  switch (column.type) {
    case T.DATE:
      return readDate(cur, opts);
    case T.TIME:
      return readTime(cur, hiresPrecision(schema?.COLUMN_TYPE ?? ''));
    case T.TIME2:
      return readTime2(cur, meta(column, 'decimals'));
    case T.DATETIME:
      return readDatetime(cur, hiresPrecision(schema?.COLUMN_TYPE ?? ''), opts);
    case T.DATETIME2:
      return readDatetime2(cur, meta(column, 'decimals'), opts);
    case T.TIMESTAMP:
      return readTimestamp(cur, hiresPrecision(schema?.COLUMN_TYPE ?? ''), opts);
    case T.TIMESTAMP2:
      return readTimestamp2(cur, meta(column, 'decimals'), opts);
    default:
      return undefined;
  }
}

/** NULL (the null bitmap says so), DECIMAL (before MySQL 5.0.3), NEWDATE and unknown codes: no reader. */
function unreadable(column: ValueColumn, table: ValueTable, opts: ValueOptions): undefined {
  opts.report(
    new Error(`Unsupported type "${column.type}" on column "${column.name}" of the table "${table.tableName}" in the database "${table.parentSchema}"`),
  );
  return undefined;
}

/** MariaDB's UUID: 8-4-4-4-12 hex digits. */
function formatUuid(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** MariaDB's INET4: a dotted quad. */
function formatInet4(bytes: Buffer): string {
  return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
}

/**
 * MariaDB's INET6 as the server prints it: RFC 5952 (lowercase groups, the longest run of two or
 * more zero groups as '::', the leftmost of equals), IPv4-mapped and -compatible addresses dotted.
 */
function formatInet6(bytes: Buffer): string {
  if (bytes.subarray(0, 10).every((byte) => byte === 0)) {
    const v4 = formatInet4(bytes.subarray(12));
    if (bytes[10] === 0xff && bytes[11] === 0xff) return `::ffff:${v4}`;
    if (bytes[10] === 0 && bytes[11] === 0 && bytes.readUInt32BE(12) > 1) return `::${v4}`;
  }
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (list: number[]) => list.map((group) => group.toString(16)).join(':');
  if (bestStart === -1) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

/** A point, or the points, lines, rings or members of a geometry (null for an unknown WKB type). */
export type Geometry = { x: number; y: number } | Geometry[] | null;

/** A GEOMETRY's WKB (after its 4-byte SRID) as zongji gives it: points as {x, y}, the SRID dropped. */
export function parseGeometry(bytes: Buffer): Geometry {
  if (!bytes.length) return null;
  let at = 4;
  const parse = (): Geometry => {
    const little = bytes[at] !== 0;
    at += 1;
    const uint = () => {
      at += 4;
      return little ? bytes.readUInt32LE(at - 4) : bytes.readUInt32BE(at - 4);
    };
    const double = () => {
      at += 8;
      return little ? bytes.readDoubleLE(at - 8) : bytes.readDoubleBE(at - 8);
    };
    const point = () => ({ x: double(), y: double() });
    const points = () => Array.from({ length: uint() }, point);
    switch (uint()) {
      case 1:
        return point();
      case 2:
        return points();
      case 3:
        return Array.from({ length: uint() }, points);
      case 4:
      case 5:
      case 6:
      case 7:
        return Array.from({ length: uint() }, parse);
      default:
        return null;
    }
  };
  return parse();
}
