import { MysqlType } from '../core/mysql-types.ts';
import type { ColumnKind } from '../format/types.ts';
import { collationInfo, defaultCollation, maxBytesPerChar } from './charsets.ts';

/**
 * ONE vocabulary of column types for every place that describes a table: parsed DDL, an
 * information_schema.COLUMNS row, and a binlog TABLE_MAP column. Each source is turned into a
 * `TypeDescriptor`, and `normalizeType` alone renders the type string, kind and fsp, so a version
 * derived from DDL can be compared with what the server reports and what the binlog carries.
 *
 * The vocabulary is what the binlog can tell apart (the row images are the ground truth): no
 * display widths or ZEROFILL, FLOAT(M,D) is `float`, JSON is `longtext`, BOOL is `tinyint`; UUID,
 * INET4 and INET6 keep their names (the binlog logs their bytes as BINARY(16|4): `structureOf`
 * compares them that way).
 * String lengths are in characters, as in DDL.
 */
export interface TypeDescriptor {
  /** Canonical base type, lower case: `int`, `decimal`, `varchar`, `mediumtext`, `enum`, `point`… */
  readonly base: string;
  readonly unsigned?: boolean;
  /** CHAR/VARCHAR: characters; BINARY/VARBINARY: bytes; BIT: bits. */
  readonly length?: number;
  readonly precision?: number;
  readonly scale?: number;
  readonly fsp?: number;
  /** The fraction digits are not known (a TABLE_MAP of MariaDB's pre-10.0 temporal format). */
  readonly fspUnknown?: boolean;
  /** ENUM/SET values, in order. */
  readonly values?: readonly string[];
  readonly charset?: string;
  readonly collation?: string;
}

export interface ColumnType {
  /** e.g. `int unsigned`, `decimal(12,2)`, `datetime(6)`, `varchar(20)`, `enum('a','b')`. */
  readonly type: string;
  readonly kind: ColumnKind;
  /** Fraction digits of DATETIME/TIMESTAMP/TIME. */
  readonly fsp?: number;
  /** Text columns only (CHAR/VARCHAR/TEXT/ENUM/SET). */
  readonly charset?: string;
  readonly collation?: string;
}

/** A type sluice does not know how to describe; callers turn it into an unknown DDL / a refusal. */
export class UnsupportedTypeError extends Error {
  override readonly name = 'UnsupportedTypeError';
}

const INTEGERS = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'bigint']);
const TEXTS = new Set(['tinytext', 'text', 'mediumtext', 'longtext']);
const BLOBS = new Set(['tinyblob', 'blob', 'mediumblob', 'longblob']);
/** The spatial types' names. MySQL 8's information_schema names GEOMETRYCOLLECTION `geomcollection` (its COLUMN_TYPE), MariaDB's and the DDL `geometrycollection`. */
export const GEOMETRIES: ReadonlySet<string> = new Set([
  'geometry',
  'point',
  'linestring',
  'polygon',
  'multipoint',
  'multilinestring',
  'multipolygon',
  'geometrycollection',
  'geomcollection',
]);
const TEXT_FOR_BLOB: Record<string, string> = { tinyblob: 'tinytext', blob: 'text', mediumblob: 'mediumtext', longblob: 'longtext' };
const BLOB_FOR_TEXT: Record<string, string> = { tinytext: 'tinyblob', text: 'blob', mediumtext: 'mediumblob', longtext: 'longblob' };

export function quoteValue(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

const sign = (d: TypeDescriptor) => (d.unsigned ? ' unsigned' : '');

/** The one normalizer: a descriptor from any source → type string, kind, fsp, charset. */
export function normalizeType(d: TypeDescriptor): ColumnType {
  const base = d.base.toLowerCase();
  const text = (type: string): ColumnType => {
    const charset = d.charset ?? (d.collation ? collationInfo(d.collation)?.charset : undefined);
    const collation = d.collation ?? (charset ? defaultCollation(charset) : undefined);
    return { type, kind: 'string', ...(charset ? { charset } : {}), ...(collation ? { collation } : {}) };
  };
  const length = (what: string): number => {
    if (d.length === undefined || !Number.isInteger(d.length) || d.length < 0) throw new UnsupportedTypeError(`${what} without a valid length`);
    return d.length;
  };
  if (INTEGERS.has(base)) return { type: `${base}${sign(d)}`, kind: 'int' };
  if (TEXTS.has(base)) return d.charset === 'binary' ? { type: BLOB_FOR_TEXT[base] as string, kind: 'binary' } : text(base);
  if (BLOBS.has(base)) return { type: base, kind: 'binary' };
  if (GEOMETRIES.has(base)) return { type: base === 'geometrycollection' ? 'geomcollection' : base, kind: 'binary' };
  switch (base) {
    case 'decimal': {
      const precision = d.precision ?? 10;
      const scale = d.scale ?? 0;
      if (precision < 1 || precision > 65 || scale < 0 || scale > 38 || scale > precision) throw new UnsupportedTypeError(`decimal(${precision},${scale})`);
      return { type: `decimal(${precision},${scale})${sign(d)}`, kind: 'decimal' };
    }
    case 'float':
      return { type: `float${sign(d)}`, kind: 'float' };
    case 'double':
      return { type: `double${sign(d)}`, kind: 'double' };
    case 'bit': {
      const bits = d.length ?? 1;
      if (bits < 1 || bits > 64) throw new UnsupportedTypeError(`bit(${bits})`);
      return { type: `bit(${bits})`, kind: 'bit' };
    }
    case 'year':
      return { type: 'year', kind: 'year' };
    case 'date':
      return { type: 'date', kind: 'date' };
    case 'datetime':
    case 'timestamp':
    case 'time': {
      // A TABLE_MAP of the pre-10.0 temporal format does not say: `(*)` matches any (see structure checks).
      if (d.fspUnknown) return { type: `${base}(*)`, kind: base };
      const fsp = d.fsp ?? 0;
      if (fsp < 0 || fsp > 6) throw new UnsupportedTypeError(`${base}(${fsp})`);
      return { type: fsp ? `${base}(${fsp})` : base, kind: base, fsp };
    }
    case 'char':
    case 'varchar':
      if (d.charset === 'binary') return { type: `${base === 'char' ? 'binary' : 'varbinary'}(${length(base)})`, kind: 'binary' };
      return text(`${base}(${length(base)})`);
    case 'binary':
    case 'varbinary':
      return { type: `${base}(${length(base)})`, kind: 'binary' };
    // n float32 values, little-endian, as the server stores and the binlog carries them (MySQL 9.0+,
    // MariaDB 11.7+), written as those bytes (docs/FORMAT.md); a TABLE_MAP without metadata gives no n.
    case 'vector':
      return { type: d.length === undefined ? 'vector' : `vector(${length(base)})`, kind: 'binary' };
    case 'enum':
    case 'set':
      if (!d.values?.length) throw new UnsupportedTypeError(`${base} without values`);
      return text(`${base}(${d.values.map(quoteValue).join(',')})`);
    case 'json':
      return { type: 'longtext', kind: 'string', charset: 'utf8mb4', collation: 'utf8mb4_bin' };
    // Written as the server prints them (lib/format/types.ts); the binlog logs them as BINARY(16|4).
    case 'uuid':
    case 'inet6':
    case 'inet4':
      return { type: base, kind: base };
    default:
      throw new UnsupportedTypeError(`type ${base}`);
  }
}

/** The smallest TEXT/BLOB type that holds `bytes` (TEXT(n), BLOB(n)). */
export function lobForBytes(bytes: number, text: boolean): string {
  const blob = bytes < 256 ? 'tinyblob' : bytes < 65536 ? 'blob' : bytes < 16777216 ? 'mediumblob' : 'longblob';
  return text ? (TEXT_FOR_BLOB[blob] as string) : blob;
}

// ---------------------------------------------------------------------------------------------
// information_schema.COLUMNS

export interface InformationSchemaColumn {
  COLUMN_NAME: string;
  DATA_TYPE: string;
  COLUMN_TYPE: string;
  IS_NULLABLE: string;
  CHARACTER_SET_NAME?: string | null;
  COLLATION_NAME?: string | null;
  DATETIME_PRECISION?: string | number | null;
}

/** What the server's COLUMN_TYPE escapes with a backslash in ENUM/SET values (MariaDB and MySQL `append_unescaped`). */
const COLUMN_TYPE_ESCAPES: Record<string, string> = { '0': '\0', n: '\n', r: '\r', Z: '\x1a', '\\': '\\' };

/**
 * Splits `'a','b''c','d\\e'` (the inside of `enum(…)` as the server prints it in COLUMN_TYPE) into
 * values: a quote is doubled, and a backslash, NUL, CR and LF are backslash-escaped (checked
 * against MariaDB 10.11: the value `x\y` prints as `'x\\y'`).
 */
function enumValues(list: string): string[] {
  const values: string[] = [];
  const re = /'((?:[^'\\]|''|\\.)*)'/gs;
  for (let m = re.exec(list); m; m = re.exec(list))
    values.push((m[1] as string).replace(/''|\\(.)/gs, (_all, c: string | undefined) => (c === undefined ? "'" : (COLUMN_TYPE_ESCAPES[c] ?? c))));
  return values;
}

/**
 * A COLUMNS row → descriptor. COLUMN_TYPE is the server's canonical rendering (`int(10) unsigned
 * zerofill`, `decimal(12,2)`, `enum('a','b')`, `year(4)`), so reading it is safe.
 */
export function informationSchemaType(row: InformationSchemaColumn): TypeDescriptor {
  const columnType = row.COLUMN_TYPE.trim();
  const m = /^([a-z0-9_]+)(?:\((.*)\))?(.*)$/is.exec(columnType);
  if (!m) throw new UnsupportedTypeError(`COLUMN_TYPE ${columnType}`);
  const base = (m[1] as string).toLowerCase();
  const args = m[2] ?? '';
  const unsigned = /\bunsigned\b/i.test(m[3] ?? '');
  const charset = row.CHARACTER_SET_NAME ?? undefined;
  const collation = row.COLLATION_NAME ?? undefined;
  const nums = args.split(',').map((x) => Number(x.trim()));
  const strings = { ...(charset ? { charset } : {}), ...(collation ? { collation } : {}) };
  // COMPRESSED is how MariaDB stores the column, not what it holds: the binlog and SELECT carry the values.
  switch (base) {
    case 'decimal':
      return { base, precision: nums[0], scale: nums[1] ?? 0, unsigned };
    case 'float':
    case 'double':
      return { base, unsigned };
    case 'bit':
      return { base, length: nums[0] ?? 1 };
    case 'datetime':
    case 'timestamp':
    case 'time':
      return { base, fsp: Number(row.DATETIME_PRECISION ?? 0) };
    case 'char':
    case 'varchar':
    case 'binary':
    case 'varbinary':
    case 'vector':
      return { base, length: nums[0], ...strings };
    case 'enum':
    case 'set':
      return { base, values: enumValues(args), ...strings };
    case 'year':
      return { base };
    default:
      return INTEGERS.has(base) ? { base, unsigned } : { base, ...strings };
  }
}

// ---------------------------------------------------------------------------------------------
// binlog TABLE_MAP

/** The TABLE_MAP's type codes. */
const T = MysqlType;

const GEOMETRY_NAMES = ['geometry', 'point', 'linestring', 'polygon', 'multipoint', 'multilinestring', 'multipolygon', 'geomcollection'];
const LOB_BY_LENGTH_SIZE = ['', 'tinyblob', 'blob', 'mediumblob', 'longblob'];

/** One TABLE_MAP column as the binlog describes it with binlog_row_metadata=FULL (source/mysql/binlog/table-map.ts `tableMapColumns`). */
export interface TableMapColumn {
  readonly name: string;
  /** Type code, ENUM and SET as themselves (not the STRING they log as). */
  readonly type: number;
  readonly metadata?: Record<string, number> | null;
  /** Charset name; null/undefined for binary columns. */
  readonly charset?: string | null;
  readonly unsigned?: boolean;
  readonly values?: readonly string[];
  readonly geometryType?: number;
}

/** A TABLE_MAP column → descriptor. Byte lengths become characters through the charset. */
export function tableMapType(column: TableMapColumn): TypeDescriptor {
  const m = column.metadata ?? {};
  const charset = column.charset ?? undefined;
  const chars = (bytes: number) => {
    const per = maxBytesPerChar(charset as string);
    if (!per) throw new UnsupportedTypeError(`charset ${charset} of column ${column.name}`);
    return Math.floor(bytes / per);
  };
  switch (column.type) {
    case T.TINY:
      return { base: 'tinyint', unsigned: column.unsigned };
    case T.SHORT:
      return { base: 'smallint', unsigned: column.unsigned };
    case T.INT24:
      return { base: 'mediumint', unsigned: column.unsigned };
    case T.LONG:
      return { base: 'int', unsigned: column.unsigned };
    case T.LONGLONG:
      return { base: 'bigint', unsigned: column.unsigned };
    case T.DECIMAL:
    case T.NEWDECIMAL:
      return { base: 'decimal', precision: m.precision, scale: m.decimals, unsigned: column.unsigned };
    case T.FLOAT:
      return { base: 'float', unsigned: column.unsigned };
    case T.DOUBLE:
      return { base: 'double', unsigned: column.unsigned };
    case T.YEAR:
      return { base: 'year' };
    case T.BIT:
      return { base: 'bit', length: m.bits };
    case T.DATE:
    case T.NEWDATE:
      return { base: 'date' };
    // The pre-10.0 storage format (DATETIME, TIMESTAMP, TIME codes) logs no fraction digits: `fsp` unknown.
    case T.DATETIME:
    case T.DATETIME2:
      return column.type === T.DATETIME ? { base: 'datetime', fspUnknown: true } : { base: 'datetime', fsp: m.decimals ?? 0 };
    case T.TIMESTAMP:
    case T.TIMESTAMP2:
      return column.type === T.TIMESTAMP ? { base: 'timestamp', fspUnknown: true } : { base: 'timestamp', fsp: m.decimals ?? 0 };
    case T.TIME:
    case T.TIME2:
      return column.type === T.TIME ? { base: 'time', fspUnknown: true } : { base: 'time', fsp: m.decimals ?? 0 };
    case T.ENUM:
    case T.SET:
      return { base: column.type === T.ENUM ? 'enum' : 'set', values: column.values ?? [], ...(charset ? { charset } : {}) };
    case T.VARCHAR:
    case T.VARCHAR_COMPRESSED:
    case T.VAR_STRING:
    case T.STRING: {
      const char = column.type === T.STRING;
      // A COMPRESSED column's length counts one more byte (its compression header).
      const bytes = (m.max_length ?? 0) - (column.type === T.VARCHAR_COMPRESSED ? 1 : 0);
      if (!charset) return { base: char ? 'binary' : 'varbinary', length: bytes };
      return { base: char ? 'char' : 'varchar', length: chars(bytes), charset };
    }
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB:
    case T.BLOB_COMPRESSED: {
      const blob = LOB_BY_LENGTH_SIZE[m.length_size ?? 2] ?? 'blob';
      return charset ? { base: TEXT_FOR_BLOB[blob] as string, charset } : { base: blob };
    }
    // MySQL's binary JSON, which the TABLE_MAP gives no charset: the vocabulary's JSON, as DDL and
    // information_schema describe the column (not a LONGBLOB, which made every MySQL table with a
    // JSON column disagree with its version at its first row and be re-snapshotted). MariaDB's JSON
    // is a LONGTEXT and logs as one.
    case T.JSON:
      return { base: 'json' };
    case T.GEOMETRY:
      return { base: GEOMETRY_NAMES[column.geometryType ?? 0] ?? 'geometry' };
    case T.VECTOR:
      // The dimensions come with binlog_row_metadata=FULL (VECTOR_DIMENSIONALITY, in the column's metadata).
      return { base: 'vector', length: m.dimensions };
    default:
      throw new UnsupportedTypeError(`binlog type code ${column.type} of column ${column.name}`);
  }
}
