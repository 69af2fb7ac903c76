import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decimalBytes, narrowDecimals } from '../../lib/iceberg/files/decimal-width.ts';
import { Workspace } from '../../lib/iceberg/files/parquet.ts';
import type { IcebergField, IcebergSchema } from '../../lib/iceberg/files/schema.ts';
import { decodeStruct, encodeStruct } from '../../lib/iceberg/files/thrift.ts';
import { duckTypeOf } from '../../lib/iceberg/files/types.ts';
import { publish, stageChanges, type TableSpec } from '../../lib/iceberg/table/table.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';
import { readWithDuckDb, readWithIcebird, storeFetch } from '../support/iceberg.ts';

/*
 * The Parquet files sluice writes, read back at the footer: the physical and logical type of every
 * Iceberg type as the spec's Parquet appendix gives it (decimal at the minimum fixed width, timestamps
 * with the matching isAdjustedToUTC), a field id on every column, and the values exactly.
 */

const dir = mkdtempSync(join(tmpdir(), 'iceberg-parquet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const schemaOf = (types: readonly string[]): IcebergSchema => ({
  type: 'struct',
  'schema-id': 0,
  fields: types.map((type, i): IcebergField => ({ id: i + 1, name: `f${i + 1}`, required: false, type })),
});

interface FooterColumn {
  name: string;
  type: string;
  type_length: string | null;
  logical_type: string | null;
  field_id: bigint | null;
}

async function footer(ws: Workspace, path: string): Promise<FooterColumn[]> {
  return (await ws.rows(
    `SELECT name, type, type_length, logical_type, field_id FROM parquet_schema('${path}') WHERE type IS NOT NULL ORDER BY column_id`,
  )) as unknown as FooterColumn[];
}

/** The spec's rule, computed independently: n bytes hold floor(log10(2^(8n-1) - 1)) digits. */
const digitsIn = (bytes: number) => ((1n << BigInt(8 * bytes - 1)) - 1n).toString().length - 1;

describe('decimal width', () => {
  it('is the fewest bytes whose two’s complement holds every value of the precision', () => {
    for (let p = 1; p <= 38; p++) {
      const n = decimalBytes(p);
      expect(digitsIn(n), `decimal(${p})`).toBeGreaterThanOrEqual(p);
      expect(n === 1 || digitsIn(n - 1) < p, `decimal(${p}) fits ${n - 1} bytes`).toBe(true);
    }
    expect([19, 20, 28, 38].map(decimalBytes)).toEqual([9, 9, 12, 16]);
  });
});

describe('Parquet files', () => {
  it('store every Iceberg type as the spec maps it, with a field id on every column', async () => {
    const types = [
      'int',
      'long',
      'float',
      'double',
      'date',
      'timestamp',
      'timestamptz',
      'string',
      'binary',
      'decimal(9,2)',
      'decimal(18,4)',
      'decimal(19,2)',
      'decimal(20,0)',
      'decimal(28,6)',
      'decimal(38,10)',
    ];
    const schema = schemaOf(types);
    await using ws = await Workspace.open(dir);
    await ws.run(`CREATE TABLE t AS SELECT ${types.map((type, i) => `NULL::${duckTypeOf(type)} AS c${i + 1}`).join(', ')}`);
    const file = await ws.writeParquet('SELECT * FROM t', 'types.parquet', schema);
    const columns = await footer(ws, file.path);
    const decimal = (p: number, s: number) => `DecimalType(scale=${s}, precision=${p})`;
    const micros = (utc: 0 | 1) => `TimestampType(isAdjustedToUTC=${utc}, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))`;
    expect(columns.map((c) => [c.field_id, c.type, c.type_length, c.logical_type])).toEqual([
      [1n, 'INT32', null, null],
      [2n, 'INT64', null, null],
      [3n, 'FLOAT', null, null],
      [4n, 'DOUBLE', null, null],
      [5n, 'INT32', null, null], // DATE is the converted type (DuckDB sets no logical type for it)
      [6n, 'INT64', null, micros(0)],
      [7n, 'INT64', null, micros(1)],
      [8n, 'BYTE_ARRAY', null, null],
      [9n, 'BYTE_ARRAY', null, null],
      [10n, 'INT32', null, decimal(9, 2)],
      [11n, 'INT64', null, decimal(18, 4)],
      [12n, 'FIXED_LEN_BYTE_ARRAY', '9', decimal(19, 2)],
      [13n, 'FIXED_LEN_BYTE_ARRAY', '9', decimal(20, 0)],
      [14n, 'FIXED_LEN_BYTE_ARRAY', '12', decimal(28, 6)],
      [15n, 'FIXED_LEN_BYTE_ARRAY', '16', decimal(38, 10)],
    ]);
    const converted = await ws.rows(`SELECT converted_type AS t FROM parquet_schema('${file.path}') WHERE type IS NOT NULL ORDER BY column_id`);
    expect(converted.slice(4, 8).map((r) => r.t)).toEqual(['DATE', 'TIMESTAMP_MICROS', 'TIMESTAMP_MICROS', 'UTF8']);
    const kv = await ws.rows(`SELECT decode(value) AS v FROM parquet_kv_metadata('${file.path}') WHERE decode(key) = 'iceberg.schema'`);
    expect(JSON.parse(String(kv[0]?.v))).toEqual(schema);
  });

  it('read back exactly with decimals cut to their width, extremes, negatives and NULLs included', async () => {
    const schema = schemaOf(['long', 'decimal(20,0)', 'decimal(19,4)', 'decimal(28,5)', 'decimal(38,6)', 'string']);
    await using ws = await Workspace.open(dir);
    // Over two DuckDB row groups (122,880 rows each), so offsets past a rewritten chunk move too.
    await ws.run(
      `CREATE TABLE t AS SELECT i::BIGINT AS c1, (i * 73856093)::DECIMAL(20,0) AS c2, CASE WHEN i % 7 = 0 THEN NULL ELSE (i - 100000) * 1.0001 END::DECIMAL(19,4) AS c3, ` +
        `(-i * 2654435761.5)::DECIMAL(28,5) AS c4, (i * -1.5)::DECIMAL(38,6) AS c5, 'r' || i AS c6 FROM range(130000) r(i)`,
    );
    await ws.run(
      `INSERT INTO t VALUES (-1, 18446744073709551615, 999999999999999.9999, 99999999999999999999999.99999, 99999999999999999999999999999999.999999, NULL), ` +
        `(-2, 0, -999999999999999.9999, -99999999999999999999999.99999, -99999999999999999999999999999999.999999, 'min'), (-3, NULL, NULL, NULL, NULL, NULL)`,
    );
    const file = await ws.writeParquet('SELECT * FROM t', 'values.parquet', schema);
    expect((await footer(ws, file.path)).map((c) => c.type_length)).toEqual([null, '9', '9', '12', '16', null]);
    expect(file.records).toBe(130003);

    const differences = await ws.count(
      `(SELECT * FROM t EXCEPT ALL SELECT * FROM read_parquet('${file.path}')) UNION ALL (SELECT * FROM read_parquet('${file.path}') EXCEPT ALL SELECT * FROM t)`,
    );
    expect(differences).toBe(0);
    const extremes = await ws.rows(
      `SELECT f1, f2::VARCHAR AS f2, f3::VARCHAR AS f3, f4::VARCHAR AS f4, f5::VARCHAR AS f5 FROM read_parquet('${file.path}') WHERE f1 < 0 ORDER BY f1 DESC`,
    );
    expect(extremes).toEqual([
      {
        f1: -1n,
        f2: '18446744073709551615',
        f3: '999999999999999.9999',
        f4: '99999999999999999999999.99999',
        f5: '99999999999999999999999999999999.999999',
      },
      { f1: -2n, f2: '0', f3: '-999999999999999.9999', f4: '-99999999999999999999999.99999', f5: '-99999999999999999999999999999999.999999' },
      { f1: -3n, f2: null, f3: null, f4: null, f5: null },
    ]);
    // The column statistics were cut too: DuckDB decodes them from the narrowed bytes.
    const stats = await ws.rows(
      `SELECT path_in_schema AS c, min(stats_min::DECIMAL(20,0))::VARCHAR AS lo, max(stats_max::DECIMAL(20,0))::VARCHAR AS hi FROM parquet_metadata('${file.path}') WHERE path_in_schema = 'f2' GROUP BY ALL`,
    );
    expect(stats).toEqual([{ c: 'f2', lo: '0', hi: '18446744073709551615' }]);
  });

  it('leave a file without a decimal of 19 to 35 digits exactly as DuckDB wrote it', async () => {
    const schema = schemaOf(['decimal(18,2)', 'decimal(38,0)', 'string']);
    await using ws = await Workspace.open(dir);
    await ws.run(`CREATE TABLE t AS SELECT (i / 3)::DECIMAL(18,2) AS c1, (i * 1000000007)::DECIMAL(38,0) AS c2, 'x' || i AS c3 FROM range(1000) r(i)`);
    const file = await ws.writeParquet('SELECT * FROM t', 'plain.parquet', schema);
    const copy = join(ws.dir, 'copy.parquet');
    copyFileSync(file.path, copy);
    expect(narrowDecimals(copy)).toBe(0);
    expect(readFileSync(copy).equals(readFileSync(file.path))).toBe(true);
    const codecs = await ws.rows(`SELECT DISTINCT compression AS c FROM parquet_metadata('${file.path}')`);
    expect(codecs).toEqual([{ c: 'ZSTD' }]);
  });

  it('declare the narrow width in a file of no rows, and in one whose wide column is all NULL', async () => {
    const schema = schemaOf(['decimal(20,0)', 'decimal(25,3)']);
    await using ws = await Workspace.open(dir);
    await ws.run('CREATE TABLE t AS SELECT NULL::DECIMAL(20,0) AS c1, 1.5::DECIMAL(25,3) AS c2 FROM range(5)');
    const empty = await ws.writeParquet('SELECT * FROM t WHERE false', 'empty.parquet', schema);
    const nulls = await ws.writeParquet('SELECT * FROM t', 'nulls.parquet', schema);
    expect((await footer(ws, empty.path)).map((c) => c.type_length)).toEqual(['9', '11']);
    expect((await footer(ws, nulls.path)).map((c) => c.type_length)).toEqual(['9', '11']);
    expect(await ws.rows(`SELECT DISTINCT f1, f2::VARCHAR AS f2 FROM read_parquet('${nulls.path}')`)).toEqual([{ f1: null, f2: '1.500' }]);
  });

  it('keep DuckDB’s footer byte for byte through the Thrift codec, and change only the wide decimals', async () => {
    await using ws = await Workspace.open(dir);
    await ws.run(
      `CREATE TABLE t AS SELECT i::DECIMAL(20,0) AS c1, 'v' || (i % 10) AS c2, TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND AS c3 FROM range(200000) r(i)`,
    );
    const raw = join(ws.dir, 'raw.parquet');
    await ws.run(`COPY (SELECT c1 AS f1, c2 AS f2, c3 AS f3 FROM t) TO '${raw}' (FORMAT parquet, COMPRESSION zstd, FIELD_IDS {f1: 1, f2: 2, f3: 3})`);
    const bytes = readFileSync(raw);
    const length = bytes.readUInt32LE(bytes.length - 8);
    const footerBytes = bytes.subarray(bytes.length - 8 - length, bytes.length - 8);
    expect(Buffer.from(encodeStruct(decodeStruct(footerBytes).struct)).equals(footerBytes)).toBe(true);

    const chunks = (path: string) =>
      ws.rows(
        `SELECT path_in_schema AS c, compression, total_compressed_size AS size, total_uncompressed_size AS raw, num_values AS n, bloom_filter_length AS bloom FROM parquet_metadata('${path}') ORDER BY row_group_id, column_id`,
      );
    const before = await chunks(raw);
    expect(narrowDecimals(raw)).toBe(2); // two row groups
    const after = await chunks(raw);
    expect(after.map((c) => c.compression)).toEqual(before.map((c) => (c.c === 'f1' ? 'GZIP' : 'ZSTD')));
    expect(after.filter((c) => c.c !== 'f1')).toEqual(before.filter((c) => c.c !== 'f1'));
    // Uncompressed sizes still count page headers and levels: only the 7 bytes cut per value went.
    after.forEach((c, i) => {
      if (c.c !== 'f1') return;
      const cut = Number(before[i]?.raw) - Number(c.raw) - 7 * Number(c.n);
      expect(cut, `row group ${i / 3}`).toBeGreaterThanOrEqual(0);
      expect(cut, `row group ${i / 3}`).toBeLessThan(8);
    });
    // The bloom filters DuckDB wrote after the row groups moved with them and still answer.
    expect(await ws.count(`SELECT * FROM read_parquet('${raw}') WHERE f2 = 'v3'`)).toBe(20000);
    expect(await ws.count(`SELECT * FROM read_parquet('${raw}') WHERE f1 = 199999 AND f3 = TIMESTAMP '2024-01-01' + INTERVAL 199999 SECOND`)).toBe(1);
  });
});

describe('a table keyed by BIGINT UNSIGNED', () => {
  it('writes its data and equality-delete files with a 9-byte key that DuckDB and icebird (hyparquet, GZIP pages) read back', async () => {
    const store = memoryObjectStore('bucket');
    const spec: TableSpec = {
      location: 'p/iceberg/shop/ids',
      columns: [
        { name: 'id', kind: 'int', sqlType: 'bigint unsigned' },
        { name: 'amount', kind: 'decimal', sqlType: 'decimal(30,4)' },
      ],
      key: ['id'],
    };
    const row = (id: string, amount: string | null) => `{"id":${id},"amount":${amount === null ? 'null' : `"${amount}"`}}`;
    const max = '18446744073709551615';
    const v1 = await stageChanges(
      { store },
      undefined,
      spec,
      { upserts: [row('1', '-12345678901234567890123456.7890'), row('2', null), row(max, '0.0001')], deletes: [] },
      { tag: 'm1', timestampMs: 1 },
    );
    const v2 = await stageChanges(
      { store },
      v1.version,
      spec,
      { upserts: [row(max, '-0.0001')], deletes: ['{"id":1}'] },
      { tag: 'm2', timestampMs: 2, deletes: 'equality' },
    );
    await publish(store, v2.version);
    const rows = await readWithDuckDb(store, v2.version.metadata, mkdtempSync(join(dir, 'r-')));
    expect(rows.sort((a, b) => String(a.id).length - String(b.id).length)).toEqual([
      { id: '2', amount: null },
      { id: max, amount: '-0.0001' },
    ]);
    const icebird = await readWithIcebird('s3://bucket/p/iceberg/shop/ids', storeFetch(store));
    // icebird decodes decimals as doubles (its limit): compared at the column's scale.
    const decoded = icebird.map((r) => [Number(r.id), r.amount === null ? null : Number(r.amount).toFixed(4)]);
    expect(decoded.sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [2, null],
      [Number(max), '-0.0001'],
    ]);

    await using ws = await Workspace.open(dir);
    const files = [...store.objects.keys()].filter((key) => key.endsWith('.parquet')).sort();
    expect(files.map((key) => key.split('/').pop())).toEqual(['m1-data.parquet', 'm2-data.parquet', 'm2-eq-deletes.parquet']);
    for (const key of files) {
      const path = join(ws.dir, key.split('/').pop() as string);
      await store.getFile(key, path);
      const widths = (await footer(ws, path)).map((c) => [c.field_id, c.type_length]);
      expect(widths, key).toEqual(
        key.endsWith('eq-deletes.parquet')
          ? [[1n, '9']]
          : [
              [1n, '9'],
              [2n, '13'],
            ],
      );
    }
  });
});
