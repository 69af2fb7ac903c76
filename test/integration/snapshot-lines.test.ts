import { describe, expect, inject, it } from 'vitest';
import { type TestSource, testSource } from '../support/source.ts';

/**
 * Snapshot rows written from the wire as bytes (lib/source/mysql/row-lines.ts) against the
 * reference path (mysql2's row objects, then the string encoders): the same table snapshotted both
 * ways must give the same bytes, line for line, with only the job's id and the clock differing.
 * type-differential.test.ts checks the reference path against the server's own rendering.
 */

/** Column definition, then one SQL literal per row (rows past the end are NULL). */
const ALL_EDGE: [string, string, string[]][] = [
  ['i8', 'TINYINT', ['-128', '127', '0', '-1']],
  ['u8', 'TINYINT UNSIGNED', ['255', '0']],
  ['i16', 'SMALLINT', ['-32768', '32767']],
  ['u16', 'SMALLINT UNSIGNED', ['65535']],
  ['i24', 'MEDIUMINT', ['-8388608', '8388607']],
  ['u24', 'MEDIUMINT UNSIGNED', ['16777215']],
  ['i32', 'INT', ['-2147483648', '2147483647', '10', '9']],
  ['u32', 'INT UNSIGNED ZEROFILL', ['4294967295', '42']],
  ['i64', 'BIGINT', ['-9223372036854775808', '9223372036854775807', '-9007199254740993', '9007199254740993', '-9007199254740992', '9007199254740991', '100']],
  ['u64', 'BIGINT UNSIGNED', ['18446744073709551615', '9223372036854775808', '0', '9007199254740992', '4294967296']],
  ['y', 'YEAR', ["'0000'", '1901', '2155', '2024']],
  ['y2', 'YEAR(2)', ["'0000'", '1970', '2069', '2000']],
  ['b1', 'BIT(1)', ["b'1'", "b'0'"]],
  ['b17', 'BIT(17)', ["b'11111111111111111'"]],
  ['b48', 'BIT(48)', [`b'${'1'.repeat(48)}'`]],
  ['b64', 'BIT(64)', [`b'${'1'.repeat(64)}'`, `b'1${'0'.repeat(62)}1'`]],
  ['d65', 'DECIMAL(65,30)', ["'-99999999999999999999999999999999999.999999999999999999999999999999'", "'-0.000000000000000000000000000001'", "'0'"]],
  ['dzf', 'DECIMAL(10,2) ZEROFILL', ['12.5', '0', '99999999.99']],
  ['d55', 'DECIMAL(5,5)', ["'0.99999'", "'-0.00001'", "'0'"]],
  ['d102', 'DECIMAL(10,2)', ['-12.5', '-0.5', '100']],
  ['f', 'FLOAT', ['3.14159', '-0e0', '1.4e-45', '3.4028234663852886e38', '16777217', '-1e-10', '0.1']],
  ['d', 'DOUBLE', ['-0e0', '0.1e0 + 0.2e0', '1e-300', '1.7976931348623157e308', '4.9e-324', '-95.81022000000003', '1e21', '123456789012', '0.5']],
  ['dt', 'DATE', ["'0000-00-00'", "'2024-00-00'", "'9999-12-31'", "'1000-01-01'", "'2024-02-29'"]],
  ...[0, 1, 2, 3, 4, 5, 6].flatMap((n): [string, string, string[]][] => [
    [
      `dtm${n}`,
      n ? `DATETIME(${n})` : 'DATETIME',
      [
        "'0000-00-00 00:00:00'",
        "'2024-01-01 00:00:00'",
        "'9999-12-31 23:59:59.999999'",
        "'2024-01-01 00:00:00.000001'",
        "'2024-02-29 12:34:56.5'",
        "'2024-00-00 10:00:00'",
      ],
    ],
    [
      `ts${n}`,
      n ? `TIMESTAMP(${n}) NULL` : 'TIMESTAMP NULL',
      ["'0000-00-00 00:00:00'", "'1970-01-01 00:00:01'", "'2038-01-19 03:14:07.999999'", "'2000-01-01 00:00:00'"],
    ],
    [
      `tm${n}`,
      n ? `TIME(${n})` : 'TIME',
      ["'00:00:00'", "'-838:59:59.999999'", "'838:59:59'", "'-00:00:00.5'", "'100:00:00'", "'24:00:00'", "'-01:00:00.000001'", "'-00:00:01'"],
    ],
  ]),
  [
    'vc',
    'VARCHAR(300)',
    [`'"q" \\\\ \\\\\\\\ /'`, "X'000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F7F'", "_utf8mb4 X'E280A8E280A9'", "'é€😀𝄞 ﻿'", "''", "'a'"],
  ],
  ['ch', 'CHAR(5)', ["'ab  '", "''", "' a'", "'😀😀😀😀😀'"]],
  ['tx', 'TEXT', [`REPEAT('é"\\\\\\n', 300)`, "''"]],
  // A line longer than the room a row may reserve: that row alone takes the reference path.
  ['lt', 'LONGTEXT', ["REPEAT('x', 200000)"]],
  ['l1', 'VARCHAR(40) CHARACTER SET latin1', ["X'808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9FFF00'", "'é'"]],
  ['a', 'VARCHAR(10) CHARACTER SET ascii', ["X'80'", "'abc'"]],
  ['e', "ENUM('', 'a', 'b\"c', 'é😀')", ["''", "'a'", "'b\"c'", "'é😀'", "'not-a-member'"]],
  ['s', "SET('x', 'y', 'z\\\\')", ["''", "'x,y'", "'z\\\\'"]],
  ['j', 'JSON', [`'{"a": [1, 2.50], "b": "\\\\u2028"}'`, "'[]'"]],
  ['bn', 'BINARY(4)', ["X'01'", "''", "X'FFFFFFFF'"]],
  ['vb', 'VARBINARY(256)', [`X'${Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0')).join('')}'`, "X''", "X'00'", "X'0000'"]],
  ['bl', 'BLOB', ["X'00FF'", "''", "REPEAT(X'AB', 1000)"]],
  ['pt', 'POINT', ["ST_GeomFromText('POINT(1 2)', 4326)"]],
  ['uu', 'UUID', ["'123e4567-e89b-12d3-a456-426614174000'"]],
  ['i4', 'INET4', ["'10.0.0.1'"]],
  ['i6', 'INET6', ["'::ffff:1.2.3.4'", "'2001:db8::1:0:0:1'"]],
];
/** MySQL has neither YEAR(2) (gone in 8.0) nor MariaDB's UUID, INET4 and INET6. */
const EDGE = () => ALL_EDGE.filter(([, type]) => inject('stackServer') === 'mariadb' || !/^(YEAR\(2\)|UUID|INET4|INET6)$/.test(type));
const rowsOf = () => Math.max(...EDGE().map(([, , values]) => values.length)) + 1; // the last row is all NULL

/** The lines of each snapshot run of `table` by job, with the job's id and clock made neutral. */
async function linesByJob(source: TestSource, table: string): Promise<string[][]> {
  const jobs = new Map<string, string[]>();
  for (const event of await source.events()) {
    if (event.table !== table || event.op === 's') continue;
    const job = event.source.txn.replace('snapshot:', '');
    const lines = jobs.get(job) ?? [];
    // The table's id in the seq is the job's own too; the watermark moves with other tests' writes.
    lines.push(
      event.raw
        .replaceAll(job, '<job>')
        .replace(/"ts_ms":\d+/, '"ts_ms":0')
        .replace(/\.r\.<job>\.[0-9a-f]{8}\./, '.r.<job>.<table>.')
        .replaceAll(/"file":"[^"]*","pos":\d+/g, '"file":"<file>","pos":0')
        .replace(/"seq":"\d{10}\.\d{12}\./, '"seq":"<F>.<P>.')
        // A page (and a keyless copy's reset) names its schema version only once the source's
        // position reached its watermark: when is up to the other tests' writes.
        .replace(/,"schema":\d+((?:,"ddl":.*)?)\}$/, '$1}'),
    );
    jobs.set(job, lines);
  }
  return [...jobs.values()];
}

/** The first line where `actual` and `expected` differ, around the first differing character (lines are long); undefined if equal. */
function firstDifference(actual: string[], expected: string[]): string | undefined {
  for (let i = 0; i < Math.max(actual.length, expected.length); i++) {
    const [a, e] = [actual[i] ?? '<none>', expected[i] ?? '<none>'];
    if (a === e) continue;
    let at = 0;
    while (a[at] === e[at]) at++;
    const around = (text: string) => text.slice(Math.max(0, at - 80), at + 80);
    return `line ${i}, character ${at}:\n  wire      …${around(a)}…\n  reference …${around(e)}…`;
  }
  return undefined;
}

/** Snapshots `table` through the reference path, then from the wire; returns both runs' lines and the second run's wire rows. */
async function bothWays(source: TestSource, table: string) {
  const reference = await source.snapshot({ tables: [`${source.db}.${table}`], rowLines: false });
  const wire = await source.snapshot({ tables: [`${source.db}.${table}`] });
  expect([reference.complete, wire.complete]).toEqual([true, true]);
  const runs = await linesByJob(source, table);
  expect(runs).toHaveLength(2);
  return {
    reference: runs[0] as string[],
    wire: runs[1] as string[],
    referenceWireRows: reference.results.reduce((sum, r) => sum + r.wireRows, 0),
    wireRows: wire.results.reduce((sum, r) => sum + r.wireRows, 0),
    rows: wire.rows,
  };
}

describe('snapshot rows from the wire (real MariaDB)', () => {
  it('writes the bytes the reference path writes, for edge values of every type, across pages', async () => {
    // Pages of 4 rows: cursors come from rows written as bytes, and keyless tables change pages mid-read.
    await using source = await testSource('wirelines', { SLUICE_SNAPSHOT_PAGE_ROWS: '4' });
    const [edgeColumns, ROWS] = [EDGE(), rowsOf()];
    // The key's columns sit apart, after others: the key object repeats values from the middle of the row.
    await source.sql(
      `CREATE TABLE edge (${edgeColumns.map(([name, type]) => `\`${name}\` ${type}`).join(', ')}, k VARCHAR(20) NOT NULL, id BIGINT UNSIGNED NOT NULL, PRIMARY KEY (k, id))`,
    );
    await source.sql(`CREATE TABLE nokey (${edgeColumns.map(([name, type]) => `\`${name}\` ${type}`).join(', ')})`);
    await source.sql("SET sql_mode = ''; SET time_zone = '+00:00'");
    for (let row = 0; row < ROWS; row++) {
      const values = edgeColumns.map(([, , literals]) => literals[row] ?? 'NULL').join(', ');
      await source.sql(`INSERT INTO edge VALUES (${values}, ${row % 2 ? `'é"${row}'` : `'k${row}'`}, ${row ? `18446744073709551615 - ${row}` : '0'})`);
      await source.sql(`INSERT INTO nokey VALUES (${values})`);
    }
    await source.capture(); // records the tables' schema versions: the lines may carry "schema"

    const edge = await bothWays(source, 'edge');
    expect(edge.rows).toBe(ROWS);
    expect(edge.reference.length).toBe(ROWS);
    expect(firstDifference(edge.wire, edge.reference)).toBeUndefined();
    // Every row but the one too long for its room came from the wire; none did on the reference path.
    expect([edge.referenceWireRows, edge.wireRows]).toEqual([0, ROWS - 1]);
    expect(edge.reference.join('\n')).toContain('"u64":18446744073709551615,');
    expect(edge.reference.join('\n')).toContain('"d":0.30000000000000004,'); // MariaDB stores -0e0 as 0
    expect(edge.reference.join('\n')).toContain('"key":{"k":"é\\"1","id":18446744073709551614}');

    const nokey = await bothWays(source, 'nokey');
    expect(nokey.rows).toBe(ROWS);
    expect(nokey.reference.filter((line) => line.startsWith('{"op":"r"'))).toHaveLength(ROWS);
    expect(firstDifference(nokey.wire, nokey.reference)).toBeUndefined();
    expect(nokey.wireRows).toBe(ROWS - 1);
  });

  it('takes the reference path for a table with a column whose wire form it does not write (ENUM in the binary charset)', async () => {
    await using source = await testSource('wirefallback');
    await source.sql("CREATE TABLE t (id INT PRIMARY KEY, e ENUM('a', 'é') CHARACTER SET binary, v VARCHAR(10))");
    await source.sql("INSERT INTO t VALUES (1, 'é', 'x'), (2, 'a', NULL), (3, NULL, 'y')");
    const { reference, wire, wireRows, rows } = await bothWays(source, 't');
    expect([rows, wireRows]).toEqual([3, 0]);
    expect(firstDifference(wire, reference)).toBeUndefined();
    expect(reference[0]).toContain('"after":{"id":1,"e":"é","v":"x"}');
  });

  it("writes columns named like Object.prototype's accessors from the wire too, paging by one", async () => {
    await using source = await testSource('wireaccessors', { SLUICE_SNAPSHOT_PAGE_ROWS: '2' });
    await source.sql('CREATE TABLE acc (`__proto__` INT PRIMARY KEY, `__defineGetter__` VARCHAR(10), `constructor` INT)');
    await source.sql("INSERT INTO acc VALUES (1, 'a', 10), (2, 'b', 20), (3, NULL, 30)");
    const { reference, wire, wireRows, rows } = await bothWays(source, 'acc');
    expect([rows, wireRows]).toEqual([3, 3]);
    expect(firstDifference(wire, reference)).toBeUndefined();
    expect(wire[2]).toContain('"key":{"__proto__":3},"before":null,"after":{"__proto__":3,"__defineGetter__":null,"constructor":30}');
  });
});
