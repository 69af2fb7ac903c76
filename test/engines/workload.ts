import { merge } from '../support/iceberg-merge.ts';
import { random } from '../support/rule-workload.ts';
import { quoted, type TestSource } from '../support/source.ts';

/*
 * The engines' workload, through the real pipeline: DDL and DML on MariaDB, captured from its
 * binlog (and a snapshot job for the re-snapshot), merged into Iceberg after every round. Seeded:
 * the same seed gives the same statements. Each table covers one part of the mapping: every
 * column type, schema evolution, TRUNCATE, a re-snapshot, a keyless multiset, compaction with
 * expiry, a BIGINT UNSIGNED key with key-moving updates, and a table of several data files for
 * the point query.
 */

/** The tables the workload leaves, by name. */
export const TABLES = ['types', 'ubig', 'evo', 'trunc', 'resnap', 'keyless', 'compact', 'point'] as const;

/** The point query: the `point` table's data lies in one data file per round (ids 1000 + 100 × round + i); this key is in the first. */
export const POINT = { table: 'point', column: 'id', value: 1_020, rounds: 4, perRound: 40 } as const;

/** Settings that make the `compact` table compact and expire on every merge. */
const HOUSEKEEPING = { SLUICE_ICEBERG_COMPACT_FILES: '2', SLUICE_ICEBERG_RETENTION_HOURS: '0.00001' };

/** How many of `ubig`'s keys lie at the top of the range, one apart (every round updates one of them). */
export const UBIG_CLUSTER = 40;

const STRINGS = ['plain', 'é😀 ünï', 'quote " and \\ back', 'tab\tnl\n', '', '日本語', 'a,b'];
const DOUBLES = ['-0', '5e-324', '1.7976931348623157e308', '0.1', '3', '-2.5e-7', '1e300', '123456.789'];
const FLOATS = ['3.14159', '-1.5', '0.1', '1e-7', '16777217', '3.4e38', '0'];

type Rnd = ReturnType<typeof random>;

/** A random unsigned 64-bit integer as text, sometimes an edge of the range. */
function u64(rnd: Rnd): string {
  if (rnd.chance(0.02)) return rnd.pick(['18446744073709551615', '0', '9007199254740993', '9223372036854775808']);
  const high = BigInt(rnd.int(2 ** 32));
  const low = BigInt(rnd.int(2 ** 32));
  return String((high << 32n) | low);
}

const text = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

const TYPES = `CREATE TABLE types (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED, mi MEDIUMINT,
  mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, d10 DECIMAL(10,2), d38 DECIMAL(38,10), d65 DECIMAL(65,30),
  f FLOAT, db DOUBLE, y YEAR, b5 BIT(5), b64 BIT(64), dt DATE, dtm DATETIME(6), ts TIMESTAMP(6) NULL, tm TIME(6), c CHAR(5), vc VARCHAR(40),
  tx TEXT, e ENUM('a','b,c','é'), st SET('x','y','z'), j JSON, bn BINARY(4), vb VARBINARY(16), bl BLOB, g GEOMETRY)`;

/** A row of `types` with random values (NULL now and then), as a VALUES tuple. */
function typesRow(rnd: Rnd, id: number): string {
  const n = (v: string) => (rnd.chance(0.1) ? 'NULL' : v);
  const digits = (k: number) => Array.from({ length: k }, () => rnd.int(10)).join('');
  const sign = () => (rnd.chance(0.5) ? '-' : '');
  const values = [
    String(id),
    n(String(rnd.int(256) - 128)),
    n(String(rnd.int(256))),
    n(String(rnd.int(65536) - 32768)),
    n(String(rnd.int(65536))),
    n(String(rnd.int(2 ** 24) - 2 ** 23)),
    n(String(rnd.int(2 ** 24))),
    n(String(rnd.int(2 ** 32) - 2 ** 31)),
    n(String(rnd.int(2 ** 32))),
    n(`${sign()}${BigInt(rnd.int(2 ** 31)) * BigInt(rnd.int(2 ** 32))}`),
    n(u64(rnd)),
    n(`${sign()}${digits(8)}.${digits(2)}`),
    n(`${sign()}${digits(28)}.${digits(10)}`),
    n(`${sign()}${digits(35)}.${digits(30)}`),
    n(rnd.pick(FLOATS)),
    n(rnd.pick(DOUBLES)),
    n(String(1901 + rnd.int(255))),
    n(`b'${rnd.int(32).toString(2)}'`),
    n(`${BigInt(rnd.int(2 ** 32)) * BigInt(rnd.int(2 ** 32))}`),
    n(`'${1000 + rnd.int(8999)}-0${1 + rnd.int(9)}-1${rnd.int(10)}'`),
    n(`'${1000 + rnd.int(8999)}-1${rnd.int(3)}-2${rnd.int(9)} 1${rnd.int(10)}:3${rnd.int(10)}:4${rnd.int(10)}.${digits(6)}'`),
    n(`'${1971 + rnd.int(66)}-0${1 + rnd.int(9)}-0${1 + rnd.int(9)} 0${rnd.int(10)}:1${rnd.int(10)}:2${rnd.int(10)}.${digits(6)}'`),
    n(`'${sign()}${rnd.int(839)}:${rnd.int(6)}${rnd.int(10)}:5${rnd.int(10)}.${digits(6)}'`),
    n(text(rnd.pick(['ab', 'é', '', 'xyz  ']).trimEnd())),
    n(text(rnd.pick(STRINGS))),
    n(text(rnd.pick(STRINGS).repeat(1 + rnd.int(3)))),
    n(text(rnd.pick(['a', 'b,c', 'é']))),
    n(text(rnd.pick(['', 'x', 'y,z', 'x,y,z']))),
    n(text(rnd.pick(['{"a": [1, 2.50]}', '[]', 'null', '{"k": "é😀", "n": 12345678901234567890}', '"s"']))),
    n(`X'${digits(2)}${rnd.int(16).toString(16)}f'`),
    n(`X'${'de'.repeat(rnd.int(8))}'`),
    n(`X'${'00ff'.repeat(rnd.int(20))}'`),
    n(`ST_GeomFromText('POINT(${rnd.int(100)} ${sign()}${rnd.int(100)}.5)')`),
  ];
  return `(${values.join(', ')})`;
}

/** One round of random inserts, updates and deletes on a keyed table whose keys are `keys` (mutated). */
function keyedRound(rnd: Rnd, table: string, keys: string[], fresh: () => string, row: (key: string) => string, update: () => string, count: number) {
  const statements: string[] = [];
  for (let i = 0; i < count; i++) {
    const roll = rnd.next();
    if (!keys.length || roll < 0.4) {
      const key = fresh();
      keys.push(key);
      statements.push(`INSERT INTO ${table} VALUES ${row(key)}`);
    } else {
      const at = rnd.int(keys.length);
      const key = keys[at] as string;
      if (roll < 0.65) statements.push(`UPDATE ${table} SET ${update()} WHERE id = ${key}`);
      else if (roll < 0.85) {
        const moved = fresh();
        keys[at] = moved;
        statements.push(`UPDATE ${table} SET id = ${moved} WHERE id = ${key}`);
      } else {
        keys.splice(at, 1);
        statements.push(`DELETE FROM ${table} WHERE id = ${key}`);
      }
    }
  }
  return statements;
}

/** Runs the workload on `source` (with `deletes` as the merge's delete mode); returns what it did, for messages. */
export async function runWorkload(source: TestSource, seed: number): Promise<string[]> {
  const rnd = random(seed);
  const log: string[] = [];
  const run = async (statements: string[]) => {
    if (!statements.length) return;
    await source.sql(`USE ${quoted(source.db)}; SET time_zone = '+00:00'; ${statements.join('; ')}`);
  };
  const round = async (statements: string[], note: string) => {
    await run(statements);
    await source.capture();
    const compact = await merge(source, { tables: ['compact'], config: source.configWith(HOUSEKEEPING) });
    const all = await merge(source);
    const done = [...compact.tables, ...all.tables]
      .filter((t) => t.status === 'merged')
      .map((t) => `${t.table.table}:${t.mode}${t.compacted ? '+compacted' : ''}`);
    log.push(`${note}: ${done.join(' ')}`);
  };

  await source.capture();
  // Round 1: every table created and filled.
  let typesId = 1;
  const typesKeys: string[] = [];
  const typesRows = Array.from({ length: 30 }, () => {
    typesKeys.push(String(typesId));
    return typesRow(rnd, typesId++);
  });
  const ubigKeys: string[] = [];
  const ubigRow = (key: string) => `(${key}, ${text(rnd.pick(STRINGS))}, ${rnd.int(1000)})`;
  for (let i = 0; i < 600; i++) ubigKeys.push(u64(rnd));
  // Keys as dense as a sequence near the top of the range: distinct, but many share one float64.
  for (let i = 0; i < UBIG_CLUSTER; i++) ubigKeys.push(String(2n ** 64n - 1n - BigInt(i)));
  const uniqueUbig = [...new Set(ubigKeys)];
  ubigKeys.splice(0, ubigKeys.length, ...uniqueUbig);
  const freshUbig = () => {
    for (;;) {
      const key = u64(rnd);
      if (!ubigKeys.includes(key)) return key;
    }
  };
  let evoId = 100;
  const compactKeys = [...Array(50).keys()].map(String);
  let compactId = 50;
  await round(
    [
      TYPES,
      `INSERT INTO types VALUES ${typesRows.join(', ')}`,
      // The extremes of every type, and a row of NULLs.
      `INSERT INTO types VALUES (${typesId++}, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
        -99999999.99, '-9999999999999999999999999999.9999999999', '-12345678901234567890123456789012345.123456789012345678901234567890', 3.4e38, 1.7976931348623157e308,
        2155, b'11111', 18446744073709551615, '9999-12-31', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999', '838:59:59.000000', 'éééé', 'é😀', 'é😀', 'é', 'x,y,z',
        '{"big": 18446744073709551615}', X'FFFFFFFF', X'00', X'', ST_GeomFromText('LINESTRING(0 0, 1 1)'))`,
      `INSERT INTO types (id) VALUES (${typesId++})`,
      'CREATE TABLE ubig (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(40), n INT)',
      `INSERT INTO ubig VALUES ${ubigKeys.map(ubigRow).join(', ')}`,
      'CREATE TABLE evo (id INT PRIMARY KEY, a INT, b VARCHAR(20), u INT NOT NULL, UNIQUE KEY uu (u))',
      `INSERT INTO evo VALUES ${Array.from({ length: 20 }, () => `(${evoId}, ${rnd.int(1000) - 500}, ${text(rnd.pick(STRINGS))}, ${evoId++ * 7})`).join(', ')}`,
      'CREATE TABLE trunc (id INT PRIMARY KEY, v VARCHAR(20))',
      `INSERT INTO trunc VALUES ${Array.from({ length: 10 }, (_, i) => `(${i}, 'before')`).join(', ')}`,
      'CREATE TABLE resnap (id INT PRIMARY KEY, v VARCHAR(20))',
      `INSERT INTO resnap VALUES ${Array.from({ length: 10 }, (_, i) => `(${i}, ${text(rnd.pick(STRINGS))})`).join(', ')}`,
      'CREATE TABLE keyless (msg VARCHAR(20), n INT, at DATETIME(6))',
      `INSERT INTO keyless VALUES ${Array.from({ length: 30 }, () => `(${text(rnd.pick(['a', 'b', 'é']))}, ${rnd.int(3)}, '2024-01-01 00:00:00.000001')`).join(', ')}`,
      'CREATE TABLE compact (id INT PRIMARY KEY, v VARCHAR(20), n BIGINT)',
      `INSERT INTO compact VALUES ${Array.from({ length: 50 }, (_, i) => `(${i}, ${text(rnd.pick(STRINGS))}, ${rnd.int(1000)})`).join(', ')}`,
      'CREATE TABLE point (id INT PRIMARY KEY, v VARCHAR(20))',
      `INSERT INTO point VALUES ${Array.from({ length: POINT.perRound }, (_, i) => `(${1000 + i}, 'r0')`).join(', ')}`,
    ],
    'create',
  );

  const ubigRound = () =>
    keyedRound(rnd, 'ubig', ubigKeys, freshUbig, ubigRow, () => (rnd.chance(0.5) ? `v = ${text(rnd.pick(STRINGS))}` : `n = ${rnd.int(1000)}`), 60);
  const typesRound = () =>
    keyedRound(
      rnd,
      'types',
      typesKeys,
      () => String(typesId++),
      (key) => typesRow(rnd, Number(key)),
      () => rnd.pick(['bu = 18446744073709551615', 'f = -1.5', "ts = '2000-01-01 00:00:00.5'", "e = 'é'", 'd65 = NULL', "tx = 'ünï'", "bl = X'0102'"]),
      12,
    );
  const compactRound = () =>
    keyedRound(
      rnd,
      'compact',
      compactKeys,
      () => String(compactId++),
      (key) => `(${key}, 'new', ${rnd.int(1000)})`,
      () => `n = ${rnd.int(1000)}`,
      10,
    );

  // Rounds 2..: changes everywhere, schema evolution on `evo` one step a round.
  const evolution = [
    [
      'ALTER TABLE evo ADD COLUMN c VARCHAR(10)',
      "UPDATE evo SET c = 'é' WHERE id < 105",
      `INSERT INTO evo (id, a, b, u) VALUES (${evoId}, 1, 'x', ${evoId++ * 7})`,
    ],
    ["ALTER TABLE evo ADD COLUMN d VARCHAR(5) NOT NULL DEFAULT 'web'", `INSERT INTO evo (id, a, b, u) VALUES (${evoId}, 2, 'y', ${evoId++ * 7})`],
    ['ALTER TABLE evo DROP COLUMN b', 'UPDATE evo SET a = a + 1 WHERE id % 3 = 0'],
    ['ALTER TABLE evo RENAME COLUMN a TO a2', 'UPDATE evo SET a2 = 7 WHERE id = 101', 'DELETE FROM evo WHERE id = 102'],
    ['ALTER TABLE evo MODIFY a2 BIGINT', 'UPDATE evo SET a2 = 9223372036854775807 WHERE id = 103'],
    ['ALTER TABLE evo DROP PRIMARY KEY, ADD PRIMARY KEY (u)', 'DELETE FROM evo WHERE u = 700', 'UPDATE evo SET u = 1 WHERE u = 707'],
  ];
  for (const [r, steps] of evolution.entries()) {
    const extra: string[] = [];
    if (r === 1) extra.push('TRUNCATE TABLE trunc', "INSERT INTO trunc VALUES (100, 'after'), (101, 'after')");
    if (r === 2) extra.push("INSERT INTO trunc VALUES (102, 'later')");
    if (r < POINT.rounds - 1)
      extra.push(`INSERT INTO point VALUES ${Array.from({ length: POINT.perRound }, (_, i) => `(${1000 + (r + 1) * 100 + i}, 'r${r + 1}')`).join(', ')}`);
    const keyless = [
      "DELETE FROM keyless WHERE msg = 'a' LIMIT 2",
      `INSERT INTO keyless VALUES ('b', 1, '2024-01-01 00:00:00.000001'), ('c', ${r}, NULL)`,
      "UPDATE keyless SET n = n + 10 WHERE msg = 'é' LIMIT 1",
    ];
    const cluster = `UPDATE ubig SET n = n + 1 WHERE id = ${2n ** 64n - 1n - BigInt(r)}`;
    await round(
      [...steps, cluster, ...ubigRound(), ...typesRound(), ...compactRound(), ...keyless, ...extra, `UPDATE resnap SET v = 'r${r}' WHERE id = ${r}`],
      `round ${r + 2}`,
    );
  }

  // The re-snapshot: a column whose fill for existing rows the binlog does not carry.
  await run(['ALTER TABLE resnap ADD COLUMN made VARCHAR(40) DEFAULT (UUID())', "INSERT INTO resnap (id, v) VALUES (50, 'after')"]);
  await source.capture();
  await merge(source);
  const snapshot = await source.snapshot();
  if (!snapshot.complete) throw new Error('the re-snapshot of resnap did not complete');
  await round([...ubigRound(), "UPDATE resnap SET v = 'post' WHERE id = 1"], 'after the re-snapshot');
  return log;
}
