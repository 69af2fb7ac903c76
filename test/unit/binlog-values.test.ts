import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MysqlType as T } from '../../lib/core/mysql-types.ts';
import { readValue, type ValueColumn, type ValueSchema, valueOptions } from '../../lib/source/mysql/binlog/values.ts';

const TABLE = { tableName: 't', parentSchema: 'db' };
const TEXT = valueOptions({ dateStrings: true, timezone: 'Z' }, (error) => {
  throw error;
});

/** The value of `column` in `bytes` (followed by a sentinel), and how many bytes it took. */
function read(bytes: Uint8Array | number[], column: Omit<ValueColumn, 'name'>, schema?: ValueSchema, opts = TEXT) {
  const cur = { buf: Buffer.concat([Buffer.from(bytes), Buffer.from([0xee])]), pos: 0 };
  const value = readValue(cur, { name: 'c', ...column }, schema, TABLE, opts);
  return { value, length: cur.pos };
}
const schema = (COLUMN_TYPE: string, extra: Partial<ValueSchema> = {}): ValueSchema => ({ COLUMN_TYPE, ...extra });

describe('row image values (binlog/values.ts)', () => {
  it('reads integers signed or unsigned by the definition, BIGINT past 2^53 as exact text', () => {
    expect(read([0xff], { type: T.TINY }, schema('tinyint'))).toEqual({ value: -1, length: 1 });
    expect(read([0xff], { type: T.TINY }, schema('tinyint unsigned'))).toEqual({ value: 255, length: 1 });
    expect(read([0x00, 0x00, 0x80], { type: T.INT24 }, schema('mediumint', { UNSIGNED: false }))).toEqual({ value: -8388608, length: 3 });
    const max = Buffer.alloc(8, 0xff);
    expect(read(max, { type: T.LONGLONG }, schema('bigint unsigned')).value).toBe('18446744073709551615');
    expect(read(max, { type: T.LONGLONG }, schema('bigint')).value).toBe(-1);
    const min = Buffer.alloc(8);
    min.writeBigInt64LE(-(2n ** 63n));
    expect(read(min, { type: T.LONGLONG }, schema('bigint')).value).toBe('-9223372036854775808');
    const safe = Buffer.alloc(8);
    safe.writeBigUInt64LE(2n ** 53n - 1n);
    expect(read(safe, { type: T.LONGLONG }, schema('bigint'))).toEqual({ value: 2 ** 53 - 1, length: 8 });
  });

  it('reads DECIMAL as its exact text, or a number under decimalNumbers', () => {
    // DECIMAL(10,2) -1234567.89: 4 bytes for 1 + 9 integral digits… here 8 integral: 4-byte group (8 digits), 1 byte (2 digits); inverted when negative.
    const bytes = Buffer.from([0x80 | 0x00, 0x12, 0xd6, 0x87, 89]);
    const negative = bytes.map((b) => b ^ 0xff);
    const column = { type: T.NEWDECIMAL, metadata: { precision: 10, decimals: 2 } };
    expect(read(bytes, column)).toEqual({ value: '1234567.89', length: 5 });
    expect(read(negative, column).value).toBe('-1234567.89');
    expect(
      read(
        bytes,
        column,
        undefined,
        valueOptions({ decimalNumbers: true }, () => undefined),
      ).value,
    ).toBe(1234567.89);
  });

  it('reads TIME2, DATETIME2 and TIMESTAMP2 with their fraction digits', () => {
    // TIME2 '12:34:56.78' (fsp 2): 0x800000 | 12 << 12 | 34 << 6 | 56, then 78 in one byte.
    const time = 0x800000 | (12 << 12) | (34 << 6) | 56;
    expect(read([time >> 16, (time >> 8) & 0xff, time & 0xff, 78], { type: T.TIME2, metadata: { decimals: 2 } })).toEqual({ value: '12:34:56.78', length: 4 });
    // DATETIME2 '2024-02-29 23:59:58.123456' (fsp 6): 40 bits, then 3 fraction bytes.
    const datetime = (1n << 39n) | (((2024n * 13n + 2n) << 22n) | (29n << 17n) | (23n << 12n) | (59n << 6n) | 58n);
    const dt = Buffer.alloc(8);
    dt.writeBigUInt64BE(datetime << 24n);
    dt.writeUIntBE(123456, 5, 3);
    expect(read(dt, { type: T.DATETIME2, metadata: { decimals: 6 } })).toEqual({ value: '2024-02-29 23:59:58.123456', length: 8 });
    // fsp 3 uses 2 bytes holding the digits × 10.
    const dt3 = Buffer.concat([dt.subarray(0, 5), Buffer.from([0x04, 0xce])]);
    expect(read(dt3, { type: T.DATETIME2, metadata: { decimals: 3 } })).toEqual({ value: '2024-02-29 23:59:58.123', length: 7 });
    // TIMESTAMP2 1700000000 (2023-11-14 22:13:20 UTC), fsp 1 (one byte, the digit × 10).
    const ts = Buffer.alloc(5);
    ts.writeUInt32BE(1_700_000_000);
    ts[4] = 50;
    expect(read(ts, { type: T.TIMESTAMP2, metadata: { decimals: 1 } }).value).toBe('2023-11-14 22:13:20.5');
    expect(
      read(
        ts,
        { type: T.TIMESTAMP2, metadata: { decimals: 1 } },
        undefined,
        valueOptions({ dateStrings: true, timezone: '+01:30' }, () => undefined),
      ).value,
    ).toBe('2023-11-14 23:43:20.5');
    expect(read([0, 0, 0, 0], { type: T.TIMESTAMP2, metadata: { decimals: 0 } }).value).toBe('0000-00-00 00:00:00');
  });

  it('gives a Date without dateStrings, and keeps the zero date as text only with them', () => {
    const date = (2024 << 9) | (2 << 5) | 29;
    const bytes = [date & 0xff, (date >> 8) & 0xff, date >> 16];
    expect(read(bytes, { type: T.DATE }).value).toBe('2024-02-29');
    const asDate = read(
      bytes,
      { type: T.DATE },
      undefined,
      valueOptions({ timezone: 'Z' }, () => undefined),
    ).value;
    expect(asDate).toEqual(new Date(Date.UTC(2024, 1, 29)));
    expect(read([0, 0, 0], { type: T.DATE }).value).toBe('0000-00-00');
  });

  it('reads ENUM and SET labels from FULL metadata or from the definition', () => {
    expect(read([2], { type: T.ENUM, metadata: { size: 1 } }, schema("enum('a','b')")).value).toBe('b');
    expect(read([0], { type: T.ENUM, metadata: { size: 1 } }, schema("enum('a','b')")).value).toBeUndefined();
    expect(read([1, 0], { type: T.ENUM, metadata: { size: 2 } }, schema('enum', { ENUM_VALUES: ['x', 'y'] }))).toEqual({ value: 'x', length: 2 });
    expect(read([0b101], { type: T.SET, metadata: { size: 1 } }, schema("set('r','g','b')")).value).toBe('r,b');
    const labels = Array.from({ length: 64 }, (_, i) => `s${i}`);
    const wide = Buffer.alloc(8);
    wide.writeBigUInt64LE((1n << 63n) | 1n);
    expect(read(wide, { type: T.SET, metadata: { size: 8 } }, schema('set', { SET_VALUES: labels }))).toEqual({ value: 's0,s63', length: 8 });
  });

  it('reads strings after a 1- or 2-byte length by their maximum length, in the column’s charset', () => {
    expect(read([3, 0x61, 0x62, 0x63], { type: T.VARCHAR, charset: 'utf8mb4', metadata: { max_length: 255 } }, schema('varchar(63)'))).toEqual({
      value: 'abc',
      length: 4,
    });
    expect(read([2, 0, 0xc3, 0xa9], { type: T.VARCHAR, charset: 'utf8mb4', metadata: { max_length: 256 } }, schema('varchar(64)'))).toEqual({
      value: 'é',
      length: 4,
    });
    expect(read([1, 0x80], { type: T.STRING, charset: 'latin1', metadata: { max_length: 10 } }, schema('char(10)')).value).toBe('€');
    // BINARY(4) gets its trailing zeros back; VARBINARY stays as logged.
    expect(read([2, 1, 2], { type: T.STRING, charset: null, metadata: { max_length: 4 } }, schema('binary(4)')).value).toEqual(Buffer.from([1, 2, 0, 0]));
    expect(read([2, 1, 2], { type: T.VARCHAR, charset: null, metadata: { max_length: 4 } }, schema('varbinary(4)')).value).toEqual(Buffer.from([1, 2]));
    expect(read([4, 10, 0, 0, 1], { type: T.STRING, charset: null, metadata: { max_length: 4 } }, schema('inet4')).value).toBe('10.0.0.1');
  });

  it('reads BLOB and TEXT after their length_size-byte length, MariaDB’s COMPRESSED ones inflated', () => {
    expect(read([2, 0, 0, 1, 2], { type: T.BLOB, charset: null, metadata: { length_size: 3 } })).toEqual({ value: Buffer.from([1, 2]), length: 5 });
    const packed = Buffer.concat([Buffer.from([0x88 | 1, 5]), deflateRawSync(Buffer.from('hello'))]);
    const compressed = Buffer.concat([Buffer.from([packed.length]), packed]);
    expect(read(compressed, { type: T.BLOB_COMPRESSED, charset: 'utf8mb4', metadata: { length_size: 1 } }).value).toBe('hello');
  });

  it('hands over JSON and VECTOR as their stored bytes', () => {
    expect(read([2, 0, 0, 0, 4, 1], { type: T.JSON, metadata: { length_size: 4 } })).toEqual({ value: Buffer.from([4, 1]), length: 6 });
    expect(read([4, 0, 0, 0x80, 0x3f], { type: T.VECTOR, metadata: { length_size: 1 } }).value).toEqual(Buffer.from([0, 0, 0x80, 0x3f]));
  });

  it('reports a column of a type it has no reader for, its value undefined', () => {
    const errors: Error[] = [];
    const opts = valueOptions({}, (error) => errors.push(error));
    expect(read([1], { type: T.NEWDATE }, undefined, opts).value).toBeUndefined();
    expect(errors.map((e) => e.message)).toEqual(['Unsupported type "14" on column "c" of the table "t" in the database "db"']);
  });
});
