import type { ColumnInfo, ColumnSchema, TableMapEntry } from '@vlasky/zongji';
import iconv from 'iconv-lite';
import { MysqlType as T } from '../../../core/mysql-types.ts';
import type { TableMapColumn } from '../../../schema/column-type.ts';
import { iconvName } from './values.ts';
import type { EventParserOptions, PacketParser } from './zongji-hooks.ts';

/** TABLE_MAP_EVENT's type code. */
export const TABLE_MAP_EVENT = 19;

/** TABLE_MAP optional metadata field types (MySQL 8.0+; libbinlogevents rows_event.h Table_map_event::Optional_metadata_field_type). */
const FIELD = {
  SIGNEDNESS: 1,
  DEFAULT_CHARSET: 2,
  COLUMN_CHARSET: 3,
  COLUMN_NAME: 4,
  SET_STR_VALUE: 5,
  ENUM_STR_VALUE: 6,
  GEOMETRY_TYPE: 7,
  SIMPLE_PRIMARY_KEY: 8,
  PRIMARY_KEY_WITH_PREFIX: 9,
  ENUM_AND_SET_DEFAULT_CHARSET: 10,
  ENUM_AND_SET_COLUMN_CHARSET: 11,
  COLUMN_VISIBILITY: 12,
  /** MySQL 9.0+: the dimension count of each VECTOR column. */
  VECTOR_DIMENSIONALITY: 13,
} as const;

/**
 * The columns the SIGNEDNESS bitmap covers (the server's is_numeric_type, sql/log_event.cc), YEAR
 * included.
 */
const NUMERIC = new Set<number>([T.DECIMAL, T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL, T.FLOAT, T.DOUBLE, T.YEAR]);
/**
 * The columns the charset lists cover (is_character_type; binary ones with collation 63); ENUM and
 * SET have their own lists. MariaDB's COMPRESSED columns count (seen in a live 11.8 FULL TABLE_MAP),
 * and so does MySQL 9's VECTOR (a blob, collation 63: seen in a 9.0.1 TABLE_MAP whose TEXT column's
 * collation comes after a VECTOR's).
 */
const CHARACTER = new Set<number>([
  T.VARCHAR,
  T.VAR_STRING,
  T.STRING,
  T.BLOB,
  T.TINY_BLOB,
  T.MEDIUM_BLOB,
  T.LONG_BLOB,
  T.BLOB_COMPRESSED,
  T.VARCHAR_COMPRESSED,
  T.VECTOR,
]);
const BINARY_COLLATION_ID = 63;

/** Field_geom::geometry_type values of the GEOMETRY_TYPE field. */
const GEOMETRY_TYPE_NAMES = ['geometry', 'point', 'linestring', 'polygon', 'multipoint', 'multilinestring', 'multipolygon', 'geomcollection'];
/** The BLOB length prefix's width tells the four sizes apart: [binary, text]. */
const BLOB_TYPE_NAMES: Record<number, readonly [string, string]> = {
  1: ['tinyblob', 'tinytext'],
  2: ['blob', 'text'],
  3: ['mediumblob', 'mediumtext'],
  4: ['longblob', 'longtext'],
};

/**
 * Collation id → charset name, as information_schema.COLUMNS names them, so that a table described by
 * its TABLE_MAP looks as one described by information_schema. From MySQL 8.0 and 8.4's
 * information_schema.COLLATIONS (ids are append-only); every id added since 8.4 is utf8mb4. Ranges
 * [first, last, charset] where ids run consecutively with one charset.
 */
// biome-ignore format: a table, several entries a line
const COLLATION_RANGES: readonly (readonly [number, number, string])[] = [
  [1, 1, 'big5'], [2, 2, 'latin2'], [3, 3, 'dec8'], [4, 4, 'cp850'], [5, 5, 'latin1'], [6, 6, 'hp8'],
  [7, 7, 'koi8r'], [8, 8, 'latin1'], [9, 9, 'latin2'], [10, 10, 'swe7'], [11, 11, 'ascii'], [12, 12, 'ujis'],
  [13, 13, 'sjis'], [14, 14, 'cp1251'], [15, 15, 'latin1'], [16, 16, 'hebrew'], [18, 18, 'tis620'], [19, 19, 'euckr'],
  [20, 20, 'latin7'], [21, 21, 'latin2'], [22, 22, 'koi8u'], [23, 23, 'cp1251'], [24, 24, 'gb2312'], [25, 25, 'greek'],
  [26, 26, 'cp1250'], [27, 27, 'latin2'], [28, 28, 'gbk'], [29, 29, 'cp1257'], [30, 30, 'latin5'], [31, 31, 'latin1'],
  [32, 32, 'armscii8'], [33, 33, 'utf8mb3'], [34, 34, 'cp1250'], [35, 35, 'ucs2'], [36, 36, 'cp866'], [37, 37, 'keybcs2'],
  [38, 38, 'macce'], [39, 39, 'macroman'], [40, 40, 'cp852'], [41, 42, 'latin7'], [43, 43, 'macce'],
  [44, 44, 'cp1250'], [45, 46, 'utf8mb4'], [47, 49, 'latin1'], [50, 52, 'cp1251'], [53, 53, 'macroman'], [54, 55, 'utf16'],
  [56, 56, 'utf16le'], [57, 57, 'cp1256'], [58, 59, 'cp1257'], [60, 61, 'utf32'],
  [62, 62, 'utf16le'], [63, 63, 'binary'], [64, 64, 'armscii8'], [65, 65, 'ascii'], [66, 66, 'cp1250'], [67, 67, 'cp1256'],
  [68, 68, 'cp866'], [69, 69, 'dec8'], [70, 70, 'greek'], [71, 71, 'hebrew'], [72, 72, 'hp8'], [73, 73, 'keybcs2'],
  [74, 74, 'koi8r'], [75, 75, 'koi8u'], [76, 76, 'utf8mb3'], [77, 77, 'latin2'], [78, 78, 'latin5'], [79, 79, 'latin7'],
  [80, 80, 'cp850'], [81, 81, 'cp852'], [82, 82, 'swe7'], [83, 83, 'utf8mb3'], [84, 84, 'big5'], [85, 85, 'euckr'],
  [86, 86, 'gb2312'], [87, 87, 'gbk'], [88, 88, 'sjis'], [89, 89, 'tis620'], [90, 90, 'ucs2'], [91, 91, 'ujis'],
  [92, 93, 'geostd8'], [94, 94, 'latin1'], [95, 96, 'cp932'], [97, 98, 'eucjpms'],
  [99, 99, 'cp1250'], [101, 124, 'utf16'], [128, 151, 'ucs2'], [159, 159, 'ucs2'], [160, 183, 'utf32'],
  [192, 215, 'utf8mb3'], [223, 223, 'utf8mb3'], [224, 247, 'utf8mb4'], [248, 250, 'gb18030'], [255, 271, 'utf8mb4'],
  [273, 275, 'utf8mb4'], [277, 294, 'utf8mb4'], [296, 298, 'utf8mb4'], [300, 300, 'utf8mb4'], [303, 323, 'utf8mb4'],
];
const COLLATION_CHARSETS = new Map<number, string>();
for (const [first, last, charset] of COLLATION_RANGES) for (let id = first; id <= last; id++) COLLATION_CHARSETS.set(id, charset);
const collationCharset = (id: number) => COLLATION_CHARSETS.get(id) ?? 'utf8mb4';

/** Bytes per character, to turn the byte widths of the column metadata into character widths. */
// biome-ignore format: a table, several entries a line
const MAX_BYTES_PER_CHAR: Record<string, number> = {
  armscii8: 1, ascii: 1, big5: 2, binary: 1, cp1250: 1, cp1251: 1, cp1256: 1, cp1257: 1, cp850: 1, cp852: 1, cp866: 1, cp932: 2,
  dec8: 1, eucjpms: 3, euckr: 2, gb18030: 4, gb2312: 2, gbk: 2, geostd8: 1, greek: 1, hebrew: 1, hp8: 1, keybcs2: 1, koi8r: 1,
  koi8u: 1, latin1: 1, latin2: 1, latin5: 1, latin7: 1, macce: 1, macroman: 1, sjis: 2, swe7: 1, tis620: 1, ucs2: 2, ujis: 3,
  utf16: 4, utf16le: 4, utf32: 4, utf8mb3: 3, utf8mb4: 4,
};
const maxBytesPerChar = (charset: string | null) => (charset && MAX_BYTES_PER_CHAR[charset]) || 4;

/**
 * ENUM/SET labels, raw bytes in the column's charset, as text, decoded as the column's values are
 * (values.ts): a charset iconv-lite does not know (swe7) is reported on the console and read as utf8.
 */
function decodeLabels(labels: readonly Buffer[] | undefined, charset: string | null): string[] {
  if (!labels) return [];
  const name = iconvName(charset);
  return labels.map((label) => {
    if (name === 'utf8') return label.toString('utf8');
    try {
      // A leading U+FEFF is a character of the label, not a byte-order mark.
      return iconv.decode(label, name, { stripBOM: false });
    } catch (error) {
      console.warn(error);
      return label.toString('utf8');
    }
  });
}

/** One column's metadata from the TABLE_MAP's per-column block (`type`: the real type of an ENUM/SET, until `updateColumnInfo`). */
export interface ColumnMetadata {
  type?: number;
  size?: number;
  max_length?: number;
  bits?: number;
  precision?: number;
  decimals?: number;
  length_size?: number;
  /** A VECTOR's dimension count (VECTOR_DIMENSIONALITY, FULL metadata). */
  dimensions?: number;
}

/** What a column's type name is made from: its metadata, charset (null: binary or unknown), ENUM/SET labels and geometry type. */
interface TypeContext {
  readonly m: ColumnMetadata;
  readonly binary: boolean;
  readonly charset: string | null;
  readonly labels: readonly string[];
  readonly geometryType: number | undefined;
}
const named = (name: string) => () => name;
/** A temporal type with its fractional digits, when it has any. */
const fractional =
  (name: string) =>
  ({ m }: TypeContext) =>
    m.decimals ? `${name}(${m.decimals})` : name;
const blob = ({ m, binary }: TypeContext) => (BLOB_TYPE_NAMES[m.length_size as number] ?? BLOB_TYPE_NAMES[2])?.[binary ? 0 : 1] as string;
/** The metadata has byte widths; character widths follow from the charset. */
const chars = ({ charset }: TypeContext, bytes: number) => Math.floor(bytes / maxBytesPerChar(charset));
const text = (binaryName: string, textName: string) => (c: TypeContext) =>
  c.binary ? `${binaryName}(${c.m.max_length})` : `${textName}(${chars(c, c.m.max_length as number)})`;
const labelList = (labels: readonly string[]) => labels.map((label) => `'${label.replace(/'/g, "''")}'`).join(',');
const decimal = ({ m }: TypeContext) => `decimal(${m.precision},${m.decimals})`;

/** COLUMN_TYPE as information_schema shows it, from the binlog's type code (the real type, metadata applied). */
const COLUMN_TYPES: Partial<Record<number, (column: TypeContext) => string>> = {
  [T.TINY]: named('tinyint'),
  [T.SHORT]: named('smallint'),
  [T.INT24]: named('mediumint'),
  [T.LONG]: named('int'),
  [T.LONGLONG]: named('bigint'),
  [T.FLOAT]: named('float'),
  [T.DOUBLE]: named('double'),
  [T.DECIMAL]: decimal,
  [T.NEWDECIMAL]: decimal,
  [T.YEAR]: named('year'),
  [T.STRING]: text('binary', 'char'),
  [T.VARCHAR]: text('varbinary', 'varchar'),
  [T.VAR_STRING]: text('varbinary', 'varchar'),
  [T.TINY_BLOB]: blob,
  [T.MEDIUM_BLOB]: blob,
  [T.LONG_BLOB]: blob,
  [T.BLOB]: blob,
  // As MariaDB's information_schema shows a COMPRESSED column; VARCHAR's max_length counts the compression header's byte.
  [T.BLOB_COMPRESSED]: (c) => `${blob(c)} /*M!100301 COMPRESSED*/`,
  [T.VARCHAR_COMPRESSED]: (c) => {
    const bytes = (c.m.max_length as number) - 1;
    return c.binary ? `varbinary(${bytes}) /*M!100301 COMPRESSED*/` : `varchar(${chars(c, bytes)}) /*M!100301 COMPRESSED*/`;
  },
  [T.ENUM]: ({ labels }) => `enum(${labelList(labels)})`,
  [T.SET]: ({ labels }) => `set(${labelList(labels)})`,
  [T.BIT]: ({ m }) => `bit(${m.bits})`,
  [T.JSON]: named('json'),
  [T.VECTOR]: ({ m }) => (m.dimensions === undefined ? 'vector' : `vector(${m.dimensions})`),
  [T.GEOMETRY]: ({ geometryType }) => GEOMETRY_TYPE_NAMES[geometryType as number] ?? 'geometry',
  [T.TIMESTAMP]: fractional('timestamp'),
  [T.TIMESTAMP2]: fractional('timestamp'),
  [T.DATETIME]: fractional('datetime'),
  [T.DATETIME2]: fractional('datetime'),
  [T.TIME]: fractional('time'),
  [T.TIME2]: fractional('time'),
  [T.DATE]: named('date'),
  [T.NEWDATE]: named('date'),
};

/** The fields a TABLE_MAP's parse sets, which a byte-identical one reuses. */
interface TableMapFields {
  tableId: number;
  flags: number;
  schemaName: string;
  tableName: string;
  columnCount: number;
  columnTypes: number[];
  columnsMetadata: (ColumnMetadata | undefined)[];
  columnNames: string[] | undefined;
  signedness: (boolean | undefined)[] | undefined;
  primaryKey: number[] | undefined;
  columnVisibility: boolean[] | undefined;
  geometryTypes: (number | undefined)[] | undefined;
  columnCharsetIds: (number | undefined)[] | undefined;
  enumSetValues: (Buffer[] | undefined)[] | undefined;
}

/** What a byte-identical TABLE_MAP reuses: the event's body, its parse, and what zongji built from it. */
interface Reusable {
  readonly body: Buffer;
  readonly fields: TableMapFields;
  readonly columnSchemas: ColumnSchema[];
  readonly columns: ColumnInfo[];
}

/** The stream a TABLE_MAP is parsed for: zongji's table cache and what it knows of the server. */
export interface TableMapStream {
  readonly tableMap: Record<number, TableMapEntry>;
  readonly useChecksum: boolean;
  readonly isMariaDb: boolean;
}

/** Whether a table's events are left out (its TABLE_MAP and so its rows). */
export type SkipTable = (database: string, table: string) => boolean;

/** The class a `setEventParser` registration takes: constructed by zongji for each TABLE_MAP. */
export type TableMapClass = new (parser: PacketParser, options: EventParserOptions, stream: TableMapStream) => TableMap;

/** The TABLE_MAP event as sluice parses it; zongji's handler calls the methods below by name. */
export interface TableMap extends TableMapFields {
  readonly timestamp: number;
  readonly nextPosition: number;
  readonly size: number;
  readonly tableMap: Record<number, TableMapEntry>;
  /** Byte for byte its table id's last self-described TABLE_MAP: columns and descriptors are those of that one. */
  readonly unchanged: boolean;
  /** Left out by the table filter: zongji drops it, and the table's rows with it. */
  readonly _filtered: boolean;
  gtid?: string;
  getTypeName(): 'TableMap';
  getEventName(): 'tablemap';
  /** binlog_row_metadata=FULL: the event alone describes the table, no information_schema needed. */
  hasSelfDescribingMetadata(): boolean;
  /** MariaDB's classic temporal codes may hide 5.3 "hires" columns: only the table's definition tells. */
  hasAmbiguousTemporalColumns(): boolean;
  /** information_schema.COLUMNS-shaped rows from the event's own metadata (when self-described). */
  buildColumnSchemas(): ColumnSchema[];
  /** Sets zongji's column descriptors of the table from the event and its column schemas. */
  updateColumnInfo(): void;
}

/** What the TABLE_MAPs of one registration share: the table filter and the parses to reuse. */
interface ParserContext {
  readonly skip: SkipTable | undefined;
  /** Table id → the last self-described TABLE_MAP. */
  readonly reusable: Map<number, Reusable>;
}

/** The TABLE_MAP event, as `tableMapParser`'s classes parse it. */
class TableMapEvent implements TableMap {
  readonly timestamp: number;
  readonly nextPosition: number;
  readonly size: number;
  readonly tableMap: Record<number, TableMapEntry>;
  unchanged = false;
  _filtered = false;
  gtid?: string;
  tableId = 0;
  flags = 0;
  schemaName = '';
  tableName = '';
  columnCount = 0;
  columnTypes: number[] = [];
  columnsMetadata: (ColumnMetadata | undefined)[] = [];
  columnNames: string[] | undefined;
  signedness: (boolean | undefined)[] | undefined;
  primaryKey: number[] | undefined;
  columnVisibility: boolean[] | undefined;
  geometryTypes: (number | undefined)[] | undefined;
  columnCharsetIds: (number | undefined)[] | undefined;
  enumSetValues: (Buffer[] | undefined)[] | undefined;
  private readonly isMariaDb: boolean;
  private readonly context: ParserContext;
  private readonly body: Buffer | undefined;
  private reused: Reusable | undefined;

  constructor(parser: PacketParser, options: EventParserOptions, stream: TableMapStream, context: ParserContext) {
    this.context = context;
    this.timestamp = options.timestamp;
    this.nextPosition = options.nextPosition;
    this.size = options.size;
    this.tableMap = stream.tableMap;
    this.isMariaDb = stream.isMariaDb;

    const end = parser._packetEnd - (stream.useChecksum ? 4 : 0);
    const body = parser._buffer.subarray(parser._offset, end);
    const cached = body.length >= 6 ? context.reusable.get(parser._buffer.readUIntLE(parser._offset, 6)) : undefined;
    if (cached?.body.equals(body) && stream.tableMap[cached.fields.tableId]) {
      Object.assign(this, cached.fields);
      this.reused = cached;
      this.unchanged = true;
      parser._offset = parser._packetEnd;
      return;
    }
    this.body = Buffer.from(body);

    // post-header
    this.tableId = parser.parseUnsignedNumber(4) + parser.parseUnsignedNumber(2) * 2 ** 32;
    this.flags = parser.parseUnsignedNumber(2);
    // payload: each name is followed by a NUL
    this.schemaName = parser.parseBuffer(parser.parseUnsignedNumber(1)).toString('utf8');
    parser.parseUnsignedNumber(1);
    this.tableName = parser.parseBuffer(parser.parseUnsignedNumber(1)).toString('utf8');

    const skipped = context.skip
      ? context.skip(this.schemaName, this.tableName)
      : (stream as unknown as { _skipSchema: SkipTable })._skipSchema(this.schemaName, this.tableName);
    if (skipped) {
      parser._offset = parser._packetEnd;
      this._filtered = true;
      // So that the table's rows are left out too.
      delete this.tableMap[this.tableId];
      return;
    }
    parser.parseUnsignedNumber(1);
    this.columnCount = parser.parseLengthCodedNumber() ?? 0;
    for (let i = 0; i < this.columnCount; i++) this.columnTypes.push(parser.parseUnsignedNumber(1));
    // the column metadata's length
    parser.parseLengthCodedNumber();
    this.columnsMetadata = this.columnTypes.map((type) => readColumnMetadata(parser, type));
    try {
      this.readOptionalMetadata(parser, end);
    } catch {
      // A malformed or unrecognised optional metadata block must not break the stream: without
      // it the table takes the information_schema path, as before MySQL 8.0.
      this.columnNames = undefined;
      this.signedness = undefined;
      this.primaryKey = undefined;
      this.columnVisibility = undefined;
      this.geometryTypes = undefined;
      this.columnCharsetIds = undefined;
      this.enumSetValues = undefined;
    }
    // zongji looks its columns up in information_schema: nothing to reuse (see updateColumnInfo).
    if (!this.selfDescribed()) context.reusable.delete(this.tableId);
  }

  getTypeName(): 'TableMap' {
    return 'TableMap';
  }

  getEventName(): 'tablemap' {
    return 'tablemap';
  }

  /** ENUM and SET log as STRING; their real type is in the column's metadata. */
  private effectiveType(index: number): number {
    return this.columnsMetadata[index]?.type || (this.columnTypes[index] as number);
  }

  /**
   * The subsets of the columns the optional metadata's bitmaps and lists cover, by real type, in
   * table order. MariaDB's charset lists count GEOMETRY (a blob) as a character column: leaving it
   * out would shift every later column's charset.
   */
  private subsets() {
    const subsets = {
      numeric: [] as number[],
      character: [] as number[],
      enumSet: [] as number[],
      enums: [] as number[],
      sets: [] as number[],
      geometry: [] as number[],
      vectors: [] as number[],
    };
    for (let i = 0; i < this.columnCount; i++) {
      const type = this.effectiveType(i);
      if (NUMERIC.has(type)) subsets.numeric.push(i);
      else if (type === T.ENUM || type === T.SET) {
        subsets.enumSet.push(i);
        (type === T.ENUM ? subsets.enums : subsets.sets).push(i);
      } else if (CHARACTER.has(type)) subsets.character.push(i);
      else if (type === T.GEOMETRY) {
        subsets.geometry.push(i);
        if (this.isMariaDb) subsets.character.push(i);
      }
      if (this.columnTypes[i] === T.VECTOR) subsets.vectors.push(i);
    }
    return subsets;
  }

  /**
   * The optional metadata block MySQL 8.0+ appends (binlog_row_metadata=MINIMAL or FULL), absent
   * on older servers. Its bitmaps and lists cover subsets of the columns classified by real type,
   * in table order.
   */
  private readOptionalMetadata(parser: PacketParser, end: number): void {
    // One nullability bit per column sits between the column metadata and the optional block.
    parser.parseBuffer(Math.floor((this.columnCount + 7) / 8));
    if (parser._offset >= end) return;

    const { numeric, character, enumSet, enums, sets, geometry, vectors } = this.subsets();

    const { number, readBitmap, readDefaultCharset, readColumnCharsets, readLabels, readNumbers } = fieldReaders(parser);

    const charsetIds: (number | undefined)[] = new Array(this.columnCount);
    while (parser._offset < end) {
      const type = parser.parseUnsignedNumber(1);
      const length = parser.parseLengthCodedNumber();
      const fieldEnd = parser._offset + (length ?? 0);
      if (length === null || fieldEnd > end) throw new Error('Malformed TABLE_MAP_EVENT optional metadata');
      let handled = true;
      switch (type) {
        case FIELD.SIGNEDNESS:
          this.signedness = new Array(this.columnCount);
          readBitmap(numeric, this.signedness);
          break;
        case FIELD.DEFAULT_CHARSET:
          readDefaultCharset(fieldEnd, character, charsetIds);
          break;
        case FIELD.COLUMN_CHARSET:
          readColumnCharsets(fieldEnd, character, charsetIds);
          break;
        case FIELD.COLUMN_NAME: {
          const names: string[] = [];
          while (parser._offset < fieldEnd) names.push(parser.parseBuffer(number()).toString('utf8'));
          this.columnNames = names;
          break;
        }
        case FIELD.SET_STR_VALUE:
          this.enumSetValues ??= new Array(this.columnCount);
          readLabels(fieldEnd, sets, this.enumSetValues);
          break;
        case FIELD.ENUM_STR_VALUE:
          this.enumSetValues ??= new Array(this.columnCount);
          readLabels(fieldEnd, enums, this.enumSetValues);
          break;
        case FIELD.ENUM_AND_SET_DEFAULT_CHARSET:
          readDefaultCharset(fieldEnd, enumSet, charsetIds);
          break;
        case FIELD.ENUM_AND_SET_COLUMN_CHARSET:
          readColumnCharsets(fieldEnd, enumSet, charsetIds);
          break;
        case FIELD.SIMPLE_PRIMARY_KEY: {
          const key: number[] = [];
          while (parser._offset < fieldEnd) key.push(number());
          this.primaryKey = key;
          break;
        }
        case FIELD.PRIMARY_KEY_WITH_PREFIX: {
          const key: number[] = [];
          while (parser._offset < fieldEnd) {
            key.push(number());
            // the prefix length in characters; 0 = the whole column
            number();
          }
          this.primaryKey = key;
          break;
        }
        case FIELD.GEOMETRY_TYPE: {
          const types: (number | undefined)[] = new Array(this.columnCount);
          readNumbers(fieldEnd, geometry, (column, value) => {
            types[column] = value;
          });
          this.geometryTypes = types;
          break;
        }
        case FIELD.VECTOR_DIMENSIONALITY:
          // Kept in the column's metadata beside its length size.
          readNumbers(fieldEnd, vectors, (column, value) => {
            (this.columnsMetadata[column] as ColumnMetadata).dimensions = value;
          });
          break;
        case FIELD.COLUMN_VISIBILITY:
          this.columnVisibility = new Array(this.columnCount).fill(false);
          readBitmap(
            Array.from({ length: this.columnCount }, (_, i) => i),
            this.columnVisibility,
          );
          break;
        default:
          // Fields of later servers are skipped by their length, below.
          handled = false;
      }
      // A known field consumes its length exactly; a mismatch either way means the block is
      // corrupt, and none of it is trusted (the constructor's catch).
      if (handled ? parser._offset !== fieldEnd : parser._offset > fieldEnd) throw new Error('Malformed TABLE_MAP_EVENT optional metadata');
      parser._offset = fieldEnd;
    }
    this.columnCharsetIds = charsetIds;
  }

  hasSelfDescribingMetadata(): boolean {
    return this.columnNames !== undefined && this.columnNames.length === this.columnCount;
  }

  hasAmbiguousTemporalColumns(): boolean {
    return this.columnTypes.some((type) => type === T.TIMESTAMP || type === T.TIME || type === T.DATETIME);
  }

  /** zongji takes this path (and so reuse applies) under the same condition (its TableMap handler). */
  private selfDescribed(): boolean {
    return this.hasSelfDescribingMetadata() && !(this.isMariaDb && this.hasAmbiguousTemporalColumns());
  }

  buildColumnSchemas(): ColumnSchema[] {
    if (this.reused) return this.reused.columnSchemas;
    const schemas: ColumnSchema[] = [];
    for (let i = 0; i < this.columnCount; i++) schemas.push(this.columnSchema(i));
    return schemas;
  }

  private columnSchema(i: number): ColumnSchema {
    const type = this.effectiveType(i);
    const charsetId = this.columnCharsetIds?.[i];
    const binary = charsetId === BINARY_COLLATION_ID;
    const charset = charsetId === undefined || binary ? null : collationCharset(charsetId);
    const unsigned = this.signedness?.[i];
    const labels = type === T.ENUM || type === T.SET ? decodeLabels(this.enumSetValues?.[i], charset) : [];
    const column = { m: this.columnsMetadata[i] ?? {}, binary, charset, labels, geometryType: this.geometryTypes?.[i] };
    const schema: ColumnSchema = {
      COLUMN_NAME: this.columnNames?.[i] as string,
      COLLATION_NAME: null,
      CHARACTER_SET_NAME: charset,
      COLUMN_COMMENT: '',
      COLUMN_TYPE: COLUMN_TYPES[type]?.(column) ?? '',
    };
    if (type === T.ENUM) schema.ENUM_VALUES = labels;
    else if (type === T.SET) schema.SET_VALUES = labels;
    if (unsigned !== undefined && NUMERIC.has(type)) {
      schema.UNSIGNED = unsigned;
      if (unsigned && type !== T.YEAR) schema.COLUMN_TYPE += ' unsigned';
    }
    return schema;
  }

  updateColumnInfo(): void {
    const table = this.tableMap[this.tableId] as TableMapEntry;
    if (this.reused) {
      table.columns = this.reused.columns;
      return;
    }
    const metadata = this.columnsMetadata;
    for (let i = 0; i < this.columnCount; i++) {
      const real = metadata[i]?.type;
      if (real) {
        this.columnTypes[i] = real;
        delete (metadata[i] as ColumnMetadata).type;
      }
    }
    const schemas = table.columnSchemas;
    // The table changed between the event's writing and the information_schema read: fail
    // diagnosably rather than with a TypeError on a missing column.
    if (!schemas || schemas.length < this.columnCount)
      throw new Error(
        `Table ${this.schemaName}.${this.tableName} schema changed between binlog event and metadata fetch: the event has ${this.columnCount} columns, fetched metadata has ${schemas ? schemas.length : 0}`,
      );
    // Even under MINIMAL metadata the binlog's signedness, as of the event's writing, wins over
    // information_schema's.
    if (this.signedness && schemas.length === this.columnCount)
      for (let i = 0; i < this.columnCount; i++) {
        const unsigned = this.signedness[i];
        if (unsigned !== undefined) (schemas[i] as ColumnSchema).UNSIGNED = unsigned;
      }
    const columns: ColumnInfo[] = [];
    for (let j = 0; j < this.columnCount; j++) {
      const schema = schemas[j] as ColumnSchema;
      columns.push({
        name: schema.COLUMN_NAME,
        charset: schema.CHARACTER_SET_NAME,
        type: this.columnTypes[j] as number,
        metadata: metadata[j] as ColumnInfo['metadata'],
      });
    }
    table.columns = columns;
    if (this.selfDescribed() && this.body) this.context.reusable.set(this.tableId, { body: this.body, fields: this.fields(), columnSchemas: schemas, columns });
  }

  /** The parse's fields, with ENUM/SET labels copied out of the packet's buffer so that no packet stays in memory. */
  private fields(): TableMapFields {
    return {
      tableId: this.tableId,
      flags: this.flags,
      schemaName: this.schemaName,
      tableName: this.tableName,
      columnCount: this.columnCount,
      columnTypes: this.columnTypes,
      columnsMetadata: this.columnsMetadata,
      columnNames: this.columnNames,
      signedness: this.signedness,
      primaryKey: this.primaryKey,
      columnVisibility: this.columnVisibility,
      geometryTypes: this.geometryTypes,
      columnCharsetIds: this.columnCharsetIds,
      enumSetValues: this.enumSetValues?.map((labels) => labels?.map((label) => Buffer.from(label))),
    };
  }
}

/**
 * The TABLE_MAP_EVENT parser, registered through zongji's `setEventParser`: zongji's own, plus what
 * sluice needs of it.
 * - VECTOR (MySQL 9): its metadata (the length size, as a BLOB's), its charset slot and its
 *   dimensions (VECTOR_DIMENSIONALITY).
 * - GEOMETRY on MariaDB: its charset lists count GEOMETRY (a blob) as a character column; leaving
 *   it out shifts every later column's charset.
 * - Reuse: a server writes a TABLE_MAP before each statement's rows, one per transaction for OLTP.
 *   One byte for byte the same as its table id's last self-described one means the same table,
 *   columns and metadata: that parse is reused, zongji's handler gets back the same column schemas
 *   and descriptors (which the reader has already adapted) and `unchanged` tells the reader that
 *   nothing needs rebuilding. Only the parse's fields are kept, with no view of a packet's buffer.
 * `skip` is the table filter (zongji's own when not given). The class's name is the event's name.
 */
export function tableMapParser(skip?: SkipTable): TableMapClass {
  const context: ParserContext = { skip, reusable: new Map() };
  class Registered extends TableMapEvent {
    constructor(parser: PacketParser, options: EventParserOptions, stream: TableMapStream) {
      super(parser, options, stream, context);
    }
  }
  // zongji names an event by its class's name, which a bundler may change: set, not inferred.
  Object.defineProperty(Registered, 'name', { value: 'TableMap' });
  return Registered;
}

/** Readers of the optional metadata's field values, at the parser's offset (each up to its field's end). */
function fieldReaders(parser: PacketParser) {
  const number = () => parser.parseLengthCodedNumber() ?? 0;
  return {
    number,
    /** MSB-first, one bit per entry of `indexes`, set back at the columns' positions. */
    readBitmap(indexes: number[], target: unknown[]) {
      const bytes = parser.parseBuffer(Math.floor((indexes.length + 7) / 8));
      indexes.forEach((column, i) => {
        target[column] = ((bytes[i >> 3] as number) & (0x80 >> (i % 8))) !== 0;
      });
    },
    /** DEFAULT_CHARSET: the default collation, then (position among `indexes`, collation) pairs for those that differ. */
    readDefaultCharset(fieldEnd: number, indexes: number[], target: (number | undefined)[]) {
      const collation = number();
      for (const column of indexes) target[column] = collation;
      while (parser._offset < fieldEnd) {
        const position = number();
        const other = number();
        if (position < indexes.length) target[indexes[position] as number] = other;
      }
    },
    /** COLUMN_CHARSET: one collation per entry of `indexes`. */
    readColumnCharsets(fieldEnd: number, indexes: number[], target: (number | undefined)[]) {
      for (let i = 0; parser._offset < fieldEnd; i++) {
        const collation = number();
        if (i < indexes.length) target[indexes[i] as number] = collation;
      }
    },
    /** SET_STR_VALUE/ENUM_STR_VALUE, per column: a count, then that many length-coded labels (raw bytes). */
    readLabels(fieldEnd: number, indexes: number[], target: (Buffer[] | undefined)[]) {
      for (let i = 0; parser._offset < fieldEnd; i++) {
        const count = number();
        const labels: Buffer[] = [];
        for (let j = 0; j < count; j++) labels.push(parser.parseBuffer(number()));
        if (i < indexes.length) target[indexes[i] as number] = labels;
      }
    },
    /** One length-coded number per entry of `indexes`. */
    readNumbers(fieldEnd: number, indexes: number[], set: (column: number, value: number) => void) {
      for (let i = 0; parser._offset < fieldEnd; i++) {
        const value = number();
        if (i < indexes.length) set(indexes[i] as number, value);
      }
    },
  };
}

/** One column's entry in the TABLE_MAP's per-column metadata block, by its type code. */
function readColumnMetadata(parser: PacketParser, type: number): ColumnMetadata | undefined {
  switch (type) {
    case T.FLOAT:
    case T.DOUBLE:
      return { size: parser.parseUnsignedNumber(1) };
    case T.VARCHAR:
    case T.VARCHAR_COMPRESSED:
      return { max_length: parser.parseUnsignedNumber(2) };
    case T.BIT: {
      const bits = parser.parseUnsignedNumber(1);
      const bytes = parser.parseUnsignedNumber(1);
      return { bits: bytes * 8 + bits };
    }
    case T.NEWDECIMAL:
      return { precision: parser.parseUnsignedNumber(1), decimals: parser.parseUnsignedNumber(1) };
    case T.BLOB:
    case T.BLOB_COMPRESSED:
    case T.GEOMETRY:
    case T.JSON:
    case T.VECTOR:
      return { length_size: parser.parseUnsignedNumber(1) };
    case T.STRING:
    case T.VAR_STRING: {
      // The first byte is the real type: ENUM and SET log as STRING, their real type kept in `type`
      // until updateColumnInfo sets it as the column's.
      const metadata = (parser.parseUnsignedNumber(1) << 8) + parser.parseUnsignedNumber(1);
      const real = metadata >> 8;
      if (real === T.ENUM || real === T.SET) return { type: real, size: metadata & 0xff };
      return { max_length: (((metadata >> 4) & 0x300) ^ 0x300) + (metadata & 0xff) };
    }
    case T.TIMESTAMP2:
    case T.DATETIME2:
    case T.TIME2:
      return { decimals: parser.parseUnsignedNumber(1) };
    default:
      return undefined;
  }
}

/**
 * The columns of a TABLE_MAP (binlog_row_metadata=FULL) once zongji has built its descriptors from
 * it: names, types, signedness, charsets and ENUM/SET values. The nullability bitmap is not decoded.
 */
export function tableMapColumns(ev: TableMap): TableMapColumn[] {
  const map = ev.tableMap[ev.tableId];
  const schemas = map?.columnSchemas ?? [];
  return (map?.columns ?? []).map((c, i) => ({
    name: c.name,
    type: c.type,
    metadata: (c.metadata as TableMapColumn['metadata']) ?? null,
    charset: c.charset ?? null,
    unsigned: ev.signedness?.[i] === true,
    values: schemas[i]?.ENUM_VALUES ?? schemas[i]?.SET_VALUES,
    geometryType: ev.geometryTypes?.[i],
  }));
}
