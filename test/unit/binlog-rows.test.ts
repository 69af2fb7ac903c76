import { deflateSync } from 'node:zlib';
import type { TableMapEntry } from '@vlasky/zongji';
import { describe, expect, it } from 'vitest';
import { MysqlType as T } from '../../lib/core/mysql-types.ts';
import { countBits, DeleteRows, inflateRowImages, type RowsStream, UpdateRows, WriteRows } from '../../lib/source/mysql/binlog/rows.ts';
import type { PacketParser } from '../../lib/source/mysql/binlog/zongji-hooks.ts';

/** A packet parser over `body` (what zongji's lib/reader.js gives an event class, after the common header). */
function parserOf(body: Buffer): PacketParser {
  return {
    _buffer: body,
    _offset: 0,
    _packetEnd: body.length,
    parseUnsignedNumber(this: PacketParser, bytes: number) {
      const value = this._buffer.readUIntLE(this._offset, bytes);
      this._offset += bytes;
      return value;
    },
    parseLengthCodedNumber(this: PacketParser) {
      return this.parseUnsignedNumber(1);
    },
    parseBuffer(this: PacketParser, length = this._packetEnd - this._offset) {
      const start = this._offset;
      this._offset += length;
      return this._buffer.subarray(start, start + length);
    },
  };
}

const TABLE_ID = 71;
/** id INT, name VARCHAR(20) utf8mb4, doc JSON, note TEXT, meta JSON. */
const table: TableMapEntry = {
  parentSchema: 'shop',
  tableName: 'items',
  columnSchemas: [
    { COLUMN_NAME: 'id', COLUMN_TYPE: 'int', UNSIGNED: false, COLLATION_NAME: null, CHARACTER_SET_NAME: null, COLUMN_COMMENT: '' },
    { COLUMN_NAME: 'name', COLUMN_TYPE: 'varchar(20)', COLLATION_NAME: null, CHARACTER_SET_NAME: 'utf8mb4', COLUMN_COMMENT: '' },
    { COLUMN_NAME: 'doc', COLUMN_TYPE: 'json', COLLATION_NAME: null, CHARACTER_SET_NAME: null, COLUMN_COMMENT: '' },
    { COLUMN_NAME: 'note', COLUMN_TYPE: 'text', COLLATION_NAME: null, CHARACTER_SET_NAME: 'utf8mb4', COLUMN_COMMENT: '' },
    { COLUMN_NAME: 'meta', COLUMN_TYPE: 'json', COLLATION_NAME: null, CHARACTER_SET_NAME: null, COLUMN_COMMENT: '' },
  ],
  columns: [
    { name: 'id', type: T.LONG, charset: null, metadata: {} },
    { name: 'name', type: T.VARCHAR, charset: 'utf8mb4', metadata: { max_length: 80 } },
    { name: 'doc', type: T.JSON, charset: null, metadata: { length_size: 4 } },
    { name: 'note', type: T.BLOB, charset: 'utf8mb4', metadata: { length_size: 2 } },
    { name: 'meta', type: T.JSON, charset: null, metadata: { length_size: 4 } },
  ],
};

function streamOf(useChecksum = false): RowsStream & { errors: Error[] } {
  const errors: Error[] = [];
  return {
    tableMap: { [TABLE_ID]: table },
    useChecksum,
    connection: { config: { dateStrings: true, timezone: 'Z' } },
    errors,
    emit: (_event, error) => errors.push(error),
  };
}

const options = (eventType: number) => ({ timestamp: 1000, nextPosition: 900, size: 0, eventType, serverId: 1 });

/** table id (6), flags (2), for V2 the extra data length (2, no extra data), the column count, the bitmaps. */
function header(v2: boolean, bitmaps: number[]): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeUIntLE(TABLE_ID, 0, 6);
  bytes.writeUInt16LE(1, 6);
  return Buffer.concat([bytes, v2 ? Buffer.from([2, 0]) : Buffer.alloc(0), Buffer.from([5, ...bitmaps])]);
}

const int = (value: number) => {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32LE(value);
  return bytes;
};
const varchar = (text: string) => Buffer.concat([Buffer.from([Buffer.byteLength(text)]), Buffer.from(text)]);
const json = (bytes: Buffer) => Buffer.concat([int(bytes.length), bytes]);
const text = (value: string) => {
  const bytes = Buffer.from(value);
  return Buffer.concat([Buffer.from([bytes.length, 0]), bytes]);
};

describe('rows events (binlog/rows.ts)', () => {
  it('counts the set bits of a bitmap', () => {
    expect(countBits(Buffer.from([0b1011_0001, 0xff, 0]))).toBe(12);
  });

  it('leaves a column the row image omits out of the row, and gives NULL for a NULL one', () => {
    // Columns id, name, note present (bitmap 0b01011); the second row's name is NULL (null bit 1).
    const rows = Buffer.concat([Buffer.from([0b000]), int(7), varchar('pen'), text('blue'), Buffer.from([0b010]), int(-8), text('')]);
    const ev = new WriteRows(parserOf(Buffer.concat([header(true, [0b01011]), rows])), options(0x1e), streamOf());
    expect(ev.getTypeName()).toBe('WriteRows');
    expect(ev.rows).toEqual([
      { id: 7, name: 'pen', note: 'blue' },
      { id: -8, name: null, note: '' },
    ]);
    expect(Object.keys(ev.rows?.[0] ?? {})).not.toContain('doc');
    expect(ev.columns_present_bitmap).toEqual(Buffer.from([0b01011]));
  });

  it('reads a V1 delete and skips the trailing checksum, leaving the parser at the end of the packet', () => {
    const body = Buffer.concat([header(false, [0b00001]), Buffer.from([0]), int(42), Buffer.from([1, 2, 3, 4])]);
    const parser = parserOf(body);
    const ev = new DeleteRows(parser, options(0x19), streamOf(true));
    expect(ev.rows).toEqual([{ id: 42 }]);
    expect(ev.extraDataLength).toBeUndefined();
    expect(parser._offset).toBe(body.length);
  });

  it('marks an event of a table whose TABLE_MAP was left out as filtered, reading none of its rows', () => {
    const body = Buffer.concat([header(true, [0b11111]), Buffer.from('not a row image')]);
    body.writeUIntLE(TABLE_ID + 1, 0, 6);
    const parser = parserOf(body);
    const ev = new WriteRows(parser, options(0x1e), streamOf());
    expect(ev._filtered).toBe(true);
    expect(ev.rows).toBeUndefined();
    expect(parser._offset).toBe(body.length);
  });

  it('hands over a partial update’s JSON diffs as { partialJson } only for the JSON columns its diff bits name', () => {
    const before = Buffer.concat([Buffer.from([0]), int(1), json(Buffer.from([4, 1])), json(Buffer.from([4, 2]))]);
    // value_options = PARTIAL_JSON_UPDATES, then one bit per JSON column: the second (meta) holds diffs.
    const after = Buffer.concat([Buffer.from([1, 0b10, 0]), int(1), json(Buffer.from([4, 0])), json(Buffer.from([0, 1, 1, 36, 2, 4, 1]))]);
    const body = Buffer.concat([header(true, [0b10101, 0b10101]), before, after]);
    const ev = new UpdateRows(parserOf(body), options(0x27), streamOf());
    expect(ev.getTypeName()).toBe('UpdateRows');
    expect(ev.rows).toEqual([
      {
        before: { id: 1, doc: Buffer.from([4, 1]), meta: Buffer.from([4, 2]) },
        after: { id: 1, doc: Buffer.from([4, 0]), meta: { partialJson: Buffer.from([0, 1, 1, 36, 2, 4, 1]) } },
      },
    ]);
  });

  it('reads a partial update without PARTIAL_JSON_UPDATES as a plain update', () => {
    const image = Buffer.concat([Buffer.from([0]), int(3)]);
    const body = Buffer.concat([header(true, [0b00001, 0b00001]), image, Buffer.from([0]), image]);
    const ev = new UpdateRows(parserOf(body), options(0x27), streamOf());
    expect(ev.rows).toEqual([{ before: { id: 3 }, after: { id: 3 } }]);
  });

  it('inflates a MariaDB compressed row image (log_bin_compress) and reads its rows, the checksum left to the packet', () => {
    const rows = Buffer.concat([Buffer.from([0]), int(5), varchar('mug'), Buffer.from([0]), int(6), varchar('cup')]);
    // Header: bit 7 set, zlib (0), a 1-byte original length.
    const compressed = Buffer.concat([Buffer.from([0x81, rows.length]), deflateSync(rows)]);
    const body = Buffer.concat([header(true, [0b00011, 0b00011]), compressed, Buffer.from([9, 9, 9, 9])]);
    const parser = parserOf(body);
    const ev = new UpdateRows(parser, options(0xaa), streamOf(true));
    expect(ev.rows).toEqual([{ before: { id: 5, name: 'mug' }, after: { id: 6, name: 'cup' } }]);
    expect(parser._offset).toBe(body.length);
  });

  it('refuses a compressed row image whose header or length does not hold', () => {
    const rows = Buffer.from([0, 1, 2, 3]);
    expect(() => inflateRowImages(Buffer.concat([Buffer.from([0x01, 4]), deflateSync(rows)]))).toThrow(/Unknown binlog event compression header 0x1/);
    expect(() => inflateRowImages(Buffer.concat([Buffer.from([0x81, 5]), deflateSync(rows)]))).toThrow(/inflated to 4 bytes, expected 5/);
    expect(inflateRowImages(Buffer.concat([Buffer.from([0x82, 0, 4]), deflateSync(rows)]))).toEqual(rows);
  });
});
