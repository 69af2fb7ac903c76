import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { manifestTable, testSource } from '../support/source.ts';

// Values must not depend on the process time zone (the "+8 hours" bug): run this file far from UTC.
const originalTz = process.env.TZ;
beforeAll(() => {
  process.env.TZ = 'Asia/Shanghai';
});
afterAll(() => {
  process.env.TZ = originalTz;
});

/** Column, SQL type, inserted SQL literal, expected JSON text in the change event. */
const COLUMNS: [string, string, string, string][] = [
  ['u64', 'BIGINT UNSIGNED', '18446744073709551615', '18446744073709551615'],
  ['i64', 'BIGINT', '-9223372036854775808', '-9223372036854775808'],
  ['u32', 'INT UNSIGNED', '4294967295', '4294967295'],
  ['mi', 'MEDIUMINT UNSIGNED', '16777215', '16777215'],
  ['si', 'SMALLINT', '-32768', '-32768'],
  ['i8', 'TINYINT', '-128', '-128'],
  ['u8', 'TINYINT UNSIGNED', '255', '255'],
  ['dec38', 'DECIMAL(38,10)', "'-1234567890123456789012345678.0123456789'", '"-1234567890123456789012345678.0123456789"'],
  ['dec2', 'DECIMAL(10,2)', '12.5', '"12.50"'],
  ['f', 'FLOAT', '3.14159', '3.14159'],
  ['d', 'DOUBLE', '0.1', '0.1'],
  ['dlong', 'DOUBLE', '95.81022000000003', '95.81022000000003'],
  ['dbig', 'DOUBLE', '1e300', '1e+300'],
  ['dt', 'DATE', "'2024-02-29'", '"2024-02-29"'],
  ['dtzero', 'DATE', "'0000-00-00'", '"0000-00-00"'],
  ['dtm6', 'DATETIME(6)', "'2024-02-29 23:59:59.123456'", '"2024-02-29 23:59:59.123456"'],
  ['dtm3', 'DATETIME(3)', "'2024-01-01 00:00:00.100'", '"2024-01-01 00:00:00.100"'],
  ['dtmzero', 'DATETIME', "'0000-00-00 00:00:00'", '"0000-00-00 00:00:00"'],
  // A zero fraction keeps its digits (MySQL's binary protocol drops them; the snapshot path must not).
  ['dtmround', 'DATETIME(6)', "'2026-11-29 16:45:06'", '"2026-11-29 16:45:06.000000"'],
  ['tsround', 'TIMESTAMP(3) NULL', "'2024-01-01 08:00:00'", '"2024-01-01T00:00:00.000Z"'],
  ['tmround', 'TIME(2)', "'12:00:00'", '"12:00:00.00"'],
  // Inserted in session time zone +08:00, so 08:00 local is 00:00 UTC.
  ['ts3', 'TIMESTAMP(3) NULL', "'2024-01-01 08:00:00.120'", '"2024-01-01T00:00:00.120Z"'],
  ['tszero', 'TIMESTAMP NULL', "'0000-00-00 00:00:00'", '"0000-00-00 00:00:00"'],
  ['tm2', 'TIME(2)', "'-838:59:59.99'", '"-838:59:59.99"'],
  ['tm', 'TIME', "'12:34:56'", '"12:34:56"'],
  ['y', 'YEAR', '2024', '2024'],
  ['c', 'CHAR(3)', "'ab'", '"ab"'],
  ['vc', 'VARCHAR(40)', `'héllo 😀 "q" \\\\ \\n'`, '"héllo 😀 \\"q\\" \\\\ \\n"'],
  ['tx', 'TEXT', "'long text'", '"long text"'],
  ['e', "ENUM('a,b','c')", "'a,b'", '"a,b"'],
  ['s', "SET('x','y')", "'x,y'", '"x,y"'],
  ['bn', 'BINARY(3)', "X'000102'", '"AAEC"'],
  ['vb', 'VARBINARY(10)', "X'ff00'", '"/wA="'],
  ['bl', 'BLOB', "X'deadbeef'", '"3q2+7w=="'],
  ['b10', 'BIT(10)', "b'1010101010'", '682'],
  ['b64', 'BIT(64)', "b'1111111111111111111111111111111111111111111111111111111111111111'", '18446744073709551615'],
  ['j', 'JSON', `'{"a": [1, 2.50]}'`, '"{\\"a\\": [1, 2.50]}"'],
  ['n', 'INT NULL', 'NULL', 'null'],
];

/**
 * Where MySQL holds another value than MariaDB for the same literal: its TIME range ends at
 * 838:59:59 with no fraction (the literal is clipped), and its binary JSON prints numbers normalized.
 */
const ON_MYSQL: Record<string, string> = { tm2: '"-838:59:59.00"', j: '"{\\"a\\": [1, 2.5]}"' };

describe('type fidelity (real MariaDB binlog → S3)', () => {
  it('encodes every type exactly, edge values included, whatever the process time zone', async () => {
    await using source = await testSource('types');
    await source.sql(`CREATE TABLE ty (id BIGINT UNSIGNED PRIMARY KEY, ${COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ')})`);
    await source.capture();
    await source.sql(`SET time_zone = '+08:00'; SET sql_mode = '';
      INSERT INTO ty VALUES (18446744073709551615, ${COLUMNS.map(([, , literal]) => literal).join(', ')});
      UPDATE ty SET n = 1 WHERE id = 18446744073709551615;`);
    await source.capture();

    const events = await source.events();
    expect(events.map((e) => e.op)).toEqual(['c', 'u']);
    const held = (name: string, json: string) => (inject('stackServer') === 'mysql' ? (ON_MYSQL[name] ?? json) : json);
    const expected = `{"id":18446744073709551615,${COLUMNS.map(([name, , , json]) => `"${name}":${held(name, json)}`).join(',')}}`;
    const [insert, update] = events.map((e) => e.raw);
    expect(insert).toContain(`"key":{"id":18446744073709551615}`);
    expect(insert).toContain(`"after":${expected}`);
    expect(update).toContain(`"before":${expected}`);
    expect(update).toContain(`"after":${expected.replace('"n":null', '"n":1')}`);

    // The snapshot path must encode every value exactly as the binlog path does.
    await source.snapshot({ tables: [`${source.db}.ty`] });
    const snapshotRow = (await source.events()).find((e) => e.op === 'r');
    expect(snapshotRow?.raw).toContain(`"after":${expected.replace('"n":null', '"n":1')}`);

    const columns =
      manifestTable(
        (await source.manifests()).filter((m) => m.commit_seq !== undefined),
        { db: source.db, table: 'ty' },
      )?.columns ?? [];
    expect(columns.find((c) => c.name === 'u64')?.type).toBe('bigint unsigned');
    expect(columns.find((c) => c.name === 'dtm6')?.type).toBe('datetime(6)');
    expect(columns.find((c) => c.name === 'dec38')?.type).toBe('decimal(38,10)');
  });
});
