import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeKey, encodeRow, encodeShape, eventLine, lineParts, type Row, rowProperty } from '../../lib/format/event.ts';
import type { ColumnKind } from '../../lib/format/types.ts';
import { lineEncoder, type RowPacket, type WireColumn } from '../../lib/source/mysql/row-lines.ts';

/**
 * The wire encoder (lib/source/mysql/row-lines.ts) against the reference path on random rows,
 * without a server: binary-protocol packets built here, parsed by mysql2's own binary parser (what
 * the snapshot's reference path does), then encoded by the string encoders. Every line written from
 * the wire must be byte for byte the reference line, within the encoder's bound.
 * test/integration/snapshot-lines.test.ts does the same on a real server's packets.
 */

const require = createRequire(import.meta.url);
/** mysql2's own files (its package exports do not list them): the parser the reference path runs. */
const mysql2File = (path: string) => join(dirname(require.resolve('mysql2')), path);
type Parser = new () => { next(packet: unknown, fields: unknown, options: unknown): Row };
const binaryParser = require(mysql2File('lib/parsers/binary_parser.js')) as (fields: unknown, options: unknown, config: unknown) => Parser;
const Packet = require(mysql2File('lib/packets/packet.js')) as new (id: number, buffer: Buffer, start: number, end: number) => unknown;
/** The paging connection's options (lib/source/mysql/snapshot-reader.ts). */
const OPTIONS = { supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, timezone: 'Z', jsonStrings: true };

let seed = 20261130;
const random = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x80000000;
};
const below = (n: number) => Math.floor(random() * n);
const pick = <T>(values: readonly T[]) => values[below(values.length)] as T;

function lengthEncoded(bytes: Buffer): Buffer {
  const n = bytes.length;
  if (n < 0xfb) return Buffer.concat([Buffer.from([n]), bytes]);
  const prefix = Buffer.alloc(3);
  prefix[0] = 0xfc;
  prefix.writeUInt16LE(n, 1);
  return Buffer.concat([prefix, bytes]);
}

/** Random text of a kind: ASCII, 7-bit with control characters, awkward UTF-8, or any bytes (often invalid UTF-8). */
function text(length: number, kind: number): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < length; i++) {
    if (kind === 0) bytes.push(0x20 + below(0x5f));
    else if (kind === 1) bytes.push(below(0x80));
    else if (kind === 2) bytes.push(...Buffer.from(pick(['é', '€', '😀', '\u2028', '\ufeff', '"', '\\', '\u007f', '\u0000', 'a', '\u00a0'])));
    else bytes.push(below(256));
  }
  return Buffer.from(bytes);
}

function integer(value: number | bigint, width: number, signed: boolean): Buffer {
  const out = Buffer.alloc(width);
  if (width === 8) {
    if (signed) out.writeBigInt64LE(BigInt.asIntN(64, BigInt(value)));
    else out.writeBigUInt64LE(BigInt.asUintN(64, BigInt(value)));
  } else if (signed) out.writeIntLE(Number(value), 0, width);
  else out.writeUIntLE(Number(value), 0, width);
  return out;
}

/** Up to 64 random bits, often fewer (small, near 2^53, near 2^63). */
const bits64 = () => {
  const bytes = Buffer.alloc(8);
  for (let i = 0; i < 8; i++) bytes[i] = below(256);
  return bytes.readBigUInt64LE() >> BigInt(below(64));
};

interface ColumnKindOnWire {
  readonly kind: ColumnKind;
  readonly field: Partial<WireColumn>;
  readonly fsp?: number;
  readonly value: () => Buffer;
}

/** A temporal value: the length byte (0, 4, 7 or 11), then the fields it covers. */
function temporal(lengths: readonly number[]): Buffer {
  const length = pick(lengths);
  const out = Buffer.alloc(1 + length);
  out[0] = length;
  if (length >= 4) {
    out.writeUInt16LE(pick([0, 1, 999, 1000, 2024, 9999, below(10000)]), 1);
    out[3] = below(13);
    out[4] = below(32);
  }
  if (length >= 7) {
    out[5] = below(24);
    out[6] = below(60);
    out[7] = below(60);
  }
  if (length >= 11) out.writeUInt32LE(pick([0, 1, 10, 100000, 500000, 999999, below(1000000)]), 8);
  return out;
}

function columnKinds(): ColumnKindOnWire[] {
  const fsp = below(7);
  const decimals = pick([fsp, fsp, 6]);
  const utf8 = { characterSet: 224, encoding: 'utf8' };
  return [
    { kind: 'int', field: { columnType: 1 }, value: () => integer(below(256) - 128, 1, true) },
    { kind: 'int', field: { columnType: 1, flags: 32 }, value: () => integer(below(256), 1, false) },
    { kind: 'int', field: { columnType: 2 }, value: () => integer(below(65536) - 32768, 2, true) },
    { kind: 'int', field: { columnType: 2, flags: 32 }, value: () => integer(below(65536), 2, false) },
    { kind: 'int', field: { columnType: 9 }, value: () => integer(below(16777216) - 8388608, 4, true) },
    { kind: 'int', field: { columnType: 3 }, value: () => integer(pick([-2147483648, 2147483647, 0, -1, below(4294967296) - 2147483648]), 4, true) },
    { kind: 'int', field: { columnType: 3, flags: 32 }, value: () => integer(pick([4294967295, 0, 2147483648, below(4294967296)]), 4, false) },
    { kind: 'int', field: { columnType: 8 }, value: () => integer(random() < 0.5 ? bits64() : -bits64(), 8, true) },
    { kind: 'int', field: { columnType: 8, flags: 32 }, value: () => integer(bits64(), 8, false) },
    { kind: 'year', field: { columnType: 13, flags: 32 }, value: () => integer(pick([0, 1900, 1901, 2155, 2000]), 2, false) },
    {
      kind: 'double',
      field: { columnType: 5 },
      value: () => {
        const out = Buffer.alloc(8);
        if (random() < 0.5) for (let i = 0; i < 8; i++) out[i] = below(256);
        else out.writeDoubleLE(pick([0, -0, 0.1, 1e21, 1e-7, 5e-324, 123456789012, -95.81022000000003]));
        return out;
      },
    },
    {
      kind: 'float',
      field: { columnType: 4 },
      value: () => {
        const out = Buffer.alloc(4);
        if (random() < 0.5) for (let i = 0; i < 4; i++) out[i] = below(256);
        else out.writeFloatLE(pick([0, -0, 0.1, 3.4e38, 1.4e-45, 16777217]));
        return out;
      },
    },
    {
      kind: 'decimal',
      field: { columnType: 0xf6, characterSet: 63 },
      value: () =>
        lengthEncoded(Buffer.from(pick(['0', '-0.5', '000', '-000.50', '0012.5', '-0012', '99999999.99', '0.00', '00.1', `${below(1e9)}.${below(100)}`]))),
    },
    { kind: 'date', fsp, field: { columnType: 0x0a, decimals, characterSet: 63 }, value: () => temporal([0, 4]) },
    { kind: 'datetime', fsp, field: { columnType: 0x0c, decimals, characterSet: 63 }, value: () => temporal([0, 4, 7, 11]) },
    { kind: 'timestamp', fsp, field: { columnType: 0x07, decimals, characterSet: 63 }, value: () => temporal([0, 4, 7, 11]) },
    {
      kind: 'time',
      fsp,
      field: { columnType: 0x0b, decimals },
      value: () => {
        const length = pick([0, 8, 12]);
        const out = Buffer.alloc(1 + length);
        out[0] = length;
        if (length >= 8) {
          out[1] = below(2);
          out.writeUInt32LE(pick([0, 1, 34, below(40), 4000000000]), 2);
          out[6] = below(24);
          out[7] = below(60);
          out[8] = below(60);
        }
        if (length >= 12) out.writeUInt32LE(pick([0, 1, 10, 100000, 500000, 999999, below(1000000)]), 9);
        return out;
      },
    },
    { kind: 'string', field: { columnType: 0xfd, ...utf8 }, value: () => lengthEncoded(text(pick([0, 1, 5, 70, 300]), below(4))) },
    { kind: 'string', field: { columnType: 0xfe, ...utf8 }, value: () => lengthEncoded(text(pick([0, 3]), below(3))) },
    { kind: 'string', field: { columnType: 0xfc, ...utf8, extendedFormat: 'json' }, value: () => lengthEncoded(text(pick([0, 5, 40]), below(3))) },
    { kind: 'binary', field: { columnType: 0xfc, characterSet: 63 }, value: () => lengthEncoded(text(pick([0, 1, 2, 3, 4, 70, 300]), 3)) },
    { kind: 'bit', field: { columnType: 0x10, characterSet: 63 }, value: () => lengthEncoded(text(1 + below(8), 3)) },
  ];
}

const NAMES = ['a', 'b"c', 'é', 'x\\y', '__proto__', 'constructor'];
const SOURCE = '{"file":"binlog.000001","pos":4}';
const PREFIX = '0000000001.000000000004.r.job.tab.0001.00000001.';

describe('snapshot lines from the wire (no server)', () => {
  it('write the reference bytes, or leave the row to the reference path, for random rows of every supported type', () => {
    let written = 0;
    let left = 0;
    const differences: string[] = [];
    for (let table = 0; table < 400; table++) {
      const kinds = columnKinds();
      const count = 1 + below(12);
      const columns = Array.from({ length: count }, () => pick(kinds));
      // Each name once per table; an accessor's name is the column's own.
      const names = columns.map((_, i) => (i < NAMES.length && random() < 0.3 ? (NAMES[i] as string) : `${pick(NAMES)}${i}`));
      const key = [...new Set(Array.from({ length: below(Math.min(3, count) + 1) }, () => below(count)))];
      const shape = encodeShape({
        db: 'd',
        table: 't',
        columns: columns.map((c, i) => ({
          name: names[i] as string,
          kind: c.kind,
          sqlType: 'x',
          ...(['datetime', 'timestamp', 'time'].includes(c.kind) ? { fsp: c.fsp } : {}),
        })),
        key,
        ...(random() < 0.5 ? { schema: 3 } : {}),
      });
      // The SELECT names each value by its column's rowProperty (schema.ts `selectAs`).
      const fields = columns.map((c, i) => ({
        name: rowProperty(names[i] as string),
        columnType: 0,
        flags: 0,
        characterSet: 224,
        encoding: c.field.characterSet === 63 ? 'binary' : 'utf8',
        decimals: 0,
        ...c.field,
      })) as WireColumn[];
      const encoder = lineEncoder(shape, fields);
      expect(encoder, `${columns.map((c) => c.kind)}`).toBeDefined();
      const parts = lineParts('r', shape, SOURCE, PREFIX);
      const writer = encoder?.page({ ...parts, indexWidth: 7 });
      const parser = new (binaryParser(fields, {}, OPTIONS))();
      for (let row = 0; row < 20; row++) {
        const nulls = Buffer.alloc((count + 7 + 2) >> 3);
        const values: Buffer[] = [];
        columns.forEach((c, i) => {
          if (!key.includes(i) && random() < 0.2) nulls[(i + 2) >> 3] = (nulls[(i + 2) >> 3] as number) | (1 << ((i + 2) & 7));
          else values.push(c.value());
        });
        const body = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), nulls, ...values]);
        const packet: RowPacket = { buffer: body, offset: 4, end: body.length };
        const out = Buffer.alloc(1 << 20);
        const end = writer?.encode(packet, out, 13, row * 37) ?? -1;
        if (end < 0) {
          left++;
          continue;
        }
        written++;
        const parsed = parser.next(new Packet(0, body, 0, body.length), fields, OPTIONS);
        const reference = eventLine(
          'r',
          shape,
          key.length ? encodeKey(shape, parsed) : 'null',
          'null',
          encodeRow(shape, parsed),
          SOURCE,
          `${PREFIX}${String(row * 37).padStart(7, '0')}`,
        );
        const line = out.subarray(13, end);
        if (!line.equals(Buffer.from(reference))) differences.push(`${line.toString()}\n  vs ${reference}`);
        if (end - 13 > (writer?.bound(packet) ?? 0)) differences.push(`past its bound: ${line.toString()}`);
      }
    }
    expect(differences.slice(0, 3)).toEqual([]);
    // Most rows are written from the wire; invalid UTF-8 leaves a row to the reference path.
    expect(written).toBeGreaterThan(5000);
    expect(left).toBeGreaterThan(0);
  });
});
