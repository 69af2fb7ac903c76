import { describe, expect, it } from 'vitest';
import { encodeKey, encodeRow, encodeShape, eventLine, type Op, type Row } from '../../lib/format/event.ts';
import { shapeBytes, transactionBytes, writeLine } from '../../lib/format/line-bytes.ts';
import { seq } from '../../lib/format/seq.ts';
import type { ColumnKind } from '../../lib/format/types.ts';

const VALUES: unknown[] = [
  ...[0, -0, 1, -1, 42, 2 ** 53 - 1, -(2 ** 53) + 1, 2 ** 53, 1.5, -2.25, 1e21, 1900, Number.NaN],
  ...[
    '0',
    '-0',
    '007',
    '-007.50',
    '0.5',
    '-0.5',
    '12.30',
    '-12.30',
    '18446744073709551615',
    '-9223372036854775808',
    'abc',
    '',
    'a"b\\c\n',
    'é☃😀',
    '\u2028',
    '~\x7f',
  ],
  ...['2026-11-30', '0000-00-00', '2026-11-30 18:00:00', '2026-11-30 18:00:00.5', '2026-11-30 18:00:00.123456', '0000-00-00 00:00:00'],
  ...['-838:59:59', '12:00:00.1', '12:00:00.1234567', '12:00:00.', '1.5', '00:00:00.000000'],
  ...[null, undefined, Buffer.from([0, 1, 255]), true],
];
const KINDS: ColumnKind[] = ['int', 'year', 'double', 'float', 'decimal', 'string', 'date', 'datetime', 'timestamp', 'time', 'binary', 'bit', 'uuid', 'inet4'];
const SOURCE = '{"file":"binlog.000001","pos":4,"gtid":"0-1-2","server_id":1,"ts_ms":5,"txn":"0-1-2","snapshot":false}';
const PREFIX = '0000000001.000000000004.';

/** The text path's line, or what it throws. */
function textLine(op: Op, shape: ReturnType<typeof encodeShape>, keyRow: Row, before: Row | null, after: Row | null, index: number): string {
  try {
    return eventLine(
      op,
      shape,
      encodeKey(shape, keyRow),
      before ? encodeRow(shape, before) : 'null',
      after ? encodeRow(shape, after) : 'null',
      SOURCE,
      seq(PREFIX, index),
    );
  } catch (error) {
    return `threw ${(error as Error).constructor.name}`;
  }
}

/** The byte path's line into a buffer filled with a sentinel, checking nothing is written past the limit. */
function byteLine(op: Op, shape: ReturnType<typeof encodeShape>, keyRow: Row, before: Row | null, after: Row | null, index: number, room = 4096): string | -1 {
  const out = Buffer.alloc(room + 64, 0xee);
  try {
    const end = writeLine(out, 16, 16 + room, shapeBytes(shape), op, keyRow, before, after, transactionBytes(SOURCE, PREFIX), index, 10);
    expect(out.subarray(16 + room).every((b) => b === 0xee)).toBe(true);
    return end < 0 ? -1 : out.toString('utf8', 16, end);
  } catch (error) {
    return `threw ${(error as Error).constructor.name}`;
  }
}

describe('change lines written as bytes', () => {
  it('are the bytes of the text lines, for every kind, value, fraction digits and op', () => {
    for (const kind of KINDS) {
      for (const fsp of [undefined, 0, 1, 3, 6]) {
        for (const schema of [undefined, 7]) {
          const shape = encodeShape({
            db: 'd"b',
            table: 'tä',
            columns: [
              { name: 'k', kind: 'int', sqlType: 'int' },
              { name: 'v"\\', kind, sqlType: kind, ...(fsp === undefined ? {} : { fsp }) },
            ],
            key: [0, 1],
            ...(schema === undefined ? {} : { schema }),
          });
          for (const value of VALUES) {
            const row = { k: 1, 'v"\\': value };
            for (const [op, before, after] of [
              ['c', null, row],
              ['d', row, null],
              ['u', row, { k: 2, 'v"\\': value }],
            ] as const) {
              expect(byteLine(op, shape, row, before, after, 123), `${kind}(${fsp}) ${String(value)} ${op}`).toBe(textLine(op, shape, row, before, after, 123));
            }
          }
        }
      }
    }
  });

  it('writes tables without a key or columns as the text path does', () => {
    const keyless = encodeShape({ db: 'd', table: 't', columns: [{ name: 'a', kind: 'string', sqlType: 'text' }], key: null });
    expect(byteLine('c', keyless, { a: 'x' }, null, { a: 'x' }, 0)).toBe(textLine('c', keyless, { a: 'x' }, null, { a: 'x' }, 0));
    const empty = encodeShape({ db: 'd', table: 't', columns: [], key: [] });
    expect(byteLine('d', empty, {}, {}, null, 9_999_999_999)).toBe(textLine('d', empty, {}, {}, null, 9_999_999_999));
  });

  it('gives up on a line that might not fit its room, writing nothing past it', () => {
    const shape = encodeShape({ db: 'd', table: 't', columns: [{ name: 'a', kind: 'string', sqlType: 'text' }], key: [0] });
    const short = { a: 'x'.repeat(100) };
    const line = textLine('c', shape, short, null, short, 1);
    // The check is conservative (the constant parts are kept clear of the room at every step).
    expect(byteLine('c', shape, short, null, short, 1, 2 * line.length)).toBe(line);
    for (const room of [0, 10, 100, line.length - 1]) expect(byteLine('c', shape, short, null, short, 1, room)).toBe(-1);
    // Non-ASCII text is bounded at 3 bytes per UTF-16 unit before it is written.
    const wide = { a: '☃'.repeat(100) };
    expect(byteLine('c', shape, wide, null, wide, 1, 700)).toBe(-1);
    expect(byteLine('c', shape, wide, null, wide, 1, 1000)).toBe(textLine('c', shape, wide, null, wide, 1));
  });
});
