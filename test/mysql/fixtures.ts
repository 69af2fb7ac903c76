/**
 * The recorded MySQL binlogs (../shared/fixtures/mysql-binlogs, or SLUICE_MYSQL_FIXTURES) as the
 * test:mysql suite replays them: which files make one server's history, the tables their rows were
 * written to (created in the test stack's MariaDB for `--schema-from`), and what the README says
 * the files hold. The expected event counts are read from the README itself, so the suite checks
 * the same statements a reader of the README sees.
 *
 * Table definitions come from the producing SQL where the README or a .sql file records it. Where
 * the CREATE is not recorded (binlog_row_metadata=MINIMAL files), the columns are the TABLE_MAP's
 * types with made-up names `c1…cN` (noted per fixture); sluice refuses those files at preflight
 * anyway (binlog_row_metadata must be FULL), and zongji only needs some names to decode them.
 * MariaDB 10.11 has no VECTOR: VARBINARY of the same byte length stands in (a difference of
 * --schema-from, see test/support/mysql-replay/README.md).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Where the fixtures are: SLUICE_MYSQL_FIXTURES, default ../shared/fixtures/mysql-binlogs from the repository root. */
export const fixturesDir = resolve(process.env.SLUICE_MYSQL_FIXTURES ?? join(process.cwd(), '..', 'shared', 'fixtures', 'mysql-binlogs'));

/** Fails (never skips) when the fixtures are missing, naming the fix. */
export function requireFixtures(): void {
  if (!existsSync(join(fixturesDir, 'README.md'))) {
    throw new Error(`MySQL binlog fixtures not found at ${fixturesDir}: set SLUICE_MYSQL_FIXTURES to the folder holding them (its README.md lists the files)`);
  }
}

/** One replayed server history: one file, or consecutive files of one server. */
export interface Fixture {
  /** A short name for test titles. */
  readonly name: string;
  /** File names inside the fixtures folder, oldest first. */
  readonly files: readonly string[];
  /** Statements (MariaDB syntax) creating the tables the rows were written to, database by database. */
  readonly schema: Readonly<Record<string, readonly string[]>>;
  /** Variables the recording server had that the files cannot show (answers.ts `serverFacts`). */
  readonly variables?: Readonly<Record<string, string>>;
  /** The error code sluice must stop with, when it refuses the fixture's features (lib/errors.ts). */
  readonly refusal?: string;
}

const intTable = `CREATE TABLE int_table (col1 tinyint(4) DEFAULT NULL, col2 smallint(6) DEFAULT NULL, col3 mediumint(9) DEFAULT NULL,
  col4 int(11) DEFAULT NULL, col5 bigint(20) DEFAULT NULL, col6 tinyint(1) DEFAULT NULL) DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_bin`;

/** SQL of a fixture's .sql file, minus the statements a schema needs no rows for. */
function sqlFile(name: string): string[] {
  return readFileSync(join(fixturesDir, name), 'utf8')
    .replace(/^--.*$/gm, '')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => /^CREATE TABLE/i.test(s));
}

/** Every fixture, in the README's order (the three mysqlbinlog2parquet files are one history). */
export function fixtures(): Fixture[] {
  // Some fixtures read their schema from the folder's .sql files: without the folder, say which one is missing.
  requireFixtures();
  return [
    {
      name: 'json (8.0.22, PARTIAL_UPDATE_ROWS, MINIMAL)',
      files: ['rust_mysql_common--json.binlog.000001'],
      schema: {
        mysql: [
          "CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, json_col JSON, name VARCHAR(100) AS (JSON_UNQUOTE(JSON_EXTRACT(json_col, '$.name'))), age INT AS (JSON_EXTRACT(json_col, '$.age')))",
        ],
      },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: 'transaction_compression (8.0.32, TRANSACTION_PAYLOAD)',
      files: ['rust_mysql_common--transaction_compression.000001'],
      // The one INT column's name is not recorded.
      schema: { test: ['CREATE TABLE tb1 (c1 INT)'] },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: 'GTID_TAG (9.6.0, tagged GTID)',
      files: ['rust_mysql_common--binlog_transaction_with_GTID_TAG.000001'],
      // Names not recorded; DECIMAL(10,2) from the TABLE_MAP's metadata.
      schema: { test: ['CREATE TABLE orders (c1 INT NOT NULL, c2 INT, c3 DECIMAL(10,2))'] },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: 'previous_GTID_no_tag (8.0.40, header only)',
      files: ['rust_mysql_common--binlog_transaction_previous_GTID_no_tag.000001'],
      schema: {},
      // No TABLE_MAP shows the metadata setting; the file has no rows either way.
      variables: { binlog_row_metadata: 'FULL' },
    },
    {
      name: 'vector (9.0.1, VECTOR)',
      files: ['rust_mysql_common--vector.binlog'],
      schema: {
        dtb: [
          'CREATE TABLE foo (id SERIAL, vector_column VARBINARY(12) NOT NULL)',
          'CREATE TABLE bar (id SERIAL, vector_column VARBINARY(8) NOT NULL, foo TEXT, vector_column2 VARBINARY(16) NOT NULL)',
        ],
      },
    },
    {
      name: 'json-opaque (9.0.1, JSON opaque values)',
      files: ['rust_mysql_common--json-opaque.binlog'],
      schema: { foo: ['CREATE TABLE test (a JSON)'] },
    },
    {
      name: 'enum-string-set (8.0.28, ENUM/SET)',
      files: ['rust_mysql_common--mysql-enum-string-set.000001'],
      schema: { mysql: ["CREATE TABLE t (f1 CHAR(128), f2 VARCHAR(300), f3 ENUM('var1','variant2','foo'), f4 SET('one','two','three','four'), f5 TEXT)"] },
    },
    {
      name: 'invisible-columns (8.0.26, INVISIBLE)',
      files: ['rust_mysql_common--binlog-invisible-columns.000001'],
      schema: { mysql: ['CREATE TABLE t1 (f1 INT UNSIGNED INVISIBLE, f2 INT UNSIGNED INVISIBLE, f3 INT, f4 TEXT, f5 BLOB, f6 BIGINT UNSIGNED INVISIBLE)'] },
    },
    {
      name: 'mysql_type_bit (8.0.26, BIT)',
      files: ['rust_mysql_common--mysql_type_bit.000001'],
      schema: { mysql: ['CREATE TABLE foo (a BIT(3), b TEXT, c BIT(8))'] },
    },
    {
      name: 'minimal_row_metadata (8.0.40, binlog_row_image=MINIMAL)',
      files: ['rust_mysql_common--minimal_row_metadata.000001'],
      schema: { noria: ['CREATE TABLE t1 (col_1 int NOT NULL, col_2 blob, col_3 char(2) DEFAULT NULL, col_4 int, col_5 int unsigned, PRIMARY KEY (col_1))'] },
      refusal: 'PREFLIGHT_BINLOG_ROW_IMAGE',
    },
    {
      name: 'time_issue (8.0.40, negative TIME)',
      files: ['rust_mysql_common--time_issue.000001'],
      schema: { noria: ['CREATE TABLE t (c TIME)'] },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: 'connector-java compressed (8.0.28, TRANSACTION_PAYLOAD update)',
      files: ['mysql-binlog-connector-java--mysql-bin.compressed'],
      // Names not recorded (the repo test calls the 5th column the genre); lengths from the TABLE_MAP.
      schema: {
        demo: [
          'CREATE TABLE movies (c1 INT, c2 VARCHAR(256), c3 INT, c4 VARCHAR(256), c5 VARCHAR(1024), c6 VARCHAR(512), c7 VARCHAR(256), c8 VARCHAR(256), c9 VARCHAR(256), c10 VARCHAR(256), c11 VARCHAR(256))',
        ],
      },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: 'connector-rust 000057 (8.0.31, two TRANSACTION_PAYLOADs)',
      files: ['mysql-binlog-connector-rust--mysql-bin.000057'],
      // Names not recorded except those the ROWS_QUERY texts use; types from the TABLE_MAP.
      schema: {
        a: [
          'CREATE TABLE b (id INT)',
          // The CREATE is not in the file: 'large' is ENUM index 4 and 'c'/'d' SET members 3/4 in its rows
          // (their ROWS_QUERY texts name the labels); the other labels are placeholders.
          `CREATE TABLE test_table_3 (product_id INT, c2 VARCHAR(255), c3 DATE, c4 INT, c5 TEXT, c6 TIMESTAMP NULL, enum_field ENUM('e1','e2','e3','large','e5'),
            set_field SET('a','b','c','d'), c9 CHAR(3), c10 JSON, product_item_2 VARCHAR(255), c12 DATE, c13 DATE, c14 INT, c15 TEXT, c16 TIMESTAMP NULL, c17 DATE,
            c18 INT, c19 TEXT, c20 TIMESTAMP NULL) DEFAULT CHARSET=utf8mb3`,
        ],
      },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: '02_query (8.2.0, DDL only)',
      files: ['mysql-cdc-rs--02_query.binlog.000001'],
      schema: { test: [] },
      variables: { binlog_row_metadata: 'FULL' },
    },
    {
      name: '02_query_bigger (8.0.31, DECIMAL/DATE, MINIMAL)',
      files: ['mysql-cdc-rs--02_query_bigger.binlog.000733'],
      schema: { test: sqlFile('mysql-cdc-rs--02_query_bigger.sql').slice(0, 2) },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: '19_30 Table_map/Write_rows (8.2.0, integers, MINIMAL)',
      files: ['mysql-cdc-rs--19_30_Table_map_event_Write_rows_log_event.binlog.000018'],
      schema: { test: [intTable] },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: '31_update_rows_v2 (8.2.0, MINIMAL)',
      files: ['mysql-cdc-rs--31_update_rows_v2.binlog.000001'],
      schema: { test: [intTable] },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: '32_delete_rows_v2 (8.2.0, MINIMAL)',
      files: ['mysql-cdc-rs--32_delete_rows_v2.binlog.000001'],
      schema: { test: [intTable] },
      refusal: 'PREFLIGHT_BINLOG_ROW_METADATA',
    },
    {
      name: 'mysqlbinlog2parquet 01-03 (8.0.46, three consecutive files)',
      files: ['mysqlbinlog2parquet--01-basic-crud.binlog', 'mysqlbinlog2parquet--02-multi-statement-txn.binlog', 'mysqlbinlog2parquet--03-mixed-types.binlog'],
      schema: {
        binlogtest: [
          ...sqlFile('mysqlbinlog2parquet--01-basic-crud.sql'),
          ...sqlFile('mysqlbinlog2parquet--02-multi-statement-txn.sql'),
          ...sqlFile('mysqlbinlog2parquet--03-mixed-types.sql'),
        ],
      },
    },
  ];
}

/** A fixture file's absolute path. */
export function fixturePath(name: string): string {
  return join(fixturesDir, name);
}

/** What the README lists for a file: top-level event counts, and the counts inside its TRANSACTION_PAYLOADs. */
export interface ReadmeEntry {
  version: string;
  counts: Record<string, number>;
  insidePayloads: Record<string, number>;
}

/** Parses the README's file tables (the `event-type counts` column: `TYPE n, …; inside payloads: TYPE n, …`). */
export function readmeEntries(): Map<string, ReadmeEntry> {
  const text = readFileSync(join(fixturesDir, 'README.md'), 'utf8');
  const entries = new Map<string, ReadmeEntry>();
  const counts = (part: string) => Object.fromEntries([...part.matchAll(/([A-Z_0-9]+) (\d+)/g)].map((m) => [m[1] as string, Number(m[2])]));
  for (const line of text.split('\n')) {
    const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
    const file = /^`([^`]+)` \(\d+ B\)$/.exec(cells[1] ?? '')?.[1];
    if (!file || cells.length < 11) continue;
    const [top, inside] = (cells[8] as string).split(/;\s*inside payloads:/);
    entries.set(file, { version: cells[6] as string, counts: counts(top as string), insidePayloads: inside ? counts(inside) : {} });
  }
  return entries;
}
