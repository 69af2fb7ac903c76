import { describe, expect, it } from 'vitest';
import {
  binlogColumn,
  type ColumnDefinition,
  classicTimeText,
  datetime2Text,
  decimalSize,
  decimalText,
  time2Text,
  timestamp2Text,
} from '../../lib/format/binlog-columns.ts';
import { encodeKey, encodeRow, encodeShape, eventLine, rowProperty } from '../../lib/format/event.ts';
import { type ColumnKind, encodeValue, float32Text, inet6Text, uuidText, valueEncoder } from '../../lib/format/types.ts';
import { applyRaw, asBinlogColumn, rawBinlogValues, ServerText, type ZongjiColumn } from '../../lib/source/mysql/binlog/raw-values.ts';

describe('value encoding', () => {
  it('compiles row and key encoders for any column names (quotes, backslashes, line separators, empty)', () => {
    const names = ['a"b', 'c\\d', 'e\u2028f', '', '__proto__', 'constructor', "g'h`$" + '{i}'];
    const shape = encodeShape({ db: 'd', table: 't', columns: names.map((name) => ({ name, kind: 'string', sqlType: 'text' })), key: [1, 0] });
    // Values are read under each name's rowProperty: `__proto__` from `__proto__\u0001`, as the readers store it.
    const row = Object.fromEntries(names.map((name, i) => [rowProperty(name), `v${i}`]));
    expect(rowProperty('__proto__')).toBe('__proto__\u0001');
    expect(JSON.parse(encodeRow(shape, row))).toEqual(Object.fromEntries(names.map((name, i) => [name, `v${i}`])));
    expect(encodeRow(shape, row)).toBe(`{${names.map((name, i) => `${JSON.stringify(name)}:"v${i}"`).join(',')}}`);
    expect(encodeKey(shape, row)).toBe(`{${JSON.stringify(names[1])}:"v1",${JSON.stringify(names[0])}:"v0"}`);
    expect(encodeKey(encodeShape({ ...shape, key: null }), row)).toBe('null');
    expect(encodeRow(encodeShape({ ...shape, columns: [], key: [] }), row)).toBe('{}');
  });

  it("each column's compiled encoder writes exactly what encodeValue writes, or refuses what it refuses", () => {
    const values: unknown[] = [
      ...[0, -0, 1, -1, 42, 2 ** 53 - 1, -(2 ** 53) + 1, 2 ** 53, 1.5, -2.25, 1e21, 1900],
      ...['0', '-0', '007', '-007.50', '0.5', '-0.5', '12.30', '18446744073709551615', 'abc', '', 'a"b\\c\n', 'é☃😀'],
      ...['2026-11-30', '0000-00-00', '2026-11-30 18:00:00', '2026-11-30 18:00:00.5', '2026-11-30 18:00:00.123456', '0000-00-00 00:00:00'],
      ...['-838:59:59', '12:00:00.1', '12:00:00.1234567', '12:00:00.', '1.5'],
      ...[null, undefined, Buffer.from([0, 1, 255]), { a: 1 }, true],
    ];
    const kinds: ColumnKind[] = ['int', 'year', 'double', 'float', 'decimal', 'string', 'date', 'datetime', 'timestamp', 'time', 'binary', 'bit'];
    const outcome = (encode: () => string) => {
      try {
        return encode();
      } catch (error) {
        return `threw ${(error as Error).constructor.name}`;
      }
    };
    for (const kind of kinds) {
      for (const fsp of [undefined, 0, 1, 3, 6]) {
        const compiled = valueEncoder(kind, fsp);
        for (const value of values)
          expect(
            outcome(() => compiled(value)),
            `${kind}(${fsp}) ${String(value)}`,
          ).toBe(outcome(() => encodeValue(kind, value, fsp)));
      }
    }
  });

  it('writes FLOAT as the shortest decimal that round-trips to the stored float32', () => {
    expect(float32Text(3.141590118408203)).toBe('3.14159');
    expect(float32Text(Math.fround(0.1))).toBe('0.1');
    expect(float32Text(Math.fround(16777217))).toBe('16777216');
    expect(float32Text(Math.fround(-1.5e-7))).toBe('-1.5e-7');
    for (const v of [1 / 3, 123456.789, 3.4e38, 1e-38]) expect(Math.fround(Number(float32Text(Math.fround(v))))).toBe(Math.fround(v));
  });

  it('keeps integers exact and unquoted, and refuses a non-integer in an integer column', () => {
    expect(encodeValue('int', '18446744073709551615')).toBe('18446744073709551615');
    expect(encodeValue('int', -128)).toBe('-128');
    expect(() => encodeValue('int', '1.5')).toThrow(/non-integer/);
  });

  it('encodes the other kinds as the format specifies', () => {
    expect(encodeValue('decimal', '12.50')).toBe('"12.50"');
    expect(encodeValue('decimal', '00000012.50')).toBe('"12.50"');
    expect(encodeValue('decimal', '0.001')).toBe('"0.001"');
    expect(encodeValue('double', 1e300)).toBe('1e+300');
    expect(encodeValue('bit', Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))).toBe('18446744073709551615');
    expect(encodeValue('binary', Buffer.from([0, 1, 2]))).toBe('"AAEC"');
    expect(encodeValue('timestamp', '2024-01-01 00:00:00.120')).toBe('"2024-01-01T00:00:00.120Z"');
    expect(encodeValue('timestamp', '0000-00-00 00:00:00')).toBe('"0000-00-00 00:00:00"');
    expect(encodeValue('string', 'a"b\n')).toBe('"a\\"b\\n"');
    expect(encodeValue('date', null)).toBe('null');
  });

  it('writes exactly fsp fraction digits for temporal values', () => {
    expect(encodeValue('datetime', '2026-11-29 16:45:06', 6)).toBe('"2026-11-29 16:45:06.000000"');
    expect(encodeValue('datetime', '2026-11-29 16:45:06.123456', 6)).toBe('"2026-11-29 16:45:06.123456"');
    expect(encodeValue('time', '-838:59:59', 2)).toBe('"-838:59:59.00"');
    expect(encodeValue('timestamp', '2024-01-01 00:00:00.1', 3)).toBe('"2024-01-01T00:00:00.100Z"');
    expect(encodeValue('datetime', '2024-01-01 00:00:00', 0)).toBe('"2024-01-01 00:00:00"');
    expect(encodeValue('date', '2024-01-01', 6)).toBe('"2024-01-01"');
  });

  it('keeps the sign of a negative zero (MariaDB stores 0, MySQL keeps -0)', () => {
    expect(encodeValue('double', -0)).toBe('-0');
    expect(encodeValue('float', -0)).toBe('-0');
    expect(encodeValue('double', 0)).toBe('0');
  });

  it('writes the zero year as 0: the binlog reader (and YEAR()) add 1900 to its stored byte', () => {
    expect(encodeValue('year', 1900)).toBe('0');
    expect(encodeValue('year', 0)).toBe('0');
    expect(encodeValue('year', 1901)).toBe('1901');
  });

  it('refuses an object it cannot encode instead of writing "[object Object]"', () => {
    expect(() => encodeValue('binary', { x: 1, y: 2 })).toThrow(/cannot encode a binary column's Object value/);
    expect(() => encodeValue('string', [1])).toThrow(TypeError);
  });

  it('prints UUID, INET4 and INET6 bytes as the server does, and keeps the server text as is', () => {
    expect(uuidText(Buffer.from('123e4567e89b12d3a456426614174000', 'hex'))).toBe('123e4567-e89b-12d3-a456-426614174000');
    expect(encodeValue('inet4', Buffer.from([10, 0, 0, 1]))).toBe('"10.0.0.1"');
    expect(encodeValue('uuid', '123e4567-e89b-12d3-a456-426614174000')).toBe('"123e4567-e89b-12d3-a456-426614174000"');
    // Pairs read from MariaDB 10.11 (CAST(inet6 AS CHAR)).
    const printed: [string, string][] = [
      ['00000000000000000000000000000000', '::'],
      ['00000000000000000000000000000001', '::1'],
      ['00000000000000000000ffff01020304', '::ffff:1.2.3.4'],
      ['00000000000000000000000001020304', '::1.2.3.4'],
      ['00000000000000000000000000000002', '::2'],
      ['00000000000000000000ffff00000000', '::ffff:0.0.0.0'],
      ['20010db8000000000000ff0000428329', '2001:db8::ff00:42:8329'],
      ['20010db8000000000001000000000001', '2001:db8::1:0:0:1'],
      ['fe800000000000000000000000000000', 'fe80::'],
      ['00010000000200030004000500060007', '1::2:3:4:5:6:7'],
      ['00010000000000020000000000000003', '1:0:0:2::3'],
      ['ffffffffffffffffffffffffffffffff', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
      ['00000000000000000000000100000000', '::1:0:0'],
    ];
    for (const [bytes, text] of printed) expect(inet6Text(Buffer.from(bytes, 'hex'))).toBe(text);
  });

  it('decodes TIME2 bytes as MySQL does, negative values and their borrow included', () => {
    // Vectors from MySQL's my_time_packed_from_binary comment (TIME(2)), and whole negative hours.
    const time = (hex: string, fsp: number) => time2Text(Buffer.from(hex, 'hex'), fsp);
    expect(time('800000' + '00', 2)).toBe('00:00:00.00');
    expect(time('7fffff' + 'ff', 2)).toBe('-00:00:00.01');
    expect(time('7fffff' + '9d', 2)).toBe('-00:00:00.99');
    expect(time('7fffff' + '00', 2)).toBe('-00:00:01.00');
    expect(time('7ffffe' + 'ff', 2)).toBe('-00:00:01.01');
    expect(time('7ffffe' + 'f6', 2)).toBe('-00:00:01.10');
    expect(time('7ff000', 0)).toBe('-01:00:00');
    expect(time('b46efb', 0)).toBe('838:59:59');
    expect(time('4b9105' + '0000', 3)).toBe('-838:59:59.000');
    expect(time('800000' + '07a120', 6)).toBe('00:00:00.500000');
    // The classic TIME of old tables: ±HHMMSS, little-endian.
    expect(classicTimeText(Buffer.from([0xf0, 0xd8, 0xff]))).toBe('-01:00:00');
    expect(classicTimeText(Buffer.from([0xa7, 0xf5, 0x7f]))).toBe('838:59:59');
  });

  it('prints DATETIME2, TIMESTAMP2 and NEWDECIMAL bytes as zongji did (vectors checked against its decoder)', () => {
    const bytes = (hex: string) => Buffer.from(hex, 'hex');
    expect(datetime2Text(bytes('8000000000'), 0)).toBe('0000-00-00 00:00:00');
    expect(datetime2Text(bytes('fef3ff7efb0f423f'), 6)).toBe('9999-12-31 23:59:59.999999');
    expect(datetime2Text(bytes('99b2bb7efb32'), 1)).toBe('2024-02-29 23:59:59.5');
    expect(datetime2Text(bytes('99b20000000046'), 3)).toBe('2024-00-00 00:00:00.007');
    expect(datetime2Text(bytes('8cb242000000000a'), 5)).toBe('1000-01-01 00:00:00.00001');
    expect(timestamp2Text(bytes('00000000'), 0)).toBe('0000-00-00 00:00:00');
    expect(timestamp2Text(bytes('000000000000'), 3)).toBe('0000-00-00 00:00:00.000');
    expect(timestamp2Text(bytes('0000000005'), 2)).toBe('1970-01-01 00:00:00.05');
    expect(timestamp2Text(bytes('00000001'), 0)).toBe('1970-01-01 00:00:01');
    expect(timestamp2Text(bytes('7fffffff0f423f'), 6)).toBe('2038-01-19 03:14:07.999999');
    expect(timestamp2Text(bytes('65e079f004d2'), 4)).toBe('2024-02-29 12:34:56.1234');
    expect(timestamp2Text(bytes('38bb0c00'), 0)).toBe('2000-02-29 00:00:00');
    // Seconds past 2^31 (MariaDB 11.5 and later): unsigned, as the server stores them.
    expect(timestamp2Text(bytes('ffffffff'), 0)).toBe('2106-02-07 06:28:15');
    /** MySQL's decimal2bin: 9-digit groups in 4 bytes, shorter edge groups in fewer, negatives inverted, the first bit flipped. */
    const decimal = (text: string, precision: number, scale: number) => {
      const negative = text.startsWith('-');
      const [whole = '', fraction = ''] = text.replace('-', '').split('.');
      const integral = (whole as string).replace(/^0+/, '').padStart(precision - scale, '0');
      const groups: [string, number][] = [];
      const widths = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];
      const lead = (precision - scale) % 9;
      if (lead) groups.push([integral.slice(0, lead), widths[lead] as number]);
      for (let i = lead; i < integral.length; i += 9) groups.push([integral.slice(i, i + 9), 4]);
      const digits = (fraction as string).padEnd(scale, '0');
      for (let i = 0; i + 9 <= scale; i += 9) groups.push([digits.slice(i, i + 9), 4]);
      if (scale % 9) groups.push([digits.slice(scale - (scale % 9)), widths[scale % 9] as number]);
      const out = Buffer.concat(
        groups.map(([g, w]) =>
          Buffer.from(
            Number(g)
              .toString(16)
              .padStart(w * 2, '0'),
            'hex',
          ),
        ),
      );
      if (negative) for (let i = 0; i < out.length; i++) out[i] = ~(out[i] as number) & 0xff;
      out[0] = (out[0] as number) ^ 0x80;
      expect(out.length).toBe(decimalSize(precision, scale));
      return decimalText(out, precision, scale);
    };
    for (const [text, precision, scale] of [
      ['12.50', 12, 2],
      ['-0.50', 10, 2],
      ['0.00', 10, 2],
      ['-99999999.99', 10, 2],
      ['999999999999999', 15, 0],
      ['-999999999999999', 15, 0],
      ['9999999999999999', 16, 0],
      ['-1000000000000000', 16, 0],
      ['7', 16, 0],
      ['-9', 1, 0],
      ['0.99999', 5, 5],
      ['-0.00001', 5, 5],
      ['-999999999999999.999', 18, 3],
      ['0.000000000000000000000000000001', 30, 30],
      ['-99999999999999999999999999999999999.999999999999999999999999999999', 65, 30],
      ['-12345678901234567890123456789012345.123456789012345678901234567890', 65, 30],
      ['-99999999999999999999999999999999999999999999999999999999999999999', 65, 0],
    ] as const)
      expect(decimal(text, precision, scale)).toBe(text);
  });

  it('hands zongji raw bytes where its decoding loses information, and describes the column as the binlog did', () => {
    /** What the reader does at a TABLE_MAP: plan from the descriptor, apply the plan to it. */
    const prepare = (column: ZongjiColumn, schema?: ColumnDefinition, labels?: Buffer[]) => {
      const raw = rawBinlogValues(column, schema, labels !== undefined);
      if (raw) applyRaw(column, raw, schema, labels);
      return raw;
    };
    const point: ZongjiColumn = { name: 'g', type: 255, charset: null, metadata: { length_size: 4 } };
    expect(prepare(point)?.decode).toBeUndefined();
    expect(point.type).toBe(252);
    prepare(point); // a reused descriptor keeps what it was
    expect(binlogColumn(asBinlogColumn(point), { geometryType: 1 })).toEqual({ name: 'g', kind: 'binary', sqlType: 'point' });

    const latin1: ZongjiColumn = { name: 's', type: 15, charset: 'latin1', metadata: { max_length: 10 } };
    const decodeLatin1 = prepare(latin1)?.decode;
    expect(latin1.charset).toBe('binary');
    expect(decodeLatin1?.('\x80\x81\x9f\xff')).toBe('€\u0081Ÿÿ');

    // Charsets whose iconv tables differ from the server's: the bytes go to the server.
    const sjis = prepare({ name: 'j', type: 15, charset: 'sjis', metadata: { max_length: 10 } });
    expect(sjis?.byServer).toBe(true);
    expect(sjis?.decode?.('\x81\x60')).toEqual(new ServerText(Buffer.from([0x81, 0x60]), 'sjis'));

    // ENUM/SET labels too: zongji then decodes values with the raw label bytes.
    const schema: ColumnDefinition = { ENUM_VALUES: ['\uFFFD'] };
    const latin1Enum = prepare({ name: 'e', type: 247, charset: 'latin1', metadata: { size: 1 } }, schema, [Buffer.from([0x81])]);
    expect(schema.ENUM_VALUES).toEqual(['\x81']);
    expect(latin1Enum?.decode?.('\x81')).toBe('\u0081');
    expect(latin1Enum?.decode?.(undefined)).toBe('');

    expect(prepare({ name: 'e', type: 247, charset: 'utf8mb4', metadata: { size: 1 } })?.decode?.(undefined)).toBe('');
    expect(prepare({ name: 'a', type: 15, charset: 'ascii', metadata: { max_length: 10 } })?.decode?.('a\uFFFD')).toBe('a?');
    expect(prepare({ name: 'u', type: 15, charset: 'utf8mb4', metadata: { max_length: 40 } })).toBeUndefined();

    const time: ZongjiColumn = { name: 't', type: 19, charset: null, metadata: { decimals: 3 } };
    const decodeTime = prepare(time)?.decode;
    expect(time).toMatchObject({ type: 16, metadata: { bits: 40 } });
    expect(decodeTime?.(Buffer.from('7ff0000000', 'hex'))).toBe('-01:00:00.000');
    expect(binlogColumn(asBinlogColumn(time)).sqlType).toBe('time(3)');
  });

  it('tells text from binary columns by charset', () => {
    expect(binlogColumn({ name: 'a', type: 252, charset: 'utf8mb4' }).kind).toBe('string');
    expect(binlogColumn({ name: 'a', type: 252, charset: null }).kind).toBe('binary');
    expect(binlogColumn({ name: 'a', type: 8 }, { unsigned: true }).sqlType).toBe('bigint unsigned');
    expect(binlogColumn({ name: 'a', type: 18, metadata: { decimals: 6 } }).sqlType).toBe('datetime(6)');
    expect(binlogColumn({ name: 'a', type: 13 }, { unsigned: true }).sqlType).toBe('year');
    expect(binlogColumn({ name: 'a', type: 141, charset: null }).sqlType).toBe('varbinary');
    expect(binlogColumn({ name: 'a', type: 140, charset: 'utf8mb4' })).toMatchObject({ kind: 'string', sqlType: 'text' });
    // MariaDB 5.3-format temporal columns: classic codes, the fraction digits only in the definition.
    expect(binlogColumn({ name: 'a', type: 11 }, { schema: { COLUMN_TYPE: 'time(3) /* mariadb-5.3 */' } })).toMatchObject({ sqlType: 'time(3)', fsp: 3 });
    expect(binlogColumn({ name: 'a', type: 12 }, { schema: { COLUMN_TYPE: 'datetime /* mariadb-5.3 */' } })).toMatchObject({ sqlType: 'datetime', fsp: 0 });
  });
});

describe('event lines', () => {
  const shape = encodeShape({
    db: 'shop',
    table: 'orders',
    columns: [
      { name: 'id', kind: 'int', sqlType: 'bigint unsigned' },
      { name: 'total', kind: 'decimal', sqlType: 'decimal(10,2)' },
    ],
    key: [0],
  });

  it('builds parseable JSON with the key taken from the primary-key columns', () => {
    const row = { id: '18446744073709551615', total: '9.90' };
    const line = eventLine('c', shape, encodeKey(shape, row), 'null', encodeRow(shape, row), '{}', 'S');
    expect(line.endsWith('\n')).toBe(true);
    expect(line).toBe(
      '{"op":"c","db":"shop","table":"orders","key":{"id":18446744073709551615},"before":null,"after":{"id":18446744073709551615,"total":"9.90"},"source":{},"seq":"S"}\n',
    );
    expect(JSON.parse(line).after.total).toBe('9.90');
  });

  it('writes a null key for tables without a primary key', () => {
    expect(encodeKey(encodeShape({ ...shape, key: null }), { id: 1, total: '1.00' })).toBe('null');
  });
});
