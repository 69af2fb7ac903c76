import { isUtf8 } from 'node:buffer';
import { MysqlType } from '../../core/mysql-types.ts';
import { type EncodedShape, rowProperty } from '../../format/event.ts';
import { float32Text, numberText } from '../../format/types.ts';

/*
 * Snapshot rows straight from the wire: a per-shape encoder that reads each binary-protocol row
 * packet (MySQL's COM_STMT_EXECUTE result rows) and writes the complete event line's bytes into a
 * staging buffer — no row object, no string per value. It must write exactly what the reference
 * path writes for the same row (mysql2's binary row parser with the paging connection's options,
 * then `encodeKey`/`encodeRow`/`eventLine`, UTF-8): each rule below names the mysql2 reader and the
 * `valueEncoder` rule it reproduces. A column whose wire form it does not handle exactly makes the
 * whole result take the reference path (`lineEncoder` returns undefined); a value it cannot write
 * exactly (text that is not valid UTF-8, a temporal length it does not know) makes that one row
 * take it (`encode` returns -1). test/integration/snapshot-lines.test.ts compares both, byte for byte.
 *
 * The binary row: 0x00, a NULL bitmap of (n + 7 + 2) >> 3 bytes (bit offset 2), then each non-NULL
 * value: TINY 1 byte, SHORT/YEAR 2, INT24/LONG/FLOAT 4, LONGLONG/DOUBLE 8 (little-endian); DATE,
 * DATETIME, TIMESTAMP a length (0, 4, 7, 11) and y(2) m d [H M S [µs(4)]]; TIME a length (0, 8, 12)
 * and neg days(4) H M S [µs(4)]; everything else a length-encoded byte string.
 */

/** What the encoder reads of a result column (mysql2's ColumnDefinition). */
export interface WireColumn {
  readonly name: string;
  readonly columnType: number;
  readonly flags: number;
  readonly characterSet: number;
  /** mysql2's name for the column's character set: `utf8` for utf8mb3/utf8mb4. */
  readonly encoding?: string;
  readonly decimals: number;
  /** MariaDB's extended metadata: `json` for JSON columns. */
  readonly extendedFormat?: string;
}

/** A binary-protocol row as mysql2 hands it over: its payload is `buffer[offset, end)`. */
export interface RowPacket {
  readonly buffer: Buffer;
  readonly offset: number;
  readonly end: number;
}

// Column types of the protocol (mysql2/lib/constants/types.js): the same codes as the binlog's.
const T = MysqlType;
const UNSIGNED = 32;
const BINARY_CHARSET = 63;
const BYTE_STRINGS = new Set<number>([T.VARCHAR, T.ENUM, T.SET, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB, T.VAR_STRING, T.STRING]);

// What a column's value becomes (the op of its plan).
const INT8 = 0;
const UINT8 = 1;
const INT16 = 2;
const UINT16 = 3;
const INT32 = 4;
const UINT32 = 5;
const INT64 = 6;
const UINT64 = 7;
const FLOAT = 8;
const DOUBLE = 9;
const DECIMAL = 10;
const DATE = 11;
const DATETIME = 12;
const TIMESTAMP = 13;
const TIME = 14;
const TEXT = 15;
const BASE64 = 16;
const BIT = 17;

interface Plan {
  readonly op: number;
  /** YEAR's rule: 1900 is the zero year, written 0. */
  readonly year: boolean;
  /** Fraction digits of temporal columns. */
  readonly fsp: number;
}

const byte = (b: Buffer, i: number) => b[i] as number;

/** How the reference path reads and encodes `field` as a column of `kind`, when the encoder can do the same; else undefined. */
function planOf(column: EncodedShape['columns'][number], field: WireColumn): Plan | undefined {
  const type = field.columnType;
  const unsigned = (field.flags & UNSIGNED) !== 0;
  const plan = (op: number): Plan => ({ op, year: column.kind === 'year', fsp: column.fsp ?? 0 });
  // mysql2 reads a JSON-flagged column (MariaDB's extended metadata) as text before looking at its type.
  const utf8 = field.encoding === 'utf8' && field.characterSet !== BINARY_CHARSET;
  if (field.extendedFormat === 'json') return column.kind === 'string' && utf8 ? plan(TEXT) : undefined;
  switch (column.kind) {
    case 'int':
    case 'year':
      // packet.readInt8/readSInt8 …, readInt64String/readSInt64String (bigNumberStrings); YEAR as readInt16.
      if (type === T.TINY) return plan(unsigned ? UINT8 : INT8);
      if (type === T.SHORT) return plan(unsigned ? UINT16 : INT16);
      if (type === T.YEAR) return plan(UINT16);
      if (type === T.LONG || type === T.INT24) return plan(unsigned ? UINT32 : INT32);
      if (type === T.LONGLONG) return plan(unsigned ? UINT64 : INT64);
      return undefined;
    case 'decimal':
      return type === T.NEWDECIMAL || type === T.DECIMAL ? plan(DECIMAL) : undefined;
    case 'double':
      return type === T.DOUBLE ? plan(DOUBLE) : undefined;
    case 'float':
      return type === T.FLOAT ? plan(FLOAT) : undefined;
    case 'date':
      return type === T.DATE || type === T.NEWDATE ? plan(DATE) : undefined;
    case 'datetime':
    case 'timestamp':
      // readDateTimeString keeps `decimals` digits of the fraction, withFraction pads them to fsp:
      // the same as fsp digits of the microseconds only when the wire says at least fsp.
      if (type !== (column.kind === 'datetime' ? T.DATETIME : T.TIMESTAMP) || field.decimals < (column.fsp ?? 0)) return undefined;
      return plan(column.kind === 'datetime' ? DATETIME : TIMESTAMP);
    case 'time':
      return type === T.TIME ? plan(TIME) : undefined;
    case 'string':
    case 'uuid':
    case 'inet4':
    case 'inet6':
      // readLengthCodedString(encoding); MySQL's JSON type as utf8 whatever its charset.
      if (type === T.JSON) return column.kind === 'string' ? plan(TEXT) : undefined;
      return BYTE_STRINGS.has(type) && utf8 ? plan(TEXT) : undefined;
    case 'binary':
      // readLengthCodedBuffer for the binary charset, then base64.
      return BYTE_STRINGS.has(type) && field.characterSet === BINARY_CHARSET ? plan(BASE64) : undefined;
    case 'bit':
      return type === T.BIT && field.characterSet === BINARY_CHARSET ? plan(BIT) : undefined;
    default:
      return undefined;
  }
}

/** The constant parts of a page's lines: head + key + middle + row + tail + row index digits + end. */
export interface LineParts {
  readonly head: string;
  readonly middle: string;
  readonly tail: string;
  readonly end: string;
  /** Digits of the row index within the page (zero-padded). */
  readonly indexWidth: number;
}

/** Encodes a result's rows into event lines, one page's constant parts at a time. */
export interface LineEncoder {
  /** A page's writer of lines. */
  page(parts: LineParts): PageLineWriter;
}

export interface PageLineWriter {
  /** The most bytes `packet`'s line can take. */
  bound(packet: RowPacket): number;
  /** Writes the line of `packet`, row `index` of the page, into `out` from `at`: its end, or -1 if a value needs the reference path. */
  encode(packet: RowPacket, out: Buffer, at: number, index: number): number;
}

/** Room a column's value may take beyond 6 bytes per wire byte (names, quotes, a zero date's text from one byte). */
const PER_COLUMN = 40;

/**
 * The encoder of `shape`'s rows as the server describes them (`fields`, in the order of the shape's
 * columns), or undefined when a column's wire form is not one it writes exactly.
 */
export function lineEncoder(shape: EncodedShape, fields: readonly WireColumn[]): LineEncoder | undefined {
  if (fields.length !== shape.columns.length) return undefined;
  const plans: Plan[] = [];
  for (const [i, column] of shape.columns.entries()) {
    const field = fields[i] as WireColumn;
    // The SELECT names each value by its column's rowProperty (schema.ts `selectAs`).
    const plan = field.name === rowProperty(column.name) ? planOf(column, field) : undefined;
    if (!plan) return undefined;
    plans.push(plan);
  }
  // A keyless table's rows have `key: null` (its shape's key is empty).
  const key = shape.key?.length ? shape.key : null;
  const names = shape.names.reduce((sum, name) => sum + Buffer.byteLength(name) + 2, 0);
  let compiled: { parts: string; make: (tail: Buffer, width: number) => PageLineWriter['encode'] } | undefined;

  return {
    page(parts) {
      // head, middle and end are the shape's own (its op, names and schema version); only the tail
      // (source, seq prefix) is the page's: an encoder's pages share its compiled code (a keyless
      // copy's pages; a keyed chunk makes an encoder per page).
      const shapeParts = `${parts.head}\u0000${parts.middle}\u0000${parts.end}`;
      if (compiled?.parts !== shapeParts) compiled = { parts: shapeParts, make: compile(shape, plans, key, parts) };
      const tail = Buffer.from(`}${parts.tail}`, 'utf8');
      const fixed =
        Buffer.byteLength(parts.head) +
        Buffer.byteLength(parts.middle) +
        tail.length +
        Buffer.byteLength(parts.end) +
        16 +
        2 * (names + plans.length * PER_COLUMN) +
        4;
      const perByte = key ? 12 : 6;
      return { bound: (packet) => fixed + perByte * (packet.end - packet.offset), encode: compiled.make(tail, parts.indexWidth) };
    },
  };
}

/** Operations whose value is a fixed-width little-endian integer read inline, and how. */
const INLINE_INTS: Record<number, (s: string) => string> = {
  [INT8]: (s) => `((src[${s}] << 24) >> 24)`,
  [UINT8]: (s) => `src[${s}]`,
  [INT16]: (s) => `(((src[${s}] | (src[${s} + 1] << 8)) << 16) >> 16)`,
  [UINT16]: (s) => `(src[${s}] | (src[${s} + 1] << 8))`,
  [INT32]: (s) => `(src[${s}] | (src[${s} + 1] << 8) | (src[${s} + 2] << 16) | (src[${s} + 3] << 24))`,
  [UINT32]: (s) => `((src[${s}] | (src[${s} + 1] << 8) | (src[${s} + 2] << 16) | (src[${s} + 3] << 24)) >>> 0)`,
};
/** The call writing each other operation's value at `s` (the helpers are the generated code's parameters). */
type Call = (s: string, plan: Plan) => string;
const CALLS: Record<number, Call> = {
  [INT64]: (s, plan) => `writeLong(src, ${s}, out, o, true, ${plan.year})`,
  [UINT64]: (s, plan) => `writeLong(src, ${s}, out, o, false, ${plan.year})`,
  [FLOAT]: (s) => `writeAscii(out, o, float32Text(src.readFloatLE(${s})))`,
  [DOUBLE]: (s) => `writeAscii(out, o, numberText(src.readDoubleLE(${s})))`,
  [DECIMAL]: (s) => `writeDecimal(src, ${s}, out, o)`,
  [DATE]: (s, plan) => `writeDateTime(${DATE}, ${plan.fsp}, src, ${s}, out, o)`,
  [DATETIME]: (s, plan) => `writeDateTime(${DATETIME}, ${plan.fsp}, src, ${s}, out, o)`,
  [TIMESTAMP]: (s, plan) => `writeDateTime(${TIMESTAMP}, ${plan.fsp}, src, ${s}, out, o)`,
  [TIME]: (s, plan) => `writeTime(${plan.fsp}, src, ${s}, out, o)`,
  [TEXT]: (s) => `writeTextAt(src, ${s}, out, o)`,
  [BASE64]: (s) => `writeBase64At(src, ${s}, out, o)`,
  [BIT]: (s) => `writeBitAt(src, ${s}, out, o)`,
};
const WIDTHS: Record<number, number> = {
  [INT8]: 1,
  [UINT8]: 1,
  [INT16]: 2,
  [UINT16]: 2,
  [INT32]: 4,
  [UINT32]: 4,
  [FLOAT]: 4,
  [INT64]: 8,
  [UINT64]: 8,
  [DOUBLE]: 8,
};

/**
 * One function per shape, unrolled over its columns (as compileEncoders does for row objects): the
 * constant bytes between values are stored inline, each NULL bit and value read at its own site.
 * Only numbers enter the generated source (bytes, offsets, bit masks); the helpers and the constant
 * buffers are its parameters.
 */
function compile(shape: EncodedShape, plans: readonly Plan[], key: readonly number[] | null, parts: LineParts) {
  const constants: unknown[] = [];
  const constant = (value: unknown) => {
    constants.push(value);
    return `k${constants.length - 1}`;
  };
  const bytes = (text: string) => {
    const data = Buffer.from(text, 'utf8');
    if (data.length > 24) return `out.set(${constant(data)}, o); o += ${data.length};`;
    return `${[...data].map((b, i) => `out[o + ${i}] = ${b};`).join(' ')} o += ${data.length};`;
  };
  const isNullAt = (i: number) => `(n${(i + 2) >> 3} & ${1 << ((i + 2) & 7)})`;
  const skipFrom = (plan: Plan, s: string) => {
    const width = WIDTHS[plan.op];
    if (width) return `${s} + ${width}`;
    if (plan.op === DATE || plan.op === DATETIME || plan.op === TIMESTAMP || plan.op === TIME) return `${s} + 1 + src[${s}]`;
    return `skip(${plan.op}, src, ${s})`;
  };
  const value = (i: number, s: string) => {
    const plan = plans[i] as Plan;
    const int = INLINE_INTS[plan.op];
    const write = int ? `o = writeInt(out, o, ${int(s)}, ${plan.year});` : `o = ${(CALLS[plan.op] as Call)(s, plan)}; if (o < 0) return -1;`;
    return `if (${isNullAt(i)}) o = writeNull(out, o); else { ${write} }`;
  };
  const n = plans.length;
  const lastKey = key ? Math.max(...key) : -1;
  const body: string[] = ['const src = packet.buffer;', 'const nulls = packet.offset + 1;'];
  for (let b = 0; b < (n + 7 + 2) >> 3; b++) body.push(`const n${b} = src[nulls + ${b}];`);
  body.push(`let p = nulls + ${(n + 7 + 2) >> 3};`, 'let o = at;');
  // The key's columns come first in the line but anywhere in the row: where each value starts.
  for (let i = 0; i <= lastKey; i++) body.push(`const s${i} = p;`, `if (!${isNullAt(i)}) p = ${skipFrom(plans[i] as Plan, `s${i}`)};`);
  for (const [k, i] of (key ?? []).entries()) {
    body.push(bytes(`${k === 0 ? `${parts.head}{` : ','}${shape.names[i]}`), value(i, `s${i}`));
  }
  for (let i = 0; i < n; i++) {
    body.push(bytes(i === 0 ? `${key ? '}' : `${parts.head}null`}${parts.middle}{${shape.names[i]}` : `,${shape.names[i]}`));
    if (i <= lastKey) body.push(value(i, `s${i}`));
    else body.push(`const s${i} = p;`, value(i, `s${i}`), `if (!${isNullAt(i)}) p = ${skipFrom(plans[i] as Plan, `s${i}`)};`);
  }
  body.push('out.set(tail, o); o += tail.length;', 'o = writeFixed(out, o, index, width);', bytes(parts.end), 'return o;');
  const helpers = {
    writeInt,
    writeNull,
    writeFixed,
    skip,
    writeLong,
    writeAscii,
    float32Text,
    numberText,
    writeDecimal,
    writeDateTime,
    writeTime,
    writeTextAt,
    writeBase64At,
    writeBitAt,
  };
  const make = new Function(
    ...Object.keys(helpers),
    ...constants.map((_, i) => `k${i}`),
    `return (tail, width) => (packet, out, at, index) => {\n${body.join('\n')}\n};`,
  );
  return make(...Object.values(helpers), ...constants) as (tail: Buffer, width: number) => PageLineWriter['encode'];
}

/** A length-encoded integer's value at `p` (never NULL inside a binary row). */
function lengthAt(src: Buffer, p: number): number {
  const first = byte(src, p);
  if (first < 0xfb) return first;
  if (first === 0xfc) return src.readUInt16LE(p + 1);
  if (first === 0xfd) return src.readUIntLE(p + 1, 3);
  return src.readUInt32LE(p + 1) + src.readUInt32LE(p + 5) * 0x100000000;
}

/** Bytes a length-encoded integer at `p` takes. */
const lengthSize = (first: number) => (first < 0xfb ? 1 : first === 0xfc ? 3 : first === 0xfd ? 4 : 9);

/** The position after the value at `p`. */
function skip(op: number, src: Buffer, p: number): number {
  switch (op) {
    case INT8:
    case UINT8:
      return p + 1;
    case INT16:
    case UINT16:
      return p + 2;
    case INT32:
    case UINT32:
    case FLOAT:
      return p + 4;
    case INT64:
    case UINT64:
    case DOUBLE:
      return p + 8;
    case DATE:
    case DATETIME:
    case TIMESTAMP:
    case TIME:
      return p + 1 + byte(src, p);
    default:
      return p + lengthSize(byte(src, p)) + lengthAt(src, p);
  }
}

function writeNull(out: Buffer, o: number): number {
  out[o] = 0x6e; // null
  out[o + 1] = 0x75;
  out[o + 2] = 0x6c;
  out[o + 3] = 0x6c;
  return o + 4;
}

/** BIGINT: within ±2^53 the double is exact; beyond it, BigInt's digits (readInt64String's). */
function writeLong(src: Buffer, p: number, out: Buffer, o: number, signed: boolean, year: boolean): number {
  const low = src.readUInt32LE(p);
  const high = signed ? src.readInt32LE(p + 4) : src.readUInt32LE(p + 4);
  if (high < 0x200000 && high >= -0x200000) return writeInt(out, o, high * 0x100000000 + low, year);
  return writeAscii(out, o, (signed ? src.readBigInt64LE(p) : src.readBigUInt64LE(p)).toString());
}

/** A length-encoded string at `p` as JSON text (writeText), or -1. */
function writeTextAt(src: Buffer, p: number, out: Buffer, o: number): number {
  const start = p + lengthSize(byte(src, p));
  return writeText(src, start, start + lengthAt(src, p), out, o);
}

/** Length-encoded bytes at `p` as a JSON string of their base64. */
function writeBase64At(src: Buffer, p: number, out: Buffer, o: number): number {
  const start = p + lengthSize(byte(src, p));
  return writeBase64(src, start, start + lengthAt(src, p), out, o);
}

/** BIT (bitText): the length-encoded bytes at `p` as one big-endian unsigned integer. */
function writeBitAt(src: Buffer, p: number, out: Buffer, o: number): number {
  const start = p + lengthSize(byte(src, p));
  const end = start + lengthAt(src, p);
  if (end - start <= 6) {
    let value = 0;
    for (let i = start; i < end; i++) value = value * 256 + byte(src, i);
    return writeInt(out, o, value, false);
  }
  let value = 0n;
  for (let i = start; i < end; i++) value = (value << 8n) | BigInt(byte(src, i));
  return writeAscii(out, o, value.toString());
}

function writeAscii(out: Buffer, o: number, text: string): number {
  for (let i = 0; i < text.length; i++) out[o + i] = text.charCodeAt(i);
  return o + text.length;
}

/** An integer within ±2^53 in decimal (String(n)); YEAR's 1900 is the zero year. */
function writeInt(out: Buffer, o: number, value: number, year: boolean): number {
  if (year && value === 1900) value = 0;
  if (value < 0) {
    out[o++] = 0x2d; // -
    value = -value;
  }
  if (value < 0x80000000) return writeSmall(out, o, value);
  let length = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) length++;
  for (let i = o + length - 1; i >= o; i--) {
    const next = Math.floor(value / 10);
    out[i] = 0x30 + (value - next * 10);
    value = next;
  }
  return o + length;
}

/** Decimal digits of a non-negative integer below 2^31. */
const digitCount = (value: number) =>
  value < 10
    ? 1
    : value < 100
      ? 2
      : value < 1000
        ? 3
        : value < 10000
          ? 4
          : value < 100000
            ? 5
            : value < 1000000
              ? 6
              : value < 10000000
                ? 7
                : value < 100000000
                  ? 8
                  : value < 1000000000
                    ? 9
                    : 10;

/** A non-negative integer below 2^31 in decimal, in 32-bit integer arithmetic. */
function writeSmall(out: Buffer, o: number, value: number): number {
  const length = digitCount(value);
  for (let i = o + length - 1; i >= o; i--) {
    const next = (value / 10) | 0;
    out[i] = 0x30 + value - next * 10;
    value = next;
  }
  return o + length;
}

/** `value` in exactly `width` digits (it is below 10^width), or in all of its digits when wider. */
function writeFixed(out: Buffer, o: number, value: number, width: number): number {
  if (value >= 0x80000000) return writeInt(out, o, value, false);
  for (let i = digitCount(value); i < width; i++) out[o++] = 0x30;
  return writeSmall(out, o, value);
}

/** A two-digit field (hours may take more). */
function write2(out: Buffer, o: number, value: number): number {
  if (value >= 100) return writeInt(out, o, value, false);
  out[o] = 0x30 + Math.floor(value / 10);
  out[o + 1] = 0x30 + (value % 10);
  return o + 2;
}

/** The first `fsp` of the six digits of `micros`, after a dot. */
function writeFraction(out: Buffer, o: number, micros: number, fsp: number): number {
  if (!fsp) return o;
  out[o++] = 0x2e; // .
  let scale = 100000;
  for (let i = 0; i < fsp; i++) {
    out[o++] = 0x30 + (Math.floor(micros / scale) % 10);
    scale /= 10;
  }
  return o;
}

/**
 * DECIMAL as a JSON string: the server's text (readLengthCodedString) without ZEROFILL's leading
 * zeros (encodeValue's LEADING_ZEROS: zeros followed by a digit, after an optional minus).
 */
function writeDecimal(src: Buffer, p: number, out: Buffer, o: number): number {
  let start = p + lengthSize(byte(src, p));
  const end = start + lengthAt(src, p);
  out[o++] = 0x22;
  if (byte(src, start) === 0x2d) {
    out[o++] = 0x2d;
    start++;
  }
  while (start + 1 < end && byte(src, start) === 0x30 && byte(src, start + 1) >= 0x30 && byte(src, start + 1) <= 0x39) start++;
  for (let i = start; i < end; i++) out[o++] = byte(src, i);
  out[o++] = 0x22;
  return o;
}

/**
 * DATE, DATETIME, TIMESTAMP (readDateTimeString, then withFraction to fsp digits): `YYYY-MM-DD`,
 * then for DATETIME/TIMESTAMP ` HH:MM:SS[.f]`; a TIMESTAMP that is not the zero date becomes
 * `YYYY-MM-DDTHH:MM:SS[.f]Z`.
 */
function writeDateTime(op: number, fsp: number, src: Buffer, p: number, out: Buffer, o: number): number {
  const length = byte(src, p);
  if (op === DATE ? length !== 0 && length !== 4 : length !== 0 && length !== 4 && length !== 7 && length !== 11) return -1;
  const year = length ? src.readUInt16LE(p + 1) : 0;
  const month = length ? byte(src, p + 3) : 0;
  const day = length ? byte(src, p + 4) : 0;
  if (year > 9999) return -1;
  out[o++] = 0x22;
  out[o++] = 0x30 + Math.floor(year / 1000);
  out[o++] = 0x30 + (Math.floor(year / 100) % 10);
  o = write2(out, o, year % 100);
  out[o++] = 0x2d;
  o = write2(out, o, month);
  out[o++] = 0x2d;
  o = write2(out, o, day);
  if (op !== DATE) {
    const instant = op === TIMESTAMP && (year !== 0 || month !== 0 || day !== 0);
    out[o++] = instant ? 0x54 : 0x20; // T or space
    o = write2(out, o, length > 4 ? byte(src, p + 5) : 0);
    out[o++] = 0x3a;
    o = write2(out, o, length > 4 ? byte(src, p + 6) : 0);
    out[o++] = 0x3a;
    o = write2(out, o, length > 4 ? byte(src, p + 7) : 0);
    o = writeFraction(out, o, length > 7 ? src.readUInt32LE(p + 8) : 0, fsp);
    if (instant) out[o++] = 0x5a; // Z
  }
  out[o++] = 0x22;
  return o;
}

/** TIME (readTimeString, then withFraction to fsp digits): `[-]HH:MM:SS[.f]`, hours = days × 24 + hours. */
function writeTime(fsp: number, src: Buffer, p: number, out: Buffer, o: number): number {
  const length = byte(src, p);
  if (length !== 0 && length !== 8 && length !== 12) return -1;
  out[o++] = 0x22;
  if (length && byte(src, p + 1)) out[o++] = 0x2d;
  o = write2(out, o, length ? src.readUInt32LE(p + 2) * 24 + byte(src, p + 6) : 0);
  out[o++] = 0x3a;
  o = write2(out, o, length ? byte(src, p + 7) : 0);
  out[o++] = 0x3a;
  o = write2(out, o, length ? byte(src, p + 8) : 0);
  o = writeFraction(out, o, length > 8 ? src.readUInt32LE(p + 9) : 0, fsp);
  out[o++] = 0x22;
  return o;
}

const HEX = '0123456789abcdef';
/** JSON.stringify's short escapes, by byte. */
const SHORT_ESCAPES: Record<number, number> = { 8: 0x62, 9: 0x74, 10: 0x6e, 12: 0x66, 13: 0x72, 34: 0x22, 92: 0x5c };

/**
 * UTF-8 text as a JSON string, escaped as JSON.stringify escapes it: `"` and `\`, and below 0x20
 * the short escapes or `\u00xx`; everything else (U+2028 too) as it is. Text that is not valid
 * UTF-8 (which mysql2 would decode with U+FFFD) is left to the reference path: -1.
 */
function writeText(src: Buffer, start: number, end: number, out: Buffer, o: number): number {
  out[o++] = 0x22;
  let high = 0;
  for (let i = start; i < end; i++) {
    const b = byte(src, i);
    if (b >= 0x20 && b !== 0x22 && b !== 0x5c) {
      out[o++] = b;
      high |= b;
      continue;
    }
    out[o++] = 0x5c;
    const short = SHORT_ESCAPES[b];
    if (short !== undefined) out[o++] = short;
    else {
      out[o++] = 0x75; // u00xx
      out[o++] = 0x30;
      out[o++] = 0x30;
      out[o++] = HEX.charCodeAt(b >> 4);
      out[o++] = HEX.charCodeAt(b & 15);
    }
  }
  if (high & 0x80 && !isUtf8(src.subarray(start, end))) return -1;
  out[o++] = 0x22;
  return o;
}

const BASE64_DIGITS = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');

/** Bytes as a JSON string of their base64 (with padding), as Buffer#toString('base64'). */
function writeBase64(src: Buffer, start: number, end: number, out: Buffer, o: number): number {
  out[o++] = 0x22;
  let i = start;
  for (; i + 2 < end; i += 3) {
    const n = (byte(src, i) << 16) | (byte(src, i + 1) << 8) | byte(src, i + 2);
    out[o++] = byte(BASE64_DIGITS, n >> 18);
    out[o++] = byte(BASE64_DIGITS, (n >> 12) & 63);
    out[o++] = byte(BASE64_DIGITS, (n >> 6) & 63);
    out[o++] = byte(BASE64_DIGITS, n & 63);
  }
  if (i < end) {
    const two = i + 1 < end;
    const n = (byte(src, i) << 16) | (two ? byte(src, i + 1) << 8 : 0);
    out[o++] = byte(BASE64_DIGITS, n >> 18);
    out[o++] = byte(BASE64_DIGITS, (n >> 12) & 63);
    out[o++] = two ? byte(BASE64_DIGITS, (n >> 6) & 63) : 0x3d;
    out[o++] = 0x3d;
  }
  out[o++] = 0x22;
  return o;
}
