import { MysqlType } from '../../../core/mysql-types.ts';
import {
  type BinlogColumn,
  type ColumnDefinition,
  classicTimeText,
  datetime2Text,
  decimalSize,
  decimalText,
  fractionDigits,
  time2Text,
  timestamp2Text,
} from '../../../format/binlog-columns.ts';

/** The binlog TABLE_MAP's type codes. */
const T = MysqlType;

/** A column as zongji describes it in `tableMap[id].columns`, which `applyRaw` may retype. */
export interface ZongjiColumn extends BinlogColumn {
  /** What the column was before `rawBinlogValues` retyped it (see there). */
  sluiceOriginal?: { type: number; charset: string | null | undefined; metadata: BinlogColumn['metadata'] };
}

/** The column as the binlog describes it, whether or not `rawBinlogValues` has retyped it since. */
const original = (column: ZongjiColumn) => column.sluiceOriginal ?? column;

/** The column as the binlog describes it, under its current name (see `original`). */
export function asBinlogColumn(column: ZongjiColumn): BinlogColumn {
  const before = column.sluiceOriginal;
  return before ? { name: column.name, ...before } : column;
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
export function rawBinlogValues(column: ZongjiColumn, schema: ColumnDefinition | undefined, hasLabels: boolean): RawValues | undefined {
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
export function applyRaw(column: ZongjiColumn, raw: RawValues, schema: ColumnDefinition | undefined, labels: Buffer[] | undefined): void {
  if (raw.retype) {
    column.sluiceOriginal ??= { type: column.type, charset: column.charset, metadata: column.metadata };
    Object.assign(column, raw.retype);
  }
  if (raw.rawLabels && schema && labels) {
    schema[original(column).type === T.ENUM ? 'ENUM_VALUES' : 'SET_VALUES'] = labels.map((label) => label.toString('latin1'));
  }
}
