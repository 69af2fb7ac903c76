import zlib from 'node:zlib';
import type { TableMapEntry } from '@vlasky/zongji';
import { MysqlType as T } from '../../../core/mysql-types.ts';
import { type Cursor, readLengthCoded, readValue, type ValueColumn, type ValueConfig, type ValueOptions, type ValueSchema, valueOptions } from './values.ts';
import type { EventParserOptions, PacketParser } from './zongji-hooks.ts';

/*
 * The rows events (WRITE_ROWS, UPDATE_ROWS, DELETE_ROWS), registered through zongji's
 * `setEventParser` for every code zongji maps to them, and shaped as zongji's own (lib/rows_event.js
 * in 0.9.0): the reader and the guards read `tableMap`, `tableId`, `rows`, `numberOfColumns` and the
 * columns-present bitmaps off them. Layout: libbinlogevents rows_event.h Rows_event; row images:
 * sql/rpl_record.cc pack_row. A row is an object of the table's columns by name; a column the
 * image leaves out (binlog_row_image=MINIMAL/NOBLOB) is absent from it, not NULL.
 */

/** The event codes of each kind: V1 (MySQL 5.1-5.5), V2, MySQL's PARTIAL_UPDATE_ROWS, MariaDB's log_bin_compress ones (V1 layout, then V2). */
export const ROWS_EVENT_CODES = {
  write: [0x17, 0x1e, 0xa6, 0xa9],
  update: [0x18, 0x1f, 0x27, 0xa7, 0xaa],
  delete: [0x19, 0x20, 0xa8, 0xab],
} as const;

/** V2 layouts: an extra-data block follows the flags. */
const V2 = new Set([0x1e, 0x1f, 0x20, 0x27, 0xa9, 0xaa, 0xab]);
/** MariaDB log_bin_compress=ON: the row images (from the first row's null bitmap on) are one compressed envelope. */
const COMPRESSED = new Set([0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab]);
/**
 * MySQL binlog_row_value_options=PARTIAL_JSON: an UPDATE_ROWS_EVENT_V2 whose after images may hold
 * JSON columns as diffs, delivered as an UpdateRows whose values are `{ partialJson: bytes }`.
 */
const PARTIAL_UPDATE_ROWS = 0x27;
const CHECKSUM_SIZE = 4;

/** A row image: the present columns' values by name. */
export type Row = Record<string, unknown>;

/** A partial update's after value of a JSON column: its diffs' bytes (json.ts applies them). */
export interface PartialJson {
  readonly partialJson: unknown;
}

/** The stream a rows event is parsed for: zongji's table map cache, its checksum, its connection's options. */
export interface RowsStream {
  readonly tableMap: Record<number, TableMapEntry>;
  readonly useChecksum: boolean;
  readonly connection?: { readonly config?: ValueConfig } | null;
  emit(event: 'error', error: Error): unknown;
}

/**
 * MariaDB's compressed event payload (sql/log_event.cc binlog_buf_uncompress): a header byte with
 * bit 7 set, bits 4-6 the algorithm (0, zlib), bits 0-2 the width of the big-endian original
 * length that follows; then a zlib stream.
 */
export function inflateRowImages(bytes: Buffer): Buffer {
  if (bytes.length < 1) throw new Error('Empty compressed binlog event payload');
  const header = bytes[0] as number;
  if ((header & 0x80) === 0 || (header & 0x70) >> 4 !== 0) throw new Error(`Unknown binlog event compression header 0x${header.toString(16)}`);
  const width = header & 0x07;
  if (width < 1 || width > 4 || bytes.length < 1 + width) throw new Error(`Corrupt binlog event compression header 0x${header.toString(16)}`);
  const length = bytes.readUIntBE(1, width);
  const inflated = zlib.inflateSync(bytes.subarray(1 + width));
  if (inflated.length !== length) throw new Error(`Compressed binlog event inflated to ${inflated.length} bytes, expected ${length}`);
  return inflated;
}

/** Set bits in a bitmap. */
export function countBits(bitmap: Buffer): number {
  let bits = 0;
  for (const byte of bitmap) {
    let b = byte;
    while (b) {
      b &= b - 1;
      bits++;
    }
  }
  return bits;
}

/** What reading a row image needs of its event: the table's columns and definitions, the options values are read by. */
export interface RowTable {
  readonly columns: readonly ValueColumn[];
  readonly columnSchemas: readonly (ValueSchema | undefined)[];
  readonly tableName: string;
  readonly parentSchema: string;
}

/**
 * One row image at the cursor: its null bitmap (a bit per present column), then the present,
 * non-NULL values. `diffs` (a partial update's after image): bit j set when the table's j-th JSON
 * column holds diffs, handed over as { partialJson } (sql/json_diff.cc).
 */
export function readRow(cur: Cursor, table: RowTable, present: Buffer, presentCount: number, opts: ValueOptions, diffs?: Buffer): Row {
  const buf = cur.buf;
  const nulls = cur.pos;
  cur.pos += (presentCount + 7) >> 3;
  const { columns, columnSchemas } = table;
  const row: Row = {};
  for (let i = 0, nullIndex = 0, jsonIndex = -1; i < columns.length; i++) {
    const column = columns[i] as ValueColumn;
    if (diffs && column.type === T.JSON) jsonIndex++;
    if (((present[i >> 3] ?? 0) & (1 << (i & 7))) === 0) continue;
    if (((buf[nulls + (nullIndex >> 3)] as number) & (1 << (nullIndex & 7))) !== 0) {
      row[column.name] = null;
    } else {
      const value = readValue(cur, column, columnSchemas[i], table, opts);
      const partial = diffs !== undefined && column.type === T.JSON && ((diffs[jsonIndex >> 3] ?? 0) & (1 << (jsonIndex & 7))) !== 0;
      row[column.name] = partial ? ({ partialJson: value } satisfies PartialJson) : value;
    }
    nullIndex++;
  }
  return row;
}

/** What reading an event's row images needs, worked out once per event. */
interface ImagesContext {
  readonly table: RowTable;
  readonly opts: ValueOptions;
  readonly present: Buffer;
  readonly presentCount: number;
  /** UpdateRows: the after images' bitmap and its count. */
  readonly after: Buffer | undefined;
  readonly afterCount: number;
  /** PARTIAL_UPDATE_ROWS: the table's JSON columns, which its after images' diff bits count. */
  readonly jsonColumns: number | undefined;
}

/** The fields of a rows event, as zongji's RowsEvent has them. */
abstract class RowsEvent<R> {
  readonly timestamp: number;
  readonly nextPosition: number;
  readonly size: number;
  readonly tableId: number;
  readonly flags: number;
  readonly useChecksum: boolean;
  readonly numberOfColumns: number;
  readonly tableMap: Record<number, TableMapEntry>;
  // Declared, not initialised: as on zongji's, an event has only the fields its version and table gave it.
  declare readonly extraDataLength?: number;
  /** The table's TABLE_MAP was left out (or never seen): zongji drops the event. */
  declare readonly _filtered?: true;
  declare readonly columns_present_bitmap?: Buffer;
  /** UpdateRows: the after images' columns. */
  declare readonly columns_present_bitmap2?: Buffer;
  declare readonly rows?: R[];

  constructor(parser: PacketParser, options: EventParserOptions, stream: RowsStream, twoImages: boolean) {
    this.timestamp = options.timestamp;
    this.nextPosition = options.nextPosition;
    this.size = options.size;
    this.tableId = parser.parseUnsignedNumber(6);
    this.flags = parser.parseUnsignedNumber(2);
    this.useChecksum = stream.useChecksum;
    // The optional fields, set here only.
    const fields = this as { -readonly [K in keyof RowsEvent<R>]: RowsEvent<R>[K] };
    if (V2.has(options.eventType)) {
      fields.extraDataLength = parser.parseUnsignedNumber(2);
      parser.parseBuffer(fields.extraDataLength - 2);
    }
    this.numberOfColumns = parser.parseLengthCodedNumber() ?? 0;
    this.tableMap = stream.tableMap;
    const table = this.tableMap[this.tableId];
    if (table === undefined) {
      parser._offset = parser._packetEnd;
      fields._filtered = true;
      return;
    }
    if (!table.columns) throw new Error(`Rows event of table id ${this.tableId} before its columns are known`);
    const bitmapSize = (this.numberOfColumns + 7) >> 3;
    const present = parser.parseBuffer(bitmapSize);
    const after = twoImages ? parser.parseBuffer(bitmapSize) : undefined;
    fields.columns_present_bitmap = present;
    if (after) fields.columns_present_bitmap2 = after;
    const rowTable = table as RowTable;
    const context: ImagesContext = {
      table: rowTable,
      opts: valueOptions(stream.connection?.config, (error) => stream.emit('error', error)),
      present,
      presentCount: countBits(present),
      after,
      afterCount: after ? countBits(after) : 0,
      jsonColumns: options.eventType === PARTIAL_UPDATE_ROWS ? rowTable.columns.filter((column) => column.type === T.JSON).length : undefined,
    };
    const end = parser._packetEnd - (stream.useChecksum ? CHECKSUM_SIZE : 0);
    if (COMPRESSED.has(options.eventType)) {
      // The CRC covers the compressed bytes: the rows are read from the inflated ones.
      const inflated = inflateRowImages(parser.parseBuffer(end - parser._offset));
      parser._offset = parser._packetEnd;
      fields.rows = this.readRows({ buf: inflated, pos: 0 }, inflated.length, context);
      return;
    }
    const cur = { buf: parser._buffer, pos: parser._offset };
    fields.rows = this.readRows(cur, end, context);
    parser._offset = cur.pos + (stream.useChecksum ? CHECKSUM_SIZE : 0);
  }

  private readRows(cur: Cursor, end: number, context: ImagesContext): R[] {
    const rows: R[] = [];
    while (cur.pos < end) rows.push(this.readOne(cur, context));
    return rows;
  }

  protected abstract readOne(cur: Cursor, context: ImagesContext): R;
}

/** INSERT's rows (WRITE_ROWS_EVENT_V1/V2 and MariaDB's compressed ones). */
export class WriteRows extends RowsEvent<Row> {
  constructor(parser: PacketParser, options: EventParserOptions, stream: RowsStream) {
    super(parser, options, stream, false);
  }

  protected readOne(cur: Cursor, { table, present, presentCount, opts }: ImagesContext): Row {
    return readRow(cur, table, present, presentCount, opts);
  }

  getTypeName(): 'WriteRows' {
    return 'WriteRows';
  }

  getEventName(): 'writerows' {
    return 'writerows';
  }
}

/** DELETE's rows (DELETE_ROWS_EVENT_V1/V2 and MariaDB's compressed ones). */
export class DeleteRows extends RowsEvent<Row> {
  constructor(parser: PacketParser, options: EventParserOptions, stream: RowsStream) {
    super(parser, options, stream, false);
  }

  protected readOne(cur: Cursor, { table, present, presentCount, opts }: ImagesContext): Row {
    return readRow(cur, table, present, presentCount, opts);
  }

  getTypeName(): 'DeleteRows' {
    return 'DeleteRows';
  }

  getEventName(): 'deleterows' {
    return 'deleterows';
  }
}

/** UPDATE's rows, each a before and an after image (UPDATE_ROWS_EVENT_V1/V2, PARTIAL_UPDATE_ROWS, MariaDB's compressed ones). */
export class UpdateRows extends RowsEvent<{ before: Row; after: Row }> {
  constructor(parser: PacketParser, options: EventParserOptions, stream: RowsStream) {
    super(parser, options, stream, true);
  }

  protected readOne(cur: Cursor, context: ImagesContext): { before: Row; after: Row } {
    const { table, opts, jsonColumns } = context;
    const before = readRow(cur, table, context.present, context.presentCount, opts);
    let diffs: Buffer | undefined;
    if (jsonColumns !== undefined) {
      // The after image starts with value_options; PARTIAL_JSON_UPDATES (1) adds a bit per JSON column.
      const partialJson = ((readLengthCoded(cur) ?? 0) & 1) !== 0;
      const start = cur.pos;
      if (partialJson) cur.pos += (jsonColumns + 7) >> 3;
      diffs = cur.buf.subarray(start, cur.pos);
    }
    return { before, after: readRow(cur, table, context.after as Buffer, context.afterCount, opts, diffs) };
  }

  getTypeName(): 'UpdateRows' {
    return 'UpdateRows';
  }

  getEventName(): 'updaterows' {
    return 'updaterows';
  }
}

// zongji names an event by its class's name, which a bundler may change: set, not inferred.
Object.defineProperty(WriteRows, 'name', { value: 'WriteRows' });
Object.defineProperty(UpdateRows, 'name', { value: 'UpdateRows' });
Object.defineProperty(DeleteRows, 'name', { value: 'DeleteRows' });
