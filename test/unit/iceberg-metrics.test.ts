import { describe, expect, it } from 'vitest';
import {
  boundLiteral,
  metricsFrom,
  metricsSelect,
  toBound,
  truncateBinaryMax,
  truncateStringMax,
  truncateStringMin,
  twosComplement,
} from '../../lib/iceberg/files/metrics.ts';
import { Workspace } from '../../lib/iceberg/files/parquet.ts';
import type { IcebergField } from '../../lib/iceberg/files/schema.ts';

const bytes = (b: Uint8Array | undefined) => (b ? [...b].map((x) => (x > 127 ? x - 256 : x)) : undefined);

describe('Iceberg single-value serialization (spec appendix D)', () => {
  it('encodes each type as Iceberg Java Conversions.toByteBuffer does (its TestConversions vectors)', () => {
    expect(bytes(toBound('int', '400000'))).toEqual([-128, 26, 6, 0]);
    expect(bytes(toBound('date', '400000'))).toEqual([-128, 26, 6, 0]);
    expect(bytes(toBound('long', '400000'))).toEqual([-128, 26, 6, 0, 0, 0, 0, 0]);
    expect(bytes(toBound('timestamp', '400000'))).toEqual([-128, 26, 6, 0, 0, 0, 0, 0]);
    expect(bytes(toBound('timestamptz', '400000'))).toEqual([-128, 26, 6, 0, 0, 0, 0, 0]);
    expect(bytes(toBound('float', Math.fround(0.1)))).toEqual([-51, -52, -52, 61]);
    expect(bytes(toBound('double', 0.1))).toEqual([-102, -103, -103, -103, -103, -103, -71, 63]);
    expect(bytes(toBound('boolean', 'true'))).toEqual([1]);
    expect(bytes(toBound('boolean', 'false'))).toEqual([0]);
    expect(bytes(toBound('string', 'foo'))).toEqual([102, 111, 111]);
    expect(bytes(toBound('decimal(4,2)', '12.34'))).toEqual([4, -46]);
    expect(bytes(toBound('binary', Uint8Array.of(0, 255)))).toEqual([0, -1]);
  });

  it('writes decimals as minimal two-s complement big-endian bytes (BigInteger.toByteArray)', () => {
    expect(bytes(twosComplement(0n))).toEqual([0]);
    expect(bytes(twosComplement(127n))).toEqual([127]);
    expect(bytes(twosComplement(128n))).toEqual([0, -128]);
    expect(bytes(twosComplement(-128n))).toEqual([-128]);
    expect(bytes(twosComplement(-129n))).toEqual([-1, 127]);
    expect(bytes(toBound('decimal(20,0)', '18446744073709551615'))).toEqual([0, -1, -1, -1, -1, -1, -1, -1, -1]);
    expect(bytes(toBound('decimal(10,2)', '-1.50'))).toEqual([-1, 106]);
  });

  it('reads bounds back as SQL literals, also the narrower bounds of files written before a promotion', () => {
    expect(boundLiteral('decimal(10,2)', toBound('decimal(10,2)', '-1.50'))).toBe("CAST('-1.50' AS DECIMAL(10,2))");
    expect(boundLiteral('decimal(20,0)', toBound('decimal(20,0)', '18446744073709551615'))).toBe("CAST('18446744073709551615' AS DECIMAL(20,0))");
    expect(boundLiteral('long', toBound('int', '-7'))).toBe('-7');
    expect(boundLiteral('long', toBound('long', '-9007199254740993'))).toBe('-9007199254740993');
    expect(boundLiteral('string', toBound('string', "it's"))).toBe("'it''s'");
    expect(boundLiteral('binary', Uint8Array.of(0xde, 0xad))).toBe("'DEAD'");
  });
});

describe('truncate(16) bounds (UnicodeUtil, BinaryUtil)', () => {
  it('keeps short values, cuts long ones by code points and increments the last one that can be', () => {
    expect(truncateStringMax('abc', 16)).toBe('abc');
    expect(truncateStringMin('abcdefghijklmnopqrstuvwxyz', 16)).toBe('abcdefghijklmnop');
    expect(truncateStringMax('abcdefghijklmnopqrstuvwxyz', 16)).toBe('abcdefghijklmnoq');
    // Code points, not UTF-16 units: 𝄞 (U+1D11E) is one.
    expect(truncateStringMin('𝄞'.repeat(20), 16)).toBe('𝄞'.repeat(16));
    expect(truncateStringMax('𝄞'.repeat(20), 16)).toBe(`${'𝄞'.repeat(15)}\u{1D11F}`);
    // The greatest code point cannot grow: the one before it does, and the rest is dropped.
    expect(truncateStringMax(`ab${'\u{10FFFF}'.repeat(20)}`, 3)).toBe('ac');
    expect(truncateStringMax('\u{10FFFF}'.repeat(5), 3)).toBeUndefined();
    // U+D7FF + 1 would be a lone surrogate: the bound skips to U+E000.
    expect(truncateStringMax('\uD7FF\uD7FFx', 2)).toBe('\uD7FF\uE000');
  });

  it('cuts binaries to 16 bytes and increments the last byte below 0xFF', () => {
    const long = Uint8Array.from({ length: 20 }, (_, i) => i);
    expect(bytes(truncateBinaryMax(long, 4))).toEqual([0, 1, 2, 4]);
    expect(bytes(truncateBinaryMax(Uint8Array.of(1, 0xff, 0xff, 0xff, 7), 3))).toEqual([2]);
    expect(truncateBinaryMax(Uint8Array.of(0xff, 0xff, 0xff), 2)).toBeUndefined();
    expect(bytes(truncateBinaryMax(Uint8Array.of(9, 9), 16))).toEqual([9, 9]);
  });
});

describe('column statistics by SQL aggregates', () => {
  it('counts values, nulls and NaNs and bounds every type, truncating strings and binaries', async () => {
    await using ws = await Workspace.open();
    const fields: IcebergField[] = [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 's', required: false, type: 'string' },
      { id: 3, name: 'd', required: false, type: 'double' },
      { id: 4, name: 'day', required: false, type: 'date' },
      { id: 5, name: 'ts', required: false, type: 'timestamptz' },
      { id: 6, name: 'b', required: false, type: 'binary' },
      { id: 7, name: 'm', required: false, type: 'decimal(10,2)' },
      { id: 8, name: 'z', required: false, type: 'float' },
    ];
    await ws.run(`CREATE TEMP TABLE t AS SELECT * FROM (VALUES
      (3::BIGINT, 'zzzzzzzzzzzzzzzzzzzz', 'nan'::DOUBLE, DATE '1970-01-02', TIMESTAMPTZ '1970-01-01 00:00:00.000001+00', '\\xFF\\xFF'::BLOB, -1.50::DECIMAL(10,2), -0.0::FLOAT),
      (-2::BIGINT, 'a', 2.5::DOUBLE, NULL, NULL, '\\x00'::BLOB, 12.34::DECIMAL(10,2), 0.0::FLOAT),
      (7::BIGINT, NULL, -1.0::DOUBLE, DATE '1969-12-31', TIMESTAMPTZ '2024-01-01 00:00:00+00', NULL, NULL, NULL)
    ) v("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8")`);
    const select = metricsSelect(
      fields.map((field) => ({ field, column: `"c${field.id}"` })),
      { truncate: 16 },
    );
    const row = (await ws.rows(`SELECT ${select} FROM t`))[0] as Record<string, unknown>;
    const m = metricsFrom(row, fields, { truncate: 16 });
    expect(Object.fromEntries(m.valueCounts)).toEqual({ 1: 3, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3, 7: 3, 8: 3 });
    expect(Object.fromEntries(m.nullValueCounts)).toEqual({ 1: 0, 2: 1, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1 });
    expect(Object.fromEntries(m.nanValueCounts)).toEqual({ 3: 1, 8: 0 });
    const lower = (id: number) => bytes(m.lowerBounds.get(id));
    const upper = (id: number) => bytes(m.upperBounds.get(id));
    expect([lower(1), upper(1)]).toEqual([bytes(toBound('long', '-2')), bytes(toBound('long', '7'))]);
    // The 20 z's: lower bound 'a', upper bound 16 characters with the last one incremented.
    expect([lower(2), upper(2)]).toEqual([bytes(toBound('string', 'a')), bytes(toBound('string', `${'z'.repeat(15)}{`))]);
    // NaN is no bound.
    expect([lower(3), upper(3)]).toEqual([bytes(toBound('double', -1)), bytes(toBound('double', 2.5))]);
    expect([lower(4), upper(4)]).toEqual([bytes(toBound('date', '-1')), bytes(toBound('date', '1'))]);
    expect([lower(5), upper(5)]).toEqual([bytes(toBound('timestamptz', '1')), bytes(toBound('timestamptz', '1704067200000000'))]);
    expect([lower(6), upper(6)]).toEqual([[0], [-1, -1]]);
    expect([lower(7), upper(7)]).toEqual([bytes(toBound('decimal(10,2)', '-1.50')), bytes(toBound('decimal(10,2)', '12.34'))]);
    // Zeros: -0.0 below, +0.0 above.
    expect([lower(8), upper(8)]).toEqual([bytes(toBound('float', -0)), bytes(toBound('float', 0))]);
  });

  it('leaves bounds out for a column of nulls, and the upper bound out when no code point can grow', async () => {
    await using ws = await Workspace.open();
    const fields: IcebergField[] = [
      { id: 1, name: 'n', required: false, type: 'int' },
      { id: 2, name: 's', required: false, type: 'string' },
    ];
    await ws.run(`CREATE TEMP TABLE t AS SELECT NULL::INTEGER AS "c1", repeat(chr(1114111), 20) AS "c2"`);
    const mode = { truncate: 16 };
    const row = (
      await ws.rows(
        `SELECT ${metricsSelect(
          fields.map((field) => ({ field, column: `"c${field.id}"` })),
          mode,
        )} FROM t`,
      )
    )[0] as Record<string, unknown>;
    const m = metricsFrom(row, fields, mode);
    expect([m.lowerBounds.has(1), m.upperBounds.has(1), m.nullValueCounts.get(1)]).toEqual([false, false, 1]);
    expect([m.lowerBounds.has(2), m.upperBounds.has(2)]).toEqual([true, false]);
    // Full mode (position delete files' file_path) keeps the whole value.
    const full = metricsFrom(
      (await ws.rows(`SELECT ${metricsSelect([{ field: fields[1] as IcebergField, column: '"c2"' }], 'full')} FROM t`))[0] as Record<string, unknown>,
      [fields[1] as IcebergField],
      'full',
    );
    expect(new TextDecoder().decode(full.upperBounds.get(2))).toBe('\u{10FFFF}'.repeat(20));
  });
});
