import { describe, expect, it } from 'vitest';
import { Catalog } from '../../lib/schema/catalog.ts';
import { CharsetTable } from '../../lib/schema/charsets.ts';
import { informationSchemaType, normalizeType, tableMapType } from '../../lib/schema/column-type.ts';
import { evolve, type SchemaVersion, structureFromTableMap, structureOf } from '../../lib/schema/version.ts';
import { queryStatusVars, sqlModeFlags } from '../../lib/source/mysql/binlog-reader.ts';
import { classifyDdl } from '../../lib/source/mysql/ddl/classify.ts';
import { mariadbComments, mysqlComments } from '../support/comment-rules.ts';

const ctx = { defaultDb: 'd', comments: mariadbComments(101119) };
const env = { explicitDefaultsForTimestamp: true, databaseCollation: 'utf8mb4_unicode_ci' };

/** Runs statements through classify + evolve for table d.t, returning every step's result. */
async function run(...statements: string[]) {
  const versions = new Map<string, SchemaVersion | undefined>();
  const steps = [];
  for (const statement of statements) {
    const c = await classifyDdl(statement, ctx);
    if (c.kind !== 'tables') throw new Error(`${statement}: ${c.kind}`);
    for (const { table, change } of c.effects) {
      const source =
        change.kind === 'rename-in' ? versions.get(change.from.table) : change.kind === 'create-like' ? versions.get(change.source.table) : undefined;
      const result = evolve(versions.get(table.table), change, { ...env, db: table.db, table: table.table, source });
      versions.set(table.table, result.next);
      steps.push({ table: table.table, ...result });
    }
  }
  return { steps, versions, last: steps.at(-1) };
}

describe('sqlModeFlags', () => {
  const bytes = (value: bigint, n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(Number((value >> BigInt(8 * i)) & 0xffn))).join('');
  /** Q_FLAGS2_CODE and its 4 bytes, then Q_SQL_MODE_CODE and the mode's 8 bytes, low first: what servers write, as zongji hands it over. */
  const vars = (mode: bigint, flags2 = 0n) => `\x00${bytes(flags2, 4)}\x01${bytes(mode, 8)}\x06\x03std`;

  // The modes' numbers as mariadb-binlog prints them (SET @@session.sql_mode=N) for events written under each.
  it('reads the flags after Q_FLAGS2: the default sql_mode, an empty one, each flag alone', () => {
    // MariaDB 10.11's default: STRICT_TRANS_TABLES, ERROR_FOR_DIVISION_BY_ZERO, NO_AUTO_CREATE_USER, NO_ENGINE_SUBSTITUTION.
    expect(sqlModeFlags(vars(1411383296n))).toEqual({ ansiQuotes: false, realAsFloat: false, foreignTypes: false, noBackslashEscapes: false, strict: true });
    expect(sqlModeFlags(vars(0n, 0x4000n))).toEqual({ ansiQuotes: false, realAsFloat: false, foreignTypes: false, noBackslashEscapes: false, strict: false });
    expect(sqlModeFlags(vars(4n))).toEqual({ ansiQuotes: true, realAsFloat: false, foreignTypes: false, noBackslashEscapes: false, strict: false });
    expect(sqlModeFlags(vars(1048576n))).toEqual({ ansiQuotes: false, realAsFloat: false, foreignTypes: false, noBackslashEscapes: true, strict: false });
    expect(sqlModeFlags(vars(1n)).realAsFloat).toBe(true); // REAL_AS_FLOAT
    // sql_mode=ORACLE on MariaDB 10.11 (its byte 1, 0xe2, is lost to UTF-8 decoding: counted as on); ORACLE alone.
    expect(sqlModeFlags(vars(8858427918n))).toMatchObject({ ansiQuotes: true, foreignTypes: true });
    expect(sqlModeFlags(vars(0x200n)).foreignTypes).toBe(true);
    expect(sqlModeFlags(vars(0x1000n)).foreignTypes).toBe(true); // MAXDB
    expect(sqlModeFlags(vars(2097152n)).strict).toBe(true); // STRICT_TRANS_TABLES
    expect(sqlModeFlags(vars(4194304n)).strict).toBe(true); // STRICT_ALL_TABLES
    // Without Q_FLAGS2 the mode comes first.
    expect(sqlModeFlags(`\x01${bytes(4n, 8)}`)).toEqual({
      ansiQuotes: true,
      realAsFloat: false,
      foreignTypes: false,
      noBackslashEscapes: false,
      strict: false,
    });
  });

  it('leaves flags unknown where a byte above 0x7f (lost to UTF-8 decoding) comes before or in them', () => {
    // NO_DIR_IN_CREATE (0x80) in byte 0: the later bytes may have moved.
    expect(sqlModeFlags(vars(0x80n | 2097152n))).toEqual({ foreignTypes: true });
    // NO_ZERO_IN_DATE (0x800000) sets byte 2's high bit.
    expect(sqlModeFlags(vars(4n | 0x800000n))).toEqual({ ansiQuotes: true, realAsFloat: false, foreignTypes: false });
    expect(sqlModeFlags(undefined)).toEqual({});
  });

  // MySQL 8.0's default: ONLY_FULL_GROUP_BY, STRICT_TRANS_TABLES, NO_ZERO_IN_DATE, NO_ZERO_DATE, ERROR_FOR_DIVISION_BY_ZERO, NO_ENGINE_SUBSTITUTION.
  const MYSQL_DEFAULT = 0x20n | 0x200000n | 0x800000n | 0x1000000n | 0x2000000n | 0x40000000n;
  /** The same variables as the server sends them. */
  const raw = (mode: bigint) => {
    const out = Buffer.alloc(14);
    out.writeUInt32LE(0, 1);
    out[5] = 1;
    out.writeBigUInt64LE(mode, 6);
    return Buffer.concat([out, Buffer.from('\x06\x03std', 'latin1')]);
  };

  it('reads every flag from the bytes the server sent: MySQL’s default mode is strict though NO_ZERO_IN_DATE shares its byte', () => {
    expect(raw(MYSQL_DEFAULT).subarray(6, 10)).toEqual(Buffer.from([0x20, 0x00, 0xa0, 0x43]));
    expect(sqlModeFlags(raw(MYSQL_DEFAULT))).toEqual({ ansiQuotes: false, realAsFloat: false, foreignTypes: false, noBackslashEscapes: false, strict: true });
    // zongji's UTF-8 copy of the same bytes cannot tell.
    expect(sqlModeFlags(raw(MYSQL_DEFAULT).toString('utf8')).strict).toBeUndefined();
    expect(sqlModeFlags(raw(0x80n | 0x800000n | 4n))).toMatchObject({ ansiQuotes: true, strict: false });
  });

  it('finds a Query event’s status variables and its log_pos in the packet the dump connection receives', () => {
    const vars = raw(MYSQL_DEFAULT);
    const event = Buffer.alloc(1 + 19 + 13);
    event[5] = 2; // QUERY_EVENT
    event.writeUInt32LE(5900, 14); // log_pos
    event[28] = 3; // db length
    event.writeUInt16LE(vars.length, 31);
    const body = Buffer.concat([vars, Buffer.from('app\0ALTER TABLE t ADD PRIMARY KEY (id)')]);
    const packet = (type: number) => {
      const bytes = Buffer.concat([Buffer.from([9, 9, 9]), Buffer.alloc(4), event, body]);
      bytes[3 + 4 + 5] = type;
      return { buffer: bytes, start: 3, end: bytes.length };
    };
    expect(queryStatusVars(packet(2))).toEqual({ nextPosition: 5900, bytes: vars });
    expect(sqlModeFlags(queryStatusVars(packet(2))?.bytes).strict).toBe(true);
    expect(queryStatusVars(packet(165))?.nextPosition).toBe(5900); // MariaDB QUERY_COMPRESSED_EVENT
    expect(queryStatusVars(packet(16))).toBeUndefined(); // XID_EVENT
    expect(queryStatusVars({ buffer: Buffer.from([0, 0, 0, 0, 0xff, 1, 2]), start: 0, end: 7 })).toBeUndefined();
  });
});

describe('character sets from the server', () => {
  /** What MySQL 8.4's information_schema.CHARACTER_SETS says of three charsets. */
  const mysql84 = CharsetTable.fromServer([
    { charset: 'utf8mb4', defaultCollation: 'utf8mb4_0900_ai_ci', maxlen: 4 },
    { charset: 'latin1', defaultCollation: 'latin1_swedish_ci', maxlen: 1 },
    { charset: 'gb18030', defaultCollation: 'gb18030_chinese_ci', maxlen: 4 },
  ]);

  it("gives a table's and its columns' charset the server's default collation, not MariaDB 10.11's", async () => {
    const created = await classifyDdl('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5), w VARCHAR(5) CHARACTER SET latin1) DEFAULT CHARSET=utf8mb4', ctx);
    if (created.kind !== 'tables') throw new Error(created.kind);
    const change = (created.effects[0] as (typeof created.effects)[0]).change;
    const on = (charsets?: CharsetTable) => evolve(undefined, change, { ...env, db: 'd', table: 't', charsets }).next;
    expect(on(mysql84)?.columns.map((c) => c.collation ?? null)).toEqual([null, 'utf8mb4_0900_ai_ci', 'latin1_swedish_ci']);
    expect(on(mysql84)?.collation).toBe('utf8mb4_0900_ai_ci');
    expect(on()?.columns[1]?.collation).toBe('utf8mb4_general_ci');
  });

  it("takes MariaDB 11.2+'s character_set_collations over CHARACTER_SETS, short names included", () => {
    const maria = CharsetTable.fromServer(
      [
        { charset: 'utf8mb4', defaultCollation: 'utf8mb4_general_ci', maxlen: 4 },
        { charset: 'ucs2', defaultCollation: 'ucs2_general_ci', maxlen: 2 },
      ],
      'utf8mb4=uca1400_ai_ci,ucs2=ucs2_uca1400_ai_ci',
    );
    expect(maria.defaultCollation('utf8mb4')).toBe('utf8mb4_uca1400_ai_ci');
    expect(maria.defaultCollation('ucs2')).toBe('ucs2_uca1400_ai_ci');
    // What the server did not list keeps the fallback.
    expect(maria.defaultCollation('latin1')).toBe('latin1_swedish_ci');
    expect(maria.collationInfo('utf8mb4_uca1400_ai_ci')).toEqual({ collation: 'utf8mb4_uca1400_ai_ci', charset: 'utf8mb4' });
  });

  it('are kept in the catalog, and recorded again only when the server changed them', () => {
    const catalog = Catalog.from(undefined);
    expect(catalog.useCharsets(mysql84)).toBe(true);
    const { document } = catalog.save('s', { file: 'b.000001', pos: 4 });
    const reloaded = Catalog.from(document);
    expect(reloaded.charsets.defaultCollation('utf8mb4')).toBe('utf8mb4_0900_ai_ci');
    expect(reloaded.useCharsets(CharsetTable.fromServer(document.charsets ?? []))).toBe(false);
    expect(reloaded.dirty).toBe(false);
    expect(Catalog.from(undefined).charsets.defaultCollation('utf8mb4')).toBe('utf8mb4_general_ci');
  });
});

describe('invisible columns in the schema history', () => {
  it("keeps MySQL's generated invisible primary key and INVISIBLE columns as the columns they are in the row images", async () => {
    // What MySQL 8.0.30+ shows of a table it gave a GIPK (SHOW CREATE TABLE with show_gipk_in_create_table_and_information_schema).
    const mysql = { defaultDb: 'd', comments: mysqlComments(80403) };
    const created = await classifyDdl(
      'CREATE TABLE t (`my_row_id` bigint unsigned NOT NULL AUTO_INCREMENT /*!80023 INVISIBLE */, c1 VARCHAR(50), c2 INT /*!80023 INVISIBLE */, PRIMARY KEY (`my_row_id`))',
      mysql,
    );
    if (created.kind !== 'tables') throw new Error(created.kind);
    const next = evolve(undefined, (created.effects[0] as (typeof created.effects)[0]).change, { ...env, db: 'd', table: 't' }).next;
    expect(next?.columns.map((c) => [c.name, c.type, c.nullable])).toEqual([
      ['my_row_id', 'bigint unsigned', false],
      ['c1', 'varchar(50)', true],
      ['c2', 'int', true],
    ]);
    expect(next?.key).toEqual(['my_row_id']);
  });
});

describe('evolve', () => {
  it('keeps column ids through renames and never reuses a dropped id', async () => {
    const { last } = await run(
      'CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)',
      'ALTER TABLE t DROP COLUMN b',
      'ALTER TABLE t CHANGE a a2 INT, ADD COLUMN c INT',
    );
    expect(last?.path).toBe('derive');
    expect(last?.next?.columns.map((c) => [c.id, c.name])).toEqual([
      [1, 'id'],
      [2, 'a2'],
      [4, 'c'],
    ]);
    expect(last?.changes).toEqual([
      { op: 'rename', id: 2, from: 'a' },
      { op: 'add', id: 4, fill: 'null' },
    ]);
    expect(last?.next?.version).toBe(3);
  });

  it('a column made NOT NULL keeps its values under a strict sql_mode (there the ALTER fails on a NULL), else the table is copied again', async () => {
    const evolveUnder = async (strictSqlMode: boolean | undefined, statement: string) => {
      const created = await classifyDdl('CREATE TABLE t (id INT, v INT)', ctx);
      const altered = await classifyDdl(statement, ctx);
      if (created.kind !== 'tables' || altered.kind !== 'tables') throw new Error('not a table statement');
      const context = { ...env, db: 'd', table: 't', strictSqlMode };
      const first = evolve(undefined, (created.effects[0] as (typeof created.effects)[0]).change, context).next;
      return evolve(first, (altered.effects[0] as (typeof altered.effects)[0]).change, context);
    };
    for (const statement of ['ALTER TABLE t ADD PRIMARY KEY (id)', 'ALTER TABLE t MODIFY id INT NOT NULL']) {
      const strict = await evolveUnder(true, statement);
      expect(strict.path, statement).toBe('derive');
      expect(strict.next?.columns.map((c) => [c.name, c.nullable])).toEqual([
        ['id', false],
        ['v', true],
      ]);
      for (const mode of [false, undefined]) expect((await evolveUnder(mode, statement)).path, `${statement} strict=${mode}`).toBe('resnapshot');
    }
    expect((await evolveUnder(true, 'ALTER TABLE t ADD PRIMARY KEY (id)')).next?.key).toEqual(['id']);
    // ALTER IGNORE turns the NULLs into defaults under a strict sql_mode too: copied again.
    for (const statement of ['ALTER IGNORE TABLE t ADD PRIMARY KEY (id)', 'ALTER IGNORE TABLE t MODIFY id INT NOT NULL'])
      expect((await evolveUnder(true, statement)).path, statement).toBe('resnapshot');
  });

  it('continues versions and ids across DROP and CREATE of the same name', async () => {
    const { steps } = await run('CREATE TABLE t (a INT, b INT)', 'DROP TABLE t', 'CREATE TABLE t (x INT)');
    expect(steps.map((s) => s.path)).toEqual(['create', 'reset', 'create']);
    expect(steps[1]?.next?.dropped).toBe(true);
    expect(steps[2]?.next).toMatchObject({ version: 2, lastColumnId: 3, columns: [{ id: 3, name: 'x' }] });
  });

  it('follows the identity MariaDB promotes: first unique NOT NULL full-column key', async () => {
    const { steps } = await run(
      'CREATE TABLE t (a INT NOT NULL, b INT, c VARCHAR(10) NOT NULL, UNIQUE KEY ub (b), UNIQUE KEY uc (c(3)), UNIQUE KEY ua (a))',
      'ALTER TABLE t DROP INDEX ua',
      'ALTER TABLE t ADD PRIMARY KEY (c)',
    );
    expect(steps.map((s) => s.next?.key)).toEqual([['a'], null, ['c']]);
    expect(steps[1]?.changes).toEqual([{ op: 'key', from: ['a'] }]);
    expect(steps.map((s) => s.path)).toEqual(['create', 'derive', 'derive']);
  });

  it('derives widenings and re-snapshots value-changing MODIFYs', async () => {
    const base =
      'CREATE TABLE t (id INT PRIMARY KEY, i INT, u INT UNSIGNED, d DECIMAL(10,2), v VARCHAR(10), c CHAR(4), b BINARY(2), e ENUM("a","b"), t DATETIME(2), n INT NOT NULL)';
    const cases: [string, string][] = [
      ['MODIFY i BIGINT', 'derive'],
      ['MODIFY u BIGINT', 'derive'],
      ['MODIFY u INT', 'resnapshot'],
      ['MODIFY i SMALLINT', 'resnapshot'],
      ['MODIFY d DECIMAL(12,4)', 'derive'],
      ['MODIFY d DECIMAL(10,1)', 'resnapshot'],
      ['MODIFY v VARCHAR(20)', 'derive'],
      ['MODIFY v VARCHAR(5)', 'resnapshot'],
      ['MODIFY v VARCHAR(20) CHARACTER SET latin1', 'resnapshot'],
      ['MODIFY v TEXT', 'derive'],
      ['MODIFY c CHAR(8)', 'derive'],
      ['MODIFY b BINARY(4)', 'resnapshot'],
      ['MODIFY e ENUM("a","b","c")', 'derive'],
      ['MODIFY e ENUM("b","a")', 'resnapshot'],
      ['MODIFY t DATETIME(6)', 'derive'],
      ['MODIFY t DATETIME', 'resnapshot'],
      ['MODIFY n INT NULL', 'derive'],
      ['MODIFY i INT NOT NULL', 'resnapshot'],
      ['MODIFY i VARCHAR(20)', 'resnapshot'],
      ['MODIFY i INT AUTO_INCREMENT UNIQUE', 'resnapshot'],
      ["MODIFY i INT COMMENT 'x'", 'noop'],
      ['CONVERT TO CHARACTER SET latin1', 'resnapshot'],
      ['ADD COLUMN x INT DEFAULT 5', 'derive'],
      ['ADD COLUMN x TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP', 'resnapshot'],
      ['ADD INDEX ix (v), COMMENT "c", ENGINE=InnoDB', 'noop'],
      ['ALTER COLUMN i SET DEFAULT 3', 'noop'],
      ['TRUNCATE PARTITION p0', 'resnapshot'],
      ['DROP COLUMN nope', 'unknown'],
      ['ADD COLUMN i INT', 'unknown'],
    ];
    for (const [spec, path] of cases) {
      const { last } = await run(base, `ALTER TABLE t ${spec}`);
      expect(`${spec} → ${last?.path}`).toBe(`${spec} → ${path}`);
    }
  });

  it('gives a renamed-in table the source structure and a snapshot, and resets the old name', async () => {
    const { steps, versions } = await run('CREATE TABLE a (id INT PRIMARY KEY, v INT)', 'CREATE TABLE b (x INT)', 'RENAME TABLE a TO tmp, b TO a, tmp TO b');
    expect(steps.slice(2).map((s) => `${s.table}:${s.path}`)).toEqual(['a:reset', 'tmp:resnapshot', 'b:reset', 'a:resnapshot', 'tmp:reset', 'b:resnapshot']);
    expect(versions.get('a')?.columns.map((c) => c.name)).toEqual(['x']);
    expect(versions.get('b')?.columns.map((c) => c.name)).toEqual(['id', 'v']);
    expect(versions.get('b')?.key).toEqual(['id']);
    expect(versions.get('tmp')?.dropped).toBe(true);
  });

  it('needs explicit_defaults_for_timestamp to type a bare TIMESTAMP column', async () => {
    const c = await classifyDdl('CREATE TABLE t (ts TIMESTAMP)', ctx);
    if (c.kind !== 'tables') throw new Error('not classified');
    const change = c.effects[0]?.change;
    if (!change) throw new Error('no effect');
    expect(evolve(undefined, change, { db: 'd', table: 't' }).path).toBe('unknown');
    expect(evolve(undefined, change, { db: 'd', table: 't', explicitDefaultsForTimestamp: true }).next?.columns[0]?.nullable).toBe(true);
    expect(evolve(undefined, change, { db: 'd', table: 't', explicitDefaultsForTimestamp: false }).next?.columns[0]?.nullable).toBe(false);
  });
});

describe('information_schema column types', () => {
  it('reads ENUM and SET values as COLUMN_TYPE escapes them: doubled quotes, backslash, NUL, CR, LF (#27)', () => {
    // What MariaDB 10.11 prints for SET('x\\y','q''r') and ENUM(… 'n\ntab\t', 'a,b', 'a\0b', 'c\rd').
    const type = (COLUMN_TYPE: string) => informationSchemaType({ COLUMN_NAME: 'c', DATA_TYPE: 'x', COLUMN_TYPE, IS_NULLABLE: 'YES' });
    expect(type("set('x\\\\y','q''r','t\"u')").values).toEqual(['x\\y', "q'r", 't"u']);
    expect(type("enum('p\\\\\\\\q','n\\ntab\t','a,b','a\\0b','c\\rd','e\\\\')").values).toEqual(['p\\\\q', 'n\ntab\t', 'a,b', 'a\0b', 'c\rd', 'e\\']);
  });

  it('tells the two COMPRESSED binlog types apart: 140 is a BLOB/TEXT, 141 a VARCHAR/VARBINARY (#27)', () => {
    expect(tableMapType({ name: 'a', type: 140, metadata: { length_size: 3 }, charset: 'utf8mb4' })).toEqual({ base: 'mediumtext', charset: 'utf8mb4' });
    expect(tableMapType({ name: 'b', type: 141, metadata: { max_length: 101 }, charset: 'latin1' })).toEqual({
      base: 'varchar',
      length: 100,
      charset: 'latin1',
    });
    expect(tableMapType({ name: 'e', type: 141, metadata: { max_length: 11 }, charset: null })).toEqual({ base: 'varbinary', length: 10 });
  });

  it("reads MySQL 8's `geomcollection` as the GEOMETRYCOLLECTION its DDL and MariaDB name (#30)", () => {
    const type = (COLUMN_TYPE: string) => normalizeType(informationSchemaType({ COLUMN_NAME: 'c', DATA_TYPE: COLUMN_TYPE, COLUMN_TYPE, IS_NULLABLE: 'YES' }));
    expect(type('geomcollection')).toEqual({ type: 'geomcollection', kind: 'binary' });
    expect(type('geomcollection')).toEqual(type('geometrycollection'));
  });
});

describe('a TABLE_MAP against the version', () => {
  it("describes MySQL's JSON column as its DDL does, so the table's first row does not re-snapshot it", async () => {
    const { last } = await run('CREATE TABLE t (id INT PRIMARY KEY, meta JSON)');
    // MySQL logs JSON as type 245 with a 4-byte length and no charset (binlog_row_metadata=FULL).
    const map = structureFromTableMap(
      [
        { name: 'id', type: 3 },
        { name: 'meta', type: 245, metadata: { length_size: 4 } },
      ],
      [0],
    );
    expect(map).toBe(structureOf(last?.next as SchemaVersion));
  });
});
