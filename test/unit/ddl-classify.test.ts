import { describe, expect, it } from 'vitest';
import type { AlterOp, TableChange } from '../../lib/schema/definition.ts';
import { classifyDdl, type DdlClassification } from '../../lib/source/mysql/ddl/classify.ts';
import { lex, render } from '../../lib/source/mysql/ddl/lexer.ts';
import { mariadbComments, mysqlComments } from '../support/comment-rules.ts';

const ctx = { defaultDb: 'd0', comments: mariadbComments(101119) };

function op(o: AlterOp): string {
  switch (o.op) {
    case 'add-column':
      return `add ${o.column.name}${o.position ? ('first' in o.position ? ' first' : ` after ${o.position.after}`) : ''}${o.ifNotExists ? ' ifne' : ''}`;
    case 'drop-column':
      return `drop ${o.name}${o.ifExists ? ' ife' : ''}`;
    case 'modify-column':
      return `modify ${o.from}->${o.column.name}`;
    case 'rename-column':
      return `rename ${o.from}->${o.to}`;
    case 'column-default':
      return `default ${o.name}`;
    case 'add-index':
      return `${o.index.kind} ${o.index.name ?? '?'}(${o.index.parts.map((p) => p.column + (p.prefix ? `(${p.prefix})` : '')).join(',')})`;
    case 'drop-primary-key':
      return 'drop-pk';
    case 'drop-index':
      return `drop-index ${o.name}`;
    case 'rename-index':
      return `rename-index ${o.from}->${o.to}`;
    case 'table-charset':
      return `charset ${o.charsetDefault ? 'DEFAULT' : (o.charset ?? '')}/${o.collationDefault ? 'DEFAULT' : (o.collation ?? '')}`;
    case 'system-versioning':
      return `${o.add ? 'add' : 'drop'} versioning`;
    case 'period':
      return `${o.add ? 'add' : 'drop'} period ${o.period.name}${'start' in o.period ? `(${o.period.start},${o.period.end})` : ''}`;
    case 'rows-changed':
      return `ROWS${o.structureKept ? '' : '!'}`;
    case 'noop':
      return 'noop';
    case 'unknown':
      return 'UNKNOWN';
  }
}

function change(c: TableChange): string {
  switch (c.kind) {
    case 'create':
      return `create[${c.definition.items.map((i) => ('column' in i ? i.column.name : `${i.index.kind}:${i.index.name ?? '?'}`)).join(',')}]`;
    case 'create-like':
      return `like ${c.source.db}.${c.source.table}`;
    case 'rename-out':
      return `out->${c.to.db}.${c.to.table}`;
    case 'rename-in':
      return `in<-${c.from.db}.${c.from.table}`;
    case 'alter':
      return `alter[${c.ops.map(op).join('; ')}]`;
    default:
      return c.kind;
  }
}

/** A compact, exact rendering of a classification (names are printed raw). */
function summary(c: DdlClassification): string {
  switch (c.kind) {
    case 'ignore':
      return 'ignore';
    case 'tables':
      return c.effects.map((e) => `${e.table.db}.${e.table.table} ${change(e.change)}`).join(' | ');
    case 'database':
      return `database ${c.op} ${c.db}${c.charset ? ` ${c.charset}` : ''}${c.collation ? ` ${c.collation}` : ''}`;
    case 'sequence':
      return `sequence ${c.op} ${c.tables.map((t) => `${t.db}.${t.table}`).join(',')}`;
    case 'unknown':
      return `UNKNOWN ${c.tables === null ? '*' : c.tables.map((t) => `${t.db}.${t.table}`).join(',')}`;
  }
}

// Statements from the research corpus (docs: ddl-research §1) and beyond, with their classification.
const CORPUS: [string, string][] = [
  // CREATE TABLE
  ["CREATE TABLE t1.c1 (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL DEFAULT 'x')", 't1.c1 create[id,v]'],
  ['CREATE TABLE c2 (id INT PRIMARY KEY)', 'd0.c2 create[id]'],
  ['CREATE TABLE IF NOT EXISTS t1.c3 (id INT, KEY k (id))', 't1.c3 create[id,index:k]'],
  ['CREATE TABLE t1.c4 LIKE t1.c1', 't1.c4 like t1.c1'],
  ['CREATE TABLE t1.c4 (LIKE c1)', 't1.c4 like d0.c1'],
  ['CREATE OR REPLACE TABLE t1.c5 (id INT PRIMARY KEY, a INT, UNIQUE KEY (a))', 't1.c5 create[id,a,unique:?]'],
  [
    "/* lead */ CREATE /* mid */ TABLE -- dash comment\nt1.c5 ( # hash comment\n id INT PRIMARY KEY /*!40101 COMMENT 'exec40101' */, v INT /*M!100100 INVISIBLE */ ) /*!50100 ENGINE=InnoDB */ -- tail",
    't1.c5 create[id,v]',
  ],
  ['CREATE TABLE t1.ec1 (a INT /*!50000 , b INT */ /*M!100301 , c INT */ /*!999999 , d INT */ /*M!999999 , e INT */ /*! , f INT */)', 't1.ec1 create[a,b,c,f]'],
  // MariaDB skips MySQL-only versions 50700..99999 unless the comment is /*M!.
  ['CREATE TABLE t1.ec2 (a INT /*!50700 , b INT */ /*!80000 , c INT */ /*M!50700 , d INT */)', 't1.ec2 create[a,d]'],
  ['CREATE TABLE `t1`.`cs1` (\n  `id` int(11) NOT NULL,\n  `v` varchar(10) DEFAULT NULL\n)', 't1.cs1 create[id,v]'],
  [
    'CREATE TABLE `t1`.`cs2` (\n  `extra` int(11) DEFAULT 7,\n  `id` int(11) NOT NULL,\n  `v` varchar(10) DEFAULT NULL,\n  PRIMARY KEY (`id`)\n)',
    't1.cs2 create[extra,id,v,primary:PRIMARY]',
  ],
  ['CREATE OR REPLACE TABLE `t1`.`cs1` (\n  `id` int(11) NOT NULL\n)', 't1.cs1 create[id]'],
  ['CREATE TABLE t1.cts SELECT id, a FROM t1.s WHERE id > 2000', 't1.cts create-select'],
  ['CREATE TABLE t1.cts AS SELECT id FROM t1.s', 't1.cts create-select'],
  ['CREATE TABLE t1.cs2 (extra INT DEFAULT 7, PRIMARY KEY(id)) IGNORE SELECT id, v FROM t1.a', 't1.cs2 create-select'],
  ['CREATE TABLE t1.cs3 (SELECT 1 AS x)', 't1.cs3 create-select'],
  ['CREATE TEMPORARY TABLE t1.tmp1 (id INT)', 'ignore'],
  ['CREATE TABLE t1.pt (id INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)', 't1.pt create[id]'],
  ['CREATE TABLE t3 (a INT) WITH SYSTEM VERSIONING', 'd0.t3 create[a]'],
  [
    'CREATE TABLE t3 (a INT, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, e TIMESTAMP(6) GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME (s, e)) WITH SYSTEM VERSIONING',
    'd0.t3 create[a,s,e]',
  ],
  ['CREATE TABLE t3 (a INT) ENGINE=BLACKHOLE', 'UNKNOWN d0.t3'],
  ['CREATE TABLE t1.z (a INT ZEROFILL, b DECIMAL(12,4) UNSIGNED ZEROFILL NOT NULL, c CHAR(3) CHARSET latin1)', 't1.z create[a,b,c]'],
  ['CREATE TABLE t1.w (a CHAR(4) BINARY)', 't1.w create[a]'],
  ['CREATE TABLE t1.w (a VARCHAR(4) COMPRESSED)', 't1.w create[a]'],
  ['CREATE TABLE t1.w (a DATE, b DATE, PERIOD FOR p (a, b), UNIQUE (a, p WITHOUT OVERLAPS))', 't1.w create[a,b,unique:?]'],
  ['CREATE TABLE t1.w (a VARCHAR2(4))', 'UNKNOWN t1.w'],
  ['CREATE TABLE t1.w (a INT DEFAULT 1 + 1)', 'UNKNOWN t1.w'],
  ['CREATE TABLE t1.w (a INT) SEQUENCE=1', 'UNKNOWN t1.w'],
  // Hostile names: raw names come out unescaped, never joined.
  ['CREATE TABLE `a/b`.`c` (x INT)', 'a/b.c create[x]'],
  ['CREATE TABLE `x`.`dot.ted` (x INT)', 'x.dot.ted create[x]'],
  ['CREATE TABLE `x.dot`.`ted` (x INT)', 'x.dot.ted create[x]'],
  ['CREATE TABLE `..`.`..` (x INT)', '..... create[x]'],
  ['CREATE TABLE `sp ace`.` lead sp` (`c o l` INT)', 'sp ace. lead sp create[c o l]'],
  ['CREATE TABLE `bq``tick`.`t``b` (`c``x` INT)', 'bq`tick.t`b create[c`x]'],
  ['CREATE TABLE `ünï`.`日本語` (ü INT)', 'ünï.日本語 create[ü]'],
  ['CREATE TABLE t1.`.` (x INT)', 't1.. create[x]'],
  ['CREATE TABLE 1t (x INT)', 'd0.1t create[x]'],
  ['CREATE TABLE t$ (c$ INT, position INT, status INT, `type` INT, value INT, date INT)', 'd0.t$ create[c$,position,status,type,value,date]'],
  // DROP / TRUNCATE / RENAME
  ['DROP TABLE IF EXISTS `t1`.`c3`,`t1`.`nonexist`,`t1`.`c2` /* generated by server */', 't1.c3 drop | t1.nonexist drop | t1.c2 drop'],
  ['DROP TABLE `d1` /* generated by server */', 'd0.d1 drop'],
  ['DROP TABLE IF EXISTS `d2b`,`x`.`rb` /* generated by server */', 'd0.d2b drop | x.rb drop'],
  ['DROP TEMPORARY TABLE `t1`.`tt` /* generated by server */', 'ignore'],
  ['DROP TEMPORARY TABLE IF EXISTS t', 'ignore'],
  ['TRUNCATE TABLE t1.tr', 't1.tr truncate'],
  ['TRUNCATE tr', 'd0.tr truncate'],
  ['RENAME TABLE t1.ra TO t1.ra2', 't1.ra out->t1.ra2 | t1.ra2 in<-t1.ra'],
  [
    'RENAME TABLE t1.ra2 TO t1.tmp, t1.rb TO t1.ra2, t1.tmp TO t1.rb',
    't1.ra2 out->t1.tmp | t1.tmp in<-t1.ra2 | t1.rb out->t1.ra2 | t1.ra2 in<-t1.rb | t1.tmp out->t1.rb | t1.rb in<-t1.tmp',
  ],
  ['RENAME TABLE t1.rb TO x.rb, x.al3 TO t1.al3', 't1.rb out->x.rb | x.rb in<-t1.rb | x.al3 out->t1.al3 | t1.al3 in<-x.al3'],
  ['RENAME TABLE IF EXISTS t1.nonexist TO t1.zz, t1.ra2 TO t1.ra3', 't1.nonexist out->t1.zz | t1.zz in<-t1.nonexist | t1.ra2 out->t1.ra3 | t1.ra3 in<-t1.ra2'],
  ['RENAME TABLE t1.ra3 WAIT 5 TO t1.ra4', 't1.ra3 out->t1.ra4 | t1.ra4 in<-t1.ra3'],
  // ALTER TABLE
  ['ALTER TABLE t1.al ADD COLUMN d INT DEFAULT 5', 't1.al alter[add d]'],
  ['ALTER TABLE t1.al ADD e INT FIRST, ADD f INT AFTER a', 't1.al alter[add e first; add f after a]'],
  ['ALTER TABLE t1.al DROP COLUMN e, DROP f', 't1.al alter[drop e; drop f]'],
  ['ALTER TABLE t1.al MODIFY c DECIMAL(12,4) NOT NULL', 't1.al alter[modify c->c]'],
  ['ALTER TABLE t1.al CHANGE b bb VARCHAR(20)', 't1.al alter[modify b->bb]'],
  ['ALTER TABLE t1.al RENAME COLUMN bb TO b2', 't1.al alter[rename bb->b2]'],
  ['ALTER TABLE t1.al DROP PRIMARY KEY, ADD PRIMARY KEY (id, a)', 't1.al alter[drop-pk; primary PRIMARY(id,a)]'],
  ['ALTER TABLE t1.al ADD INDEX ix_a (a), ADD UNIQUE KEY uq (b2)', 't1.al alter[index ix_a(a); unique uq(b2)]'],
  ['ALTER TABLE t1.al ADD PRIMARY KEY (a(10), b)', 't1.al alter[primary PRIMARY(a(10),b)]'],
  ['ALTER TABLE t1.al ADD CONSTRAINT c1 UNIQUE (b2)', 't1.al alter[unique c1(b2)]'],
  ['CREATE INDEX ix2 ON t1.al (c)', 't1.al alter[index ix2(c)]'],
  ['CREATE UNIQUE INDEX ix3 ON t1.al (c)', 't1.al alter[unique ix3(c)]'],
  ['DROP INDEX ix2 ON t1.al', 't1.al alter[drop-index ix2]'],
  ['ALTER TABLE t1.al RENAME TO t1.al2', 't1.al out->t1.al2 | t1.al2 in<-t1.al'],
  ['ALTER TABLE t1.al RENAME AS al2', 't1.al out->d0.al2 | d0.al2 in<-t1.al'],
  ['ALTER TABLE t1.al2 RENAME x.al3, ADD COLUMN j INT', 't1.al2 alter[add j] | t1.al2 out->x.al3 | x.al3 in<-t1.al2'],
  ['ALTER TABLE t1.al ADD COLUMN g INT, ALGORITHM=INPLACE, LOCK=NONE', 't1.al alter[add g; noop; noop]'],
  ['ALTER TABLE t1.al ADD COLUMN h INT DEFAULT 3, ALGORITHM=INSTANT', 't1.al alter[add h; noop]'],
  ['ALTER ONLINE TABLE t1.al2 ADD COLUMN i INT', 't1.al2 alter[add i]'],
  ['ALTER TABLE t1.al2 ADD COLUMN IF NOT EXISTS i INT, DROP COLUMN IF EXISTS nope', 't1.al2 alter[add i ifne; drop nope ife]'],
  ['ALTER TABLE t1.al ADD COLUMN (a INT, b VARCHAR(5))', 't1.al alter[add a; add b]'],
  ['ALTER TABLE t1.al2 CONVERT TO CHARACTER SET latin1', 't1.al2 alter[ROWS!]'],
  ['ALTER TABLE t1.al2 ENGINE=InnoDB', 't1.al2 alter[noop]'],
  ['ALTER TABLE t1.al2 ENGINE=MyISAM', 't1.al2 alter[noop]'],
  ['ALTER TABLE t1.al2 ENGINE=BLACKHOLE', 'UNKNOWN t1.al2'],
  ["ALTER TABLE t1.al2 COMMENT='hello', AUTO_INCREMENT=100", 't1.al2 alter[noop; noop]'],
  ["ALTER TABLE t1.al2 ENGINE=InnoDB COMMENT 'x' ROW_FORMAT=DYNAMIC", 't1.al2 alter[noop; noop; noop]'],
  ['ALTER TABLE x.al3 /*!100100 ADD COLUMN k INT */', 'x.al3 alter[add k]'],
  ['ALTER TABLE x.al3 FORCE', 'x.al3 alter[noop]'],
  ['ALTER TABLE x.al3 DISABLE KEYS', 'x.al3 alter[noop]'],
  ['ALTER TABLE x.al3 ORDER BY a', 'x.al3 alter[noop]'],
  ['ALTER TABLE x.al3 ALTER COLUMN j SET DEFAULT 9, ALTER k DROP DEFAULT', 'x.al3 alter[default j; default k]'],
  ['ALTER TABLE t RENAME INDEX a TO b, RENAME KEY c TO d', 'd0.t alter[rename-index a->b; rename-index c->d]'],
  [
    'ALTER TABLE t DROP INDEX k, DROP KEY k2, DROP FOREIGN KEY fk, DROP CHECK ck, DROP CONSTRAINT cc',
    'd0.t alter[drop-index k; drop-index k2; noop; noop; drop-index cc]',
  ],
  ['ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES b(c), ADD CONSTRAINT chk CHECK (a > 0)', 'd0.t alter[noop; noop]'],
  ['ALTER TABLE t DEFAULT CHARSET=latin1', 'd0.t alter[charset latin1/]'],
  ['ALTER TABLE t CHARACTER SET utf8mb4 COLLATE utf8mb4_bin', 'd0.t alter[charset utf8mb4/; charset /utf8mb4_bin]'],
  ['ALTER TABLE t ADD SYSTEM VERSIONING', 'd0.t alter[add versioning]'],
  ['ALTER TABLE t DROP SYSTEM VERSIONING', 'd0.t alter[drop versioning]'],
  ['ALTER TABLE t WITH SYSTEM VERSIONING', 'd0.t alter[add versioning]'],
  ['ALTER TABLE t ADD PERIOD FOR p (a, b), DROP PERIOD FOR q', 'd0.t alter[add period p(a,b); drop period q]'],
  ['ALTER TABLE t ADD (c INT, d INT, PRIMARY KEY (c))', 'd0.t alter[add c; add d; primary PRIMARY(c)]'],
  ['ALTER TABLE t CHARACTER SET DEFAULT, DEFAULT CHAR SET = utf8, COLLATE DEFAULT', 'd0.t alter[charset DEFAULT/; charset utf8/; charset /DEFAULT]'],
  ['CREATE TABLE t (a INT) DEFAULT CHAR SET=utf8', 'd0.t create[a]'],
  ['CREATE DATABASE d1 DEFAULT CHAR SET utf8', 'database create d1 utf8'],
  ['ALTER TABLE t ADD c_nn_inet4 INET4 NOT NULL, ADD u UUID, ADD inv INT INVISIBLE', 'd0.t alter[add c_nn_inet4; add u; add inv]'],
  ['ALTER TABLE t ADD COLUMN v INT AS (a + 1) VIRTUAL, ADD COLUMN s INT AS (a) PERSISTENT', 'd0.t alter[add v; add s]'],
  ['ALTER IGNORE TABLE t1.ig ADD UNIQUE (v)', 't1.ig alter[unique ?(v); ROWS]'],
  ['ALTER IGNORE TABLE t1.ig ADD COLUMN w INT', 't1.ig alter[add w]'],
  // Partitions
  ['ALTER TABLE t1.pt ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))', 't1.pt alter[noop]'],
  ['ALTER TABLE t1.pt TRUNCATE PARTITION p0', 't1.pt alter[ROWS]'],
  ['ALTER TABLE t1.pt DROP PARTITION p1', 't1.pt alter[ROWS]'],
  ['ALTER TABLE t1.pt REMOVE PARTITIONING', 't1.pt alter[noop]'],
  ['ALTER TABLE t1.pt PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10))', 't1.pt alter[noop]'],
  ['ALTER TABLE t1.pt REORGANIZE PARTITION p0 INTO (PARTITION a VALUES LESS THAN (5), PARTITION b VALUES LESS THAN (10))', 't1.pt alter[noop]'],
  ['ALTER TABLE t1.pt EXCHANGE PARTITION p0 WITH TABLE t1.ex', 't1.pt alter[ROWS] | t1.ex rows-changed'],
  ['ALTER TABLE t1.pt CONVERT PARTITION p0 TO TABLE t1.np', 't1.pt alter[ROWS] | t1.np create-select'],
  // Maintenance
  ['OPTIMIZE TABLE t1.tr', 't1.tr noop'],
  ['ANALYZE TABLE t1.tr, t1.x', 't1.tr noop | t1.x noop'],
  ['REPAIR TABLE t1.tr', 't1.tr noop'],
  ['ANALYZE TABLE t1.tr PERSISTENT FOR ALL', 't1.tr noop'],
  // Databases and sequences
  ['CREATE DATABASE `a/b`', 'database create a/b'],
  ['CREATE SCHEMA IF NOT EXISTS sch1 DEFAULT CHARACTER SET utf8mb4', 'database create sch1 utf8mb4'],
  ['DROP DATABASE dropme', 'database drop dropme'],
  ['DROP SCHEMA IF EXISTS sch1', 'database drop sch1'],
  ['ALTER DATABASE x CHARACTER SET latin1', 'database alter x latin1'],
  ['ALTER DATABASE COLLATE utf8mb4_bin', 'database alter d0 utf8mb4_bin'],
  ['CREATE SEQUENCE t1.seq1 START WITH 10 INCREMENT BY 5', 'sequence create t1.seq1'],
  ['ALTER SEQUENCE t1.seq1 RESTART WITH 500', 'sequence alter t1.seq1'],
  ['DROP SEQUENCE `t1`.`seq1` /* generated by server */', 'sequence drop t1.seq1'],
  // Ignored: never a table's rows, and their text is never kept.
  ['CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `t1`.`v1` AS SELECT id FROM t1.tr;', 'ignore'],
  ['DROP VIEW t1.v1', 'ignore'],
  ['CREATE DEFINER=`root`@`localhost` TRIGGER t1.trg BEFORE INSERT ON t1.tr FOR EACH ROW SET NEW.id = 1', 'ignore'],
  ['CREATE DEFINER=`root`@`localhost` PROCEDURE `t1`.`p1`()\nBEGIN SELECT 1; END', 'ignore'],
  ["CREATE USER u1@'%' IDENTIFIED BY 'S3cret!pw'", 'ignore'],
  ["ALTER USER u1@'%' IDENTIFIED BY 'N3wS3cret'", 'ignore'],
  ["GRANT ALL ON *.* TO u4@'%' IDENTIFIED BY 'GrantPw'", 'ignore'],
  ["SET PASSWORD FOR 'u1'@'%'='*9E2BEB46AFDADA2D9099C9EF1EB8A6D551F17219'", 'ignore'],
  ['RENAME USER a TO b', 'ignore'],
  ['FLUSH TABLES', 'ignore'],
  ['DROP EVENT t1.e', 'ignore'],
  // DML and garbage
  ["INSERT INTO t1.s VALUES (30,30,'stmt','t','b')", 'UNKNOWN *'],
  ["CREATE TABLE t1.x (a VARCHAR(3) DEFAULT 'unterminated)", 'UNKNOWN *'],
  ['ALTER TABLE t1.x FROBNICATE', 'UNKNOWN t1.x'],
  ['DROP TABLE a; DROP TABLE b', 'UNKNOWN *'],
];

describe('DDL classification (corpus)', () => {
  it.each(CORPUS)('%s', async (statement, expected) => {
    expect(summary(await classifyDdl(statement, ctx))).toBe(expected);
  });

  it('takes unqualified names from the default database and refuses them without one', async () => {
    expect(summary(await classifyDdl('DROP TABLE a', { ...ctx, defaultDb: 'shop' }))).toBe('shop.a drop');
    expect(summary(await classifyDdl('DROP TABLE a', { ...ctx, defaultDb: '' }))).toBe('UNKNOWN ');
  });

  it('reads double quotes as identifiers only under ANSI_QUOTES', async () => {
    expect(summary(await classifyDdl('CREATE TABLE "t1"."ansi q" ("c""q" INT)', { ...ctx, ansiQuotes: true }))).toBe('t1.ansi q create[c"q]');
    expect((await classifyDdl('CREATE TABLE "t1"."ansi q" (a INT)', ctx)).kind).toBe('unknown');
  });

  it('lower-cases names under lower_case_table_names=1', async () => {
    expect(summary(await classifyDdl('RENAME TABLE Shop.Orders TO Shop.Old', { ...ctx, lowerCaseTableNames: true }))).toBe(
      'shop.orders out->shop.old | shop.old in<-shop.orders',
    );
  });

  it('never carries statement text (secrets) in a result', async () => {
    for (const statement of [
      "CREATE USER u1@'%' IDENTIFIED BY 'S3cret!pw'",
      "ALTER TABLE t1.x ADD COLUMN p VARCHAR(9) DEFAULT 'S3cret!pw' COMMENT 'S3cret!pw'",
    ]) {
      const result = JSON.stringify(await classifyDdl(statement, ctx));
      expect(result).not.toContain('IDENTIFIED');
      expect(result.includes('S3cret!pw')).toBe(statement.startsWith('ALTER')); // a default value is data, not text
    }
  });

  it('reads the column syntax of MySQL 8.0–9.x as a MySQL server wrote it', async () => {
    const mysql = { defaultDb: 'd0', comments: mysqlComments(90600) };
    const result = await classifyDdl(
      'CREATE TABLE t (id INT NOT NULL AUTO_INCREMENT, b INT /*!80023 INVISIBLE */, c INT DEFAULT (b + 1), ' +
        'd VARCHAR(5) COLLATE utf8mb4_0900_ai_ci, g POINT NOT NULL /*!80003 SRID 4326 */, v VECTOR(3), w VECTOR, s SMALLINT UNSIGNED SERIAL DEFAULT VALUE, ' +
        'CONSTRAINT ck CHECK (b > 0) /*!80016 NOT ENFORCED */, CHECK (c > 0) ENFORCED, PRIMARY KEY (id), INDEX ((b + 1)), KEY k2 ((lower(d)) DESC), UNIQUE ((b * 2))' +
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci /*!80016 DEFAULT ENCRYPTION='N' */",
      mysql,
    );
    if (result.kind !== 'tables') throw new Error(JSON.stringify(result));
    const created = (result.effects[0] as (typeof result.effects)[0]).change;
    if (created.kind !== 'create') throw new Error(created.kind);
    const columns = created.definition.items.flatMap((i) => ('column' in i ? [i.column] : []));
    expect(columns.map((c) => [c.name, c.type.base, c.type.length ?? null, c.invisible, c.default.kind])).toEqual([
      ['id', 'int', null, false, 'none'],
      ['b', 'int', null, true, 'none'],
      ['c', 'int', null, false, 'expression'],
      ['d', 'varchar', 5, false, 'none'],
      ['g', 'point', null, false, 'none'],
      ['v', 'vector', 3, false, 'none'],
      ['w', 'vector', 2048, false, 'none'],
      ['s', 'smallint', null, false, 'none'],
    ]);
    expect(columns.at(-1)).toMatchObject({ nullable: false, autoIncrement: true, unique: true });
    expect(columns[3]?.type.collation).toBe('utf8mb4_0900_ai_ci');
    // Functional key parts index hidden generated columns: plain indexes, never an identity; unnamed ones get the server's name.
    const indexes = created.definition.items.flatMap((i) => ('index' in i ? [i.index] : []));
    expect(indexes.map((i) => [i.kind, i.name ?? null, i.parts.length])).toEqual([
      ['primary', 'PRIMARY', 1],
      ['index', null, 0],
      ['index', 'k2', 0],
      ['index', null, 0],
    ]);
    expect(created.definition.collation).toBe('utf8mb4_0900_ai_ci');
    // MariaDB skips the MySQL-only comments: no INVISIBLE there.
    const maria = await classifyDdl('CREATE TABLE t (a INT, b INT /*!80023 INVISIBLE */)', ctx);
    expect(JSON.stringify(maria)).not.toContain('"invisible":true');
    expect(summary(await classifyDdl('CREATE TABLE t (a INT, PRIMARY KEY ((a + 1)))', mysql))).toBe('UNKNOWN d0.t');
  });

  it('keeps the server-version decision of executable comments', async () => {
    const at = (serverVersion: number) =>
      classifyDdl('ALTER TABLE t /*!100200 ADD COLUMN a INT */ /*M!110000 , ADD COLUMN b INT */', { ...ctx, comments: mariadbComments(serverVersion) });
    expect(summary(await at(101119))).toBe('d0.t alter[add a]');
    expect(summary(await at(110400))).toBe('d0.t alter[add a; add b]');
    expect(summary(await at(100100))).toBe('d0.t alter[]');
  });
});

describe('pre-lexer', () => {
  const tokens = (text: string, options = {}) => lex(text, { comments: mariadbComments(101119), ...options }).map((t) => `${t.kind}:${t.value}`);

  it('unescapes strings and identifiers like the server', () => {
    expect(tokens("'it''s' 'a\\nb' `x``y` \"q\"")).toEqual(["string:it's", 'string:a\nb', 'ident:x`y', 'string:q']);
    expect(tokens("'a\\nb'", { noBackslashEscapes: true })).toEqual(['string:a\\nb']);
    expect(tokens('"q""r"', { ansiQuotes: true })).toEqual(['ident:q"r']);
    expect(tokens("'\\%\\_'")).toEqual(['string:\\%\\_']);
  });

  it('drops comments and keeps what only looks like one', () => {
    expect(tokens("a -- c\nb # c\nc /* c */ d 5--3 '-- x' `# y`")).toEqual([
      'word:a',
      'word:b',
      'word:c',
      'word:d',
      'number:5',
      'punct:-',
      'punct:-',
      'number:3',
      'string:-- x',
      'ident:# y',
    ]);
  });

  it('reads literals and names that start with digits', () => {
    expect(tokens("1.5 -2 1e3 .5 0x41 X'4142' b'101' 0b11 1t t1.5x 0x1g")).toEqual([
      'number:1.5',
      'punct:-',
      'number:2',
      'number:1e3',
      'number:.5',
      'hex:41',
      'hex:4142',
      'bits:101',
      'bits:11',
      'word:1t',
      'word:t1',
      'punct:.',
      'word:5x',
      'word:0x1g',
    ]);
  });

  it('renders tokens back with identifiers in backticks', () => {
    expect(render(lex('CREATE TABLE "a b".c/*x*/(d INT)', { comments: mariadbComments(101119), ansiQuotes: true }))).toBe('CREATE TABLE `a b`.c (d INT)');
  });

  it('runs executable comments as the server that wrote the statement did', () => {
    const words = (text: string, serverKind: 'mysql' | 'mariadb', serverVersion: number) =>
      lex(text, { comments: (serverKind === 'mysql' ? mysqlComments : mariadbComments)(serverVersion) })
        .map((t) => t.value)
        .join(' ');
    // MySQL 8 runs its own versions, which MariaDB skips as MySQL-only (50700–99999).
    expect(words('a /*!80023 INVISIBLE */ b', 'mysql', 80046)).toBe('a INVISIBLE b');
    expect(words('a /*!80023 INVISIBLE */ b', 'mysql', 80022)).toBe('a b');
    expect(words('a /*!80023 INVISIBLE */ b', 'mariadb', 101119)).toBe('a b');
    expect(words("x /*!80016 DEFAULT ENCRYPTION='N' */", 'mysql', 80403)).toBe('x DEFAULT ENCRYPTION = N');
    // /*M! is a plain comment to MySQL; MariaDB runs it by its version.
    expect(words('a /*M!100301 b */ c', 'mysql', 90600)).toBe('a c');
    expect(words('a /*M!100301 b */ c', 'mariadb', 101119)).toBe('a b c');
    expect(words('a /*M!110000 b */ c', 'mariadb', 101119)).toBe('a c');
    // Six-digit versions from MySQL 8.1 on; before, five digits and the sixth is code.
    expect(words('a /*!080023 b */', 'mysql', 80403)).toBe('a b');
    expect(words('a /*!080023 b */', 'mysql', 80046)).toBe('a 3 b');
    expect(words('a /*!90100 b */', 'mysql', 80403)).toBe('a');
    // A version-less executable comment runs everywhere; old versions run everywhere.
    expect(words('a /*! b */ /*!40101 c */', 'mysql', 80046)).toBe('a b c');
    expect(words('a /*! b */ /*!40101 c */', 'mariadb', 101119)).toBe('a b c');
  });

  it('refuses unterminated strings, identifiers and comments', () => {
    for (const text of ["'abc", '`abc', '/* abc', '/*!50000 abc', "x'4"]) expect(() => lex(text, { comments: mariadbComments(101119) })).toThrow();
  });
});
