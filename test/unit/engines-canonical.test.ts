import { describe, expect, it } from 'vitest';
import { compare, float32Text, mappedType, pythonRepr } from '../engines/canonical.ts';

// The TypeScript half of the engines' canonical text must print what test/engines/canon.py prints
// for the same value; the expected texts are CPython 3.11's repr.
describe('engines: canonical text', () => {
  it("prints doubles as Python's repr and floats as the float32's shortest text", () => {
    const doubles = [
      0,
      -0,
      0.1,
      3,
      1e300,
      5e-324,
      1.7976931348623157e308,
      -2.5e-7,
      123456.789,
      1e16,
      1e15,
      9999999999999998,
      0.0001,
      0.00001,
      12345678901234567000,
      2 ** 53 + 2,
    ];
    expect(doubles.map(pythonRepr)).toEqual([
      '0.0',
      '-0.0',
      '0.1',
      '3.0',
      '1e+300',
      '5e-324',
      '1.7976931348623157e+308',
      '-2.5e-07',
      '123456.789',
      '1e+16',
      '1000000000000000.0',
      '9999999999999998.0',
      '0.0001',
      '1e-05',
      '1.2345678901234567e+19',
      '9007199254740994.0',
    ]);
    expect([1.23456, 0.1, 1e-7, 16777217, 3.4e38, 0, -1.5, 0.1234567].map(float32Text)).toEqual([
      '1.23456',
      '0.1',
      '1e-07',
      '16777216.0',
      '3.4e+38',
      '0.0',
      '-1.5',
      '0.1234567',
    ]);
  });

  it('maps MariaDB types as docs/ICEBERG.md says', () => {
    expect(
      [
        ['int', 'int unsigned'],
        ['bigint', 'bigint(20) unsigned'],
        ['decimal', 'decimal(65,30)'],
        ['decimal', 'decimal(38,10)'],
        ['bit', 'bit(64)'],
        ['bit', 'bit(5)'],
        ['timestamp', 'timestamp(6)'],
        ['geometry', 'geometry'],
        ['time', 'time(6)'],
      ].map(([d, c]) => mappedType(d as string, c as string)),
    ).toEqual(['long', 'decimal(20,0)', 'string', 'decimal(38,10)', 'decimal(20,0)', 'long', 'timestamptz', 'binary', 'string']);
  });

  it('finds a changed cell, a missing and an extra row, and a duplicate of a keyless row', () => {
    const columns = [
      { name: 'id', type: 'int' },
      { name: 'v', type: 'string' },
    ];
    const keyed = {
      columns,
      key: [0],
      rows: [
        ['1', 'a'],
        ['2', 'b'],
        ['3', null],
      ],
      typeErrors: [],
    };
    expect(
      compare(keyed, [
        ['1', 'a'],
        ['2', 'B'],
        ['3', null],
      ]),
    ).toMatchObject({ cells: 6, differences: ['key ["2"] column v (string): read "B", MariaDB "b"'] });
    expect(
      compare(keyed, [
        ['1', 'a'],
        ['3', null],
        ['4', 'x'],
      ]).differences,
    ).toEqual(['key ["2"]: 1 in MariaDB, 0 read', 'key ["4"]: 0 in MariaDB, 1 read']);
    const keyless = {
      columns,
      key: [],
      rows: [
        ['1', 'a'],
        ['1', 'a'],
      ],
      typeErrors: [],
    };
    expect(compare(keyless, [['1', 'a']]).differences).toEqual(['row ["1","a"]: 2 in MariaDB, 1 read']);
    expect(
      compare(keyless, [
        ['1', 'a'],
        ['1', 'a'],
      ]).differences,
    ).toEqual([]);
  });
});
