/*
 * CREATE TABLE and ALTER TABLE examples of the MariaDB and MySQL manuals, as test data for
 * test/integration/ddl-manual-corpus.test.ts and test/unit/ddl-manual-corpus.test.ts: a corpus
 * sluice's classifier was not written against. Each entry names the manual page its statements
 * come from (`page`).
 *
 * MariaDB: the SQL examples of the MariaDB Server documentation (github.com/mariadb-corporation/
 * mariadb-docs, pages under server/), every CREATE TABLE, ALTER TABLE, CREATE/DROP INDEX, CREATE
 * SEQUENCE and session SET of a page in page order, kept where MariaDB 10.11 accepts them in a
 * fresh database (placeholders like `tbl_name`, and statements naming other databases, left out).
 * MySQL: examples of the MySQL 8.0 Reference Manual pages named, the tables they assume created
 * first (rename-table) and a table name a page uses twice made distinct (data-type-defaults).
 */

export interface ManualPage {
  /** The manual page the statements are taken from. */
  readonly page: string;
  readonly statements: readonly string[];
}

export const MARIADB_MANUAL: readonly ManualPage[] = [
  {
    page: 'https://mariadb.com/docs/server/ha-and-performance/optimization-and-tuning/optimization-and-tuning-compression/storage-engine-independent-column-compression',
    statements: ['CREATE TABLE cmp (i TEXT COMPRESSED)', 'CREATE TABLE cmp2 (i TEXT COMPRESSED=zlib)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/auto_increment-faq',
    statements: [
      'CREATE TABLE sequence (table_name VARCHAR(255), position INT UNSIGNED)',
      'CREATE TABLE testTable (firstAuto INT UNSIGNED, secondAuto INT UNSIGNED)',
      'CREATE TABLE autoinc_test (\n  h INT UNSIGNED PRIMARY KEY AUTO_INCREMENT,\n  m INT UNSIGNED\n) AUTO_INCREMENT = 100',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/auto_increment',
    statements: [
      'CREATE TABLE animals (\n     id MEDIUMINT NOT NULL AUTO_INCREMENT,\n     name CHAR(30) NOT NULL,\n     PRIMARY KEY (id)\n )',
      'CREATE TABLE t (id SERIAL, c CHAR(1)) ENGINE=InnoDB',
      'ALTER TABLE animals AUTO_INCREMENT=8',
      'SET @@auto_increment_increment=3',
      'CREATE TABLE t2 (c INT NOT NULL AUTO_INCREMENT PRIMARY KEY)',
      'SET @@auto_increment_offset=2',
      'SET @@auto_increment_offset=5',
      'CREATE TABLE t3 (c INT NOT NULL AUTO_INCREMENT PRIMARY KEY)',
      'CREATE OR REPLACE TABLE t1 (a INT)',
      'ALTER TABLE t1 MODIFY a INT NOT NULL AUTO_INCREMENT PRIMARY KEY',
      'CREATE OR REPLACE TABLE t1 (a INT)',
      'ALTER TABLE t1 MODIFY a INT NOT NULL AUTO_INCREMENT PRIMARY KEY',
      "SET SQL_MODE='no_auto_value_on_zero'",
      'CREATE OR REPLACE TABLE t1 (a INT)',
      'ALTER TABLE t1 MODIFY a INT NOT NULL AUTO_INCREMENT PRIMARY KEY',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/date-and-time-data-types/sql_tsi_year',
    statements: ['CREATE TABLE sql_tsi_year_example (\n  example SQL_TSI_YEAR\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/null-values',
    statements: [
      'CREATE TABLE t(x INT)',
      'CREATE TABLE t2(id INT PRIMARY KEY AUTO_INCREMENT, letter CHAR(1))',
      'CREATE TABLE t3 (x INT, ts TIMESTAMP)',
      'CREATE TABLE virt (c INT, v INT AS (c+10) PERSISTENT) ENGINE=InnoDB',
      "CREATE TABLE nulltest (\n  a INT(11),\n  x VARCHAR(10) NOT NULL DEFAULT 'a',\n  y INT(11) NOT NULL DEFAULT 23\n)",
      'SET sql_mode=EMPTY_STRING_IS_NULL',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/bool',
    statements: ['CREATE TABLE bool_example (\n  example BOOL\n) DEFAULT CHARSET=latin1'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/fixed',
    statements: ['CREATE TABLE fixed_example (\n  example FIXED\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/float4',
    statements: ['CREATE TABLE float4_example (\n  example FLOAT4\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/float8',
    statements: ['CREATE TABLE float8_example (\n  example FLOAT8\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/floating-point-accuracy',
    statements: ['CREATE TABLE fpn (id INT, f1 FLOAT, f2 DOUBLE, f3 DECIMAL (10,3))'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/int1',
    statements: ['CREATE TABLE t1 (x INT1)', 'CREATE TABLE int1_example (\n  example INT1\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/int2',
    statements: ['CREATE TABLE t1 (x INT2)', 'CREATE TABLE int2_example (\n  example INT2\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/int3',
    statements: ['CREATE TABLE t1 (x INT3)', 'CREATE TABLE int3_example (\n  example INT3\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/int4',
    statements: ['CREATE TABLE t1 (x INT4)', 'CREATE TABLE int4_example (\n  example INT4\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/int8',
    statements: ['CREATE TABLE t1 (x INT8)', 'CREATE TABLE int8_example (\n  example INT8\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/middleint',
    statements: ['CREATE TABLE middleint_example (\n  example MIDDLEINT\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/number',
    statements: ["SET sql_mode='oracle'", 'CREATE TABLE number_example (\n  example NUMBER\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/numeric-data-type-overview',
    statements: [
      'CREATE TABLE zf (\n  i1 TINYINT SIGNED,\n  i2 TINYINT UNSIGNED,\n  i3 TINYINT ZEROFILL\n)',
      'CREATE TABLE ranges (i1 TINYINT, i2 SMALLINT, i3 TINYINT UNSIGNED)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/numeric-data-types-dec',
    statements: ['CREATE TABLE dec_example (\n  example DEC\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/numeric',
    statements: ['CREATE TABLE numeric_example (\n  example NUMERIC\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/numeric-data-types/real',
    statements: ['CREATE TABLE real_example (\n  example REAL\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/row-type-of',
    statements: ['CREATE TABLE rowtypeof_table(\n  descr VARCHAR(20),\n  val INT\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/serial',
    statements: ['CREATE TABLE serial_example (\n  id SERIAL,\n  data VARCHAR(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/binary',
    statements: ['CREATE TABLE bins (a BINARY(10))', "SET sql_mode='STRICT_ALL_TABLES'"],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/char-byte',
    statements: ['CREATE TABLE char_byte_example (\n  example CHAR BYTE\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/char-varying',
    statements: ['CREATE TABLE char_varying_example (\n  example CHAR VARYING(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/character-sets/setting-character-sets-and-collations',
    statements: [
      "CREATE TABLE english_names (id INT, name VARCHAR(40))\n  CHARACTER SET 'utf8'\n  COLLATE 'utf8_icelandic_ci'",
      "CREATE TABLE european_names (\n  croatian_names VARCHAR(40) COLLATE 'cp1250_croatian_ci',\n  greek_names VARCHAR(40) CHARACTER SET 'greek')",
      'CREATE TABLE t1 (a VARCHAR(10)) CHARACTER SET utf8 COLLATE utf8_general_ci',
      'SET @@character_set_client=cp850, @@character_set_connection=utf8',
      'SET @@character_set_client=cp850, @@character_set_connection=utf8',
      "CREATE TABLE t2 AS SELECT 'ö'",
      "SET @@local.character_set_connection='latin1'",
      "SET @@local.character_set_connection='utf8'",
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/character',
    statements: ['CREATE TABLE character_example (\n  example CHARACTER\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/clob',
    statements: ["SET sql_mode='oracle'", 'CREATE TABLE clob_example (\n  example CLOB\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/json',
    statements: [
      'CREATE TABLE t (j JSON)',
      'CREATE TABLE t2 (\n  j JSON\n  CHECK (JSON_VALID(j))\n)',
      'CREATE TABLE json_example (\n  description VARCHAR(20),\n  example JSON\n)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/long-and-long-varchar',
    statements: ['CREATE TABLE t1 (a LONG, b LONG VARCHAR)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/long-char-varying',
    statements: ['CREATE TABLE long_char_varying_example (\n  example LONG CHAR VARYING\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/long-character-varying',
    statements: ['CREATE TABLE long_character_varying_example (\n  example LONG CHARACTER VARYING\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/long-varbinary',
    statements: ['CREATE TABLE long_varbinary_example (\n  example LONG VARBINARY\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/long-varchar',
    statements: ['CREATE TABLE long_varchar_example (\n  example LONG VARCHAR\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/long-varcharacter',
    statements: ['CREATE TABLE long_varcharacter_example (\n  example LONG VARCHARACTER\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/national-char-varying',
    statements: ['CREATE TABLE national_char_varying_example (\n  example NATIONAL CHAR VARYING(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/national-char',
    statements: ['CREATE TABLE national_char_example (\n  example NATIONAL CHAR(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/national-character-varying',
    statements: ['CREATE TABLE national_character_varying_example (\n  example NATIONAL CHARACTER VARYING(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/national-character',
    statements: ['CREATE TABLE national_character_example (\n  example NATIONAL CHARACTER(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/national-varchar',
    statements: ['CREATE TABLE national_varchar_example (\n  example NATIONAL VARCHAR(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/national-varcharacter',
    statements: ['CREATE TABLE national_varcharacter_example (\n  example NATIONAL VARCHARACTER(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/nchar-varchar',
    statements: ['CREATE TABLE nchar_varchar_example (\n  example NCHAR VARCHAR(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/nchar-varcharacter',
    statements: ['CREATE TABLE nchar_varcharacter_example (\n  example NCHAR VARCHARACTER(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/nchar-varying',
    statements: ['CREATE TABLE nchar_varying_example (\n  example NCHAR VARYING(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/nchar',
    statements: ['CREATE TABLE nchar_example (\n  example NCHAR(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/raw',
    statements: ["SET sql_mode='oracle'", 'CREATE TABLE raw_example (\n  example RAW(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/varchar2',
    statements: ["SET sql_mode='oracle'", 'CREATE TABLE varchar2_example (\n  example VARCHAR2(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/string-data-types/varcharacter',
    statements: ['CREATE TABLE varcharacter_example (\n  example VARCHARACTER(32)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/data-types/type-of',
    statements: ['CREATE TABLE typeof_table(\n  descr VARCHAR(20),\n  val INT\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-1000-to-1099/e1062',
    statements: ['CREATE TABLE t1 (\n  id INT AUTO_INCREMENT PRIMARY KEY,\n  f VARCHAR(10) UNIQUE\n)', 'ALTER TABLE t1 DROP INDEX f, ADD INDEX (f)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-1000-to-1099/e1066',
    statements: ['CREATE TABLE t1 (f1 INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-1000-to-1099/e1068',
    statements: ['CREATE TABLE t1(\n    c1 INT NOT NULL AUTO_INCREMENT,\n    c2 INT NOT NULL,\n    PRIMARY KEY(c1)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-1000-to-1099/e1075',
    statements: ['CREATE OR REPLACE TABLE animals (\n    id MEDIUMINT NOT NULL AUTO_INCREMENT,\n    name CHAR(30) NOT NULL,\n    PRIMARY KEY (id)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-1100-to-1199/e1149',
    statements: [
      'CREATE TABLE accessible_status(id INT)',
      'CREATE TABLE `accessible`(id INT)',
      "SET @@SQL_MODE = CONCAT(@@SQL_MODE, ',ANSI_QUOTES')",
      'CREATE TABLE "t" (id INT)',
      "SET SQL_MODE='ORACLE'",
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-1100-to-1199/e1178',
    statements: ['CREATE SEQUENCE s START WITH 100 INCREMENT BY 10'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-4000-to-4099/e4084',
    statements: [
      'CREATE OR REPLACE SEQUENCE s START WITH 1 INCREMENT BY 1 MAXVALUE=2',
      'CREATE OR REPLACE SEQUENCE s START WITH 1 INCREMENT BY 1 MAXVALUE=2 CYCLE',
      'CREATE OR REPLACE SEQUENCE s START WITH 1 INCREMENT BY 1 MAXVALUE=10 CACHE=5',
      'CREATE OR REPLACE SEQUENCE s START WITH 1 INCREMENT BY 1 MAXVALUE=10 CACHE=0',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/aggregate-functions/count',
    statements: [
      'CREATE TABLE student (name CHAR(10), test CHAR(10), score TINYINT)',
      'CREATE OR REPLACE TABLE student_test (name CHAR(10), test CHAR(10), score TINYINT)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/date-time-functions/microseconds-in-mariadb',
    statements: ['CREATE TABLE example(\n  col_microsec DATETIME(6),\n  col_millisec TIME(3)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/numeric-functions/rand',
    statements: ['CREATE TABLE t (i INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/special-functions/window-functions/percentile_cont',
    statements: ['CREATE TABLE book_rating (name CHAR(30), star_rating TINYINT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/special-functions/window-functions/percentile_disc',
    statements: ['CREATE TABLE book_rating (name CHAR(30), star_rating TINYINT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/special-functions/window-functions/window-frames',
    statements: ['CREATE TABLE `student_test` (\n  name char(10),\n  test char(10),\n  score tinyint(4)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/special-functions/window-functions/window-functions-overview',
    statements: ['CREATE TABLE t (score INT)', 'CREATE TABLE student (\n  name CHAR(10),\n  test CHAR(10),\n  score TINYINT\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/string-functions/like',
    statements: ['CREATE TABLE t1 (d VARCHAR(16))', 'CREATE TABLE t2 (d DATETIME)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/string-functions/sformat',
    statements: ['CREATE TABLE test_sformat(mdb_release char(6), mdev int, feature char(20))'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-functions/string-functions/type-conversion',
    statements: ['CREATE TABLE t (a VARCHAR(10), b VARCHAR(10), INDEX idx_a (a))'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-definition/create/create-table',
    statements: [
      'CREATE OR REPLACE TABLE table_name (a INT)',
      'CREATE TABLE TABLE_NAME (a INT)',
      "CREATE OR REPLACE TABLE x (d DATE DEFAULT '0000-00-00')",
      "SET SQL_MODE='NO_ZERO_DATE'",
      'CREATE TABLE t1 (a INT DEFAULT (1+1), b INT DEFAULT (a+1))',
      'CREATE TABLE t2 (a BIGINT PRIMARY KEY DEFAULT UUID_SHORT())',
      'CREATE TABLE t_long_keys (   a INT PRIMARY KEY,   b  VARCHAR(4073),   UNIQUE KEY `uk_b` (b) ) ENGINE=InnoDB',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-definition/create/invisible-columns',
    statements: [
      'CREATE TABLE t (x INT, y INT INVISIBLE, z INT INVISIBLE NOT NULL DEFAULT 4)',
      'ALTER TABLE t MODIFY x INT INVISIBLE, MODIFY y INT, MODIFY z INT NOT NULL DEFAULT 4',
      'CREATE TABLE t1 (x BIGINT UNSIGNED NOT NULL, y VARCHAR(16), z TEXT)',
      'ALTER TABLE t1 ADD pkid SERIAL PRIMARY KEY invisible FIRST',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/inserting-loading-data/insert-ignore',
    statements: ['CREATE TABLE t1 (x INT UNIQUE)', 'CREATE OR REPLACE TABLE t2(id INT, t VARCHAR(2) NOT NULL, n INT NOT NULL)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/common-table-expressions/with',
    statements: ['CREATE TABLE t1 (from_ int, to_ int)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/group-by',
    statements: ['CREATE TABLE plays (name VARCHAR(16), plays INT, wins INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/joins-subqueries/joins/more-advanced-joins',
    statements: [
      'CREATE TABLE `Employees` (\n  `ID` TINYINT(3) UNSIGNED NOT NULL AUTO_INCREMENT,\n  `First_Name` VARCHAR(25) NOT NULL,\n  `Last_Name` VARCHAR(25) NOT NULL,\n  `Position` VARCHAR(25) NOT NULL,\n  `Home_Address` VARCHAR(50) NOT NULL,\n  `Home_Phone` VARCHAR(12) NOT NULL,\n  PRIMARY KEY (`ID`)\n) ENGINE=MyISAM',
      'CREATE TABLE `Hours` (\n  `ID` TINYINT(3) UNSIGNED NOT NULL,\n  `Clock_In` DATETIME NOT NULL,\n  `Clock_Out` DATETIME NOT NULL\n) ENGINE=MyISAM',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/joins-subqueries/subqueries/subqueries-in-a-from-clause-derived-tables',
    statements: ['CREATE TABLE student (name CHAR(10), test CHAR(10), score TINYINT)', 'CREATE OR REPLACE TABLE t1(c1 INT, c2 INT, c3 INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/joins-subqueries/subqueries/subqueries-row-subqueries',
    statements: ['CREATE TABLE staff (name VARCHAR(10), age TINYINT)', 'CREATE TABLE customer (name VARCHAR(10), age TINYINT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/joins-subqueries/subqueries/subqueries-scalar-subqueries',
    statements: ['CREATE TABLE sq1 (num TINYINT)', 'CREATE TABLE sq2 (num TINYINT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/joins-subqueries/subqueries/subquery-limitations',
    statements: ['CREATE TABLE staff(name VARCHAR(10),age TINYINT)', 'CREATE TABLE customer(name VARCHAR(10),age TINYINT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/limit',
    statements: [
      'CREATE TABLE members (name VARCHAR(20))',
      'CREATE TABLE warehouse (product_id INT, qty INT)',
      'CREATE TABLE store (product_id INT, qty INT)',
      'CREATE TABLE d (dd DATE, cc INT)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/order-by',
    statements: ['CREATE TABLE seq (i INT, x VARCHAR(1))', 'CREATE TABLE warehouse (product_id INT, qty INT)', 'CREATE TABLE store (product_id INT, qty INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/select-with-rollup',
    statements: ["CREATE TABLE booksales (\n  country VARCHAR(35), genre ENUM('fiction','non-fiction'), year YEAR, sales INT)"],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/set-operations/minus',
    statements: ['CREATE TABLE seqs (i INT)', "SET SQL_MODE='ORACLE'"],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/data-manipulation/selecting-data/set-operations/union',
    statements: ['CREATE TABLE seqs (i INT)', 'CREATE OR REPLACE TABLE t1 (a INT)', 'CREATE OR REPLACE TABLE t2 (b INT)', 'CREATE OR REPLACE TABLE t3 (c INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/programmatic-compound-statements/declare-type',
    statements: [
      'CREATE TABLE t1 (a INT)',
      'CREATE TABLE persons (nickname VARCHAR(64), first_name VARCHAR(64), last_name VARCHAR(64))',
      'SET sql_mode=ORACLE',
      'SET sql_mode=ORACLE',
      'SET sql_mode=ORACLE',
      'SET sql_mode=ORACLE',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/programmatic-compound-statements/programmatic-compound-statements-cursors/cursor-overview',
    statements: ['CREATE TABLE c1(i INT)', 'CREATE TABLE c2(i INT)', 'CREATE TABLE c3(i INT)', 'CREATE TABLE t1 (a INT, b VARCHAR(10))'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-statements/transactions/metadata-locking',
    statements: ['CREATE TABLE t (a INT) ENGINE = MEMORY', 'ALTER TABLE t ADD COLUMN b INT'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/geometry/geometry-types',
    statements: [
      'CREATE TABLE object (shapeA POLYGON, shapeB LINESTRING)',
      'CREATE TABLE gis_point  (g POINT)',
      'CREATE TABLE gis_line  (g LINESTRING)',
      'CREATE TABLE gis_polygon   (g POLYGON)',
      'CREATE TABLE gis_multi_point (g MULTIPOINT)',
      'CREATE TABLE gis_multi_line (g MULTILINESTRING)',
      'CREATE TABLE gis_multi_polygon  (g MULTIPOLYGON)',
      'CREATE TABLE gis_geometrycollection  (g GEOMETRYCOLLECTION)',
      'CREATE TABLE gis_geometry (g GEOMETRY)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/geometry/spatial-index',
    statements: ['CREATE TABLE geom (g GEOMETRY NOT NULL, SPATIAL INDEX(g))', 'ALTER TABLE geom ADD SPATIAL INDEX(g)', 'ALTER TABLE geom DROP INDEX g'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/nosql/handler/handler-for-memory-tables',
    statements: ['CREATE TABLE t1 (a INT, b INT, KEY(a), KEY b USING BTREE (b)) ENGINE=memory'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/sequences/alter-sequence',
    statements: ['CREATE SEQUENCE s1'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/sequences/sequence-overview',
    statements: [
      'CREATE SEQUENCE s START WITH 100 INCREMENT BY 10',
      'CREATE SEQUENCE s1',
      'CREATE TABLE t1 (a INT PRIMARY KEY DEFAULT (NEXT VALUE FOR s1), b INT)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/sql-language-structure/hexadecimal-literals',
    statements: ['CREATE TABLE t1 (a INT, b VARCHAR(10))'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/sql-language-structure/identifier-names',
    statements: [
      'CREATE TABLE t1 (i int)',
      'CREATE TABLE t2 (i int)',
      'CREATE TABLE `TABLE` (i int)',
      'CREATE TABLE `*` (a INT)',
      'CREATE TABLE 8984444cce5d (x INT)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/sql-language-structure/reserved-words',
    statements: ['CREATE TABLE t1 (system INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/sql-language-structure/schema-qualifiers',
    statements: [
      'SET sql_mode=ORACLE',
      'CREATE TABLE t1 (\nd DATE\n)',
      'SET sql_mode=ORACLE',
      'SET sql_mode=ORACLE',
      'SET sql_mode=DEFAULT',
      'SET sql_mode=ORACLE',
      'SET sql_mode=DEFAULT',
      'CREATE OR REPLACE TABLE t1 (\n  d DATE\n)',
      'SET SQL_mode=ORACLE',
      'SET SQL_mode=ORACLE',
      'CREATE OR REPLACE TABLE t1 (\n  d DATE\n)',
      'SET sql_mode=DEFAULT',
      'CREATE OR REPLACE TABLE t1 (\n  d DATE\n)',
      'SET SQL_mode=ORACLE',
      'SET sql_mode=DEFAULT',
      'CREATE OR REPLACE TABLE t1 (\n  d DATE\n)',
      'SET SQL_mode=ORACLE',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/temporal-tables/application-time-periods',
    statements: [
      'CREATE TABLE t1(\n   name VARCHAR(50),\n   date_1 DATE,\n   date_2 DATE,\n   PERIOD FOR date_period(date_1, date_2))',
      'CREATE OR REPLACE TABLE rooms (\n room_number INT,\n guest_name VARCHAR(255),\n checkin DATE,\n checkout DATE\n )',
      'ALTER TABLE rooms ADD PERIOD FOR p(checkin,checkout)',
      'ALTER TABLE rooms DROP PERIOD FOR p',
      'ALTER TABLE rooms ADD PERIOD IF NOT EXISTS FOR p(checkin,checkout)',
      'ALTER TABLE rooms DROP PERIOD IF EXISTS FOR p',
      'CREATE OR REPLACE TABLE rooms (\n room_number INT,\n guest_name VARCHAR(255),\n checkin DATE,\n checkout DATE,\n PERIOD FOR p(checkin,checkout)\n )',
      'CREATE OR REPLACE TABLE rooms (\n room_number INT,\n guest_name VARCHAR(255),\n checkin DATE,\n checkout DATE,\n PERIOD FOR p(checkin,checkout),\n UNIQUE (room_number, p WITHOUT OVERLAPS)\n )',
      'CREATE TABLE `t2` (\n  `id` int(11) DEFAULT NULL,\n  `d1` datetime DEFAULT NULL,\n  `d2` datetime DEFAULT NULL\n) ENGINE=InnoDB DEFAULT CHARSET=latin1',
      'ALTER TABLE t2 ADD PERIOD FOR p(d1,d2)',
      'CREATE OR REPLACE TABLE `t2` (\n  `id` int(11) DEFAULT NULL,\n  `d1` datetime DEFAULT NULL,\n  `d2` datetime DEFAULT NULL\n) ENGINE=InnoDB DEFAULT CHARSET=latin1',
      'ALTER TABLE t2 ADD PERIOD FOR p(d1,d2)',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/sql-structure/temporal-tables/system-versioned-tables',
    statements: [
      'CREATE TABLE t(\n   x INT,\n   start_timestamp TIMESTAMP(6) GENERATED ALWAYS AS ROW START,\n   end_timestamp TIMESTAMP(6) GENERATED ALWAYS AS ROW END,\n   PERIOD FOR SYSTEM_TIME(start_timestamp, end_timestamp)\n) WITH SYSTEM VERSIONING',
      'CREATE OR REPLACE TABLE t1 (x INT) WITH SYSTEM VERSIONING',
      'SET system_versioning_alter_history = keep',
      'CREATE OR REPLACE TABLE t1 (x INT) WITH SYSTEM VERSIONING',
      'SET system_versioning_alter_history = keep',
      "SET @@timestamp = UNIX_TIMESTAMP('2033-10-24')",
      'SET @@timestamp = default',
      'CREATE OR REPLACE TABLE t (x INT) WITH SYSTEM VERSIONING',
      'CREATE OR REPLACE TABLE t (a int) WITH SYSTEM VERSIONING',
      "SET @@timestamp = UNIX_TIMESTAMP('2033-03-03')",
      'SET @@timestamp = default',
      'CREATE OR REPLACE TABLE t (a int) WITH SYSTEM VERSIONING',
      "SET @@timestamp = UNIX_TIMESTAMP('2033-03-03')",
      'SET @@timestamp = default',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-check_constraints-table',
    statements: [
      'CREATE TABLE t ( a INT, CHECK (a>10))',
      'ALTER TABLE t ADD CONSTRAINT a_upper CHECK (a<100)',
      'CREATE TABLE tt(b INT CHECK(b>0),CONSTRAINT b_upper CHECK(b<50))',
      'ALTER TABLE t DROP CONSTRAINT CONSTRAINT_1',
      'CREATE TABLE majra(CHECK(x>0), x INT, y INT CHECK(y < 0), z INT,\n                              CONSTRAINT z CHECK(z>0), CONSTRAINT xyz CHECK(x<10 AND y<10 AND z<10))',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-columns-table',
    statements: [
      "CREATE TABLE t (\n  s1 VARCHAR(20) DEFAULT 'ABC',\n  s2 VARCHAR(20) DEFAULT (concat('A','B')),\n  s3 VARCHAR(20) DEFAULT (\"concat('A','B')\"),\n  s4 VARCHAR(20),\n  s5 VARCHAR(20) DEFAULT NULL,\n  s6 VARCHAR(20) NOT NULL,\n  s7 VARCHAR(20) DEFAULT 'NULL' NULL,\n  s8 VARCHAR(20) DEFAULT 'NULL' NOT NULL\n)",
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-geometry_columns-table',
    statements: ['CREATE TABLE g1(g GEOMETRY(9,4) REF_SYSTEM_ID=101)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-innodb-tables/information-schema-temp_tables_info-table',
    statements: ['CREATE TEMPORARY TABLE t (i INT) ENGINE=INNODB'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-periods-table',
    statements: ['CREATE OR REPLACE TABLE t1(\n name VARCHAR(50),\n date_1 DATE,\n date_2 DATE,\n PERIOD FOR date_period(date_1, date_2)\n)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-sequences-table',
    statements: ['CREATE SEQUENCE s START WITH 100 INCREMENT BY 10'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-tables-table',
    statements: ['CREATE TEMPORARY TABLE foo.t1 (a INT)'],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/information-schema/information-schema-tables/information-schema-wsrep_cert_keys',
    statements: [
      'CREATE TABLE parent (f1 TINYINT PRIMARY KEY, f2 TINYINT)engine=innodb',
      'CREATE TABLE child (f1 TINYINT PRIMARY KEY, f2 TINYINT, FOREIGN KEY (f2) REFERENCES parent(f1)) engine=innodb',
    ],
  },
  {
    page: 'https://mariadb.com/docs/server/reference/system-tables/sys-schema/sys-schema-views/schema_auto_increment_columns-sys-schema-view',
    statements: ['CREATE OR REPLACE TABLE animals (\n    id TINYINT NOT NULL AUTO_INCREMENT,\n    name CHAR(30) NOT NULL,\n    PRIMARY KEY (id)\n)'],
  },
];

export const MYSQL_MANUAL: readonly ManualPage[] = [
  {
    page: 'https://dev.mysql.com/doc/refman/8.0/en/other-vendor-data-types.html',
    statements: ['CREATE TABLE t (a BOOL, b FLOAT8, c LONG VARCHAR, d NUMERIC)'],
  },
  {
    page: 'https://dev.mysql.com/doc/refman/8.0/en/create-table-generated-columns.html',
    statements: ['CREATE TABLE triangle (\n  sidea DOUBLE,\n  sideb DOUBLE,\n  sidec DOUBLE AS (SQRT(sidea * sidea + sideb * sideb))\n)'],
  },
  {
    page: 'https://dev.mysql.com/doc/refman/8.0/en/invisible-columns.html',
    statements: [
      'CREATE TABLE t1 (\n  i INT,\n  j DATE INVISIBLE\n) ENGINE = InnoDB',
      'ALTER TABLE t1 ADD COLUMN k INT INVISIBLE',
      'ALTER TABLE t1 CHANGE COLUMN j j DATE VISIBLE',
      'ALTER TABLE t1 MODIFY COLUMN j DATE INVISIBLE',
      'ALTER TABLE t1 ALTER COLUMN j SET VISIBLE',
    ],
  },
  {
    page: 'https://dev.mysql.com/doc/refman/8.0/en/data-type-defaults.html',
    statements: [
      "CREATE TABLE t1 (\n  i     INT DEFAULT -1,\n  c     VARCHAR(10) DEFAULT '',\n  price DOUBLE(16,2) DEFAULT 0.00\n)",
      "CREATE TABLE t2 (\n  -- literal defaults\n  i INT         DEFAULT 0,\n  c VARCHAR(10) DEFAULT '',\n  -- expression defaults\n  f FLOAT       DEFAULT (RAND() * RAND()),\n  b BINARY(16)  DEFAULT (UUID_TO_BIN(UUID())),\n  d DATE        DEFAULT (CURRENT_DATE + INTERVAL 1 YEAR),\n  p POINT       DEFAULT (Point(0,0)),\n  j JSON        DEFAULT (JSON_ARRAY())\n)",
      "CREATE TABLE t3 (b BLOB DEFAULT ('abc'))",
    ],
  },
  {
    page: 'https://dev.mysql.com/doc/refman/8.0/en/create-index.html',
    statements: [
      'CREATE TABLE t1 (col1 INT, col2 INT, INDEX func_index ((ABS(col1))))',
      'CREATE INDEX idx1 ON t1 ((col1 + col2))',
      'CREATE INDEX idx2 ON t1 ((col1 + col2), (col1 - col2), col1)',
      'ALTER TABLE t1 ADD INDEX ((col1 * 40) DESC)',
    ],
  },
  {
    page: 'https://dev.mysql.com/doc/refman/8.0/en/rename-table.html',
    statements: [
      'CREATE TABLE old_table (id INT)',
      'CREATE TABLE new_table (id INT)',
      'RENAME TABLE old_table TO tmp_table,\n             new_table TO old_table,\n             tmp_table TO new_table',
      'ALTER TABLE old_table RENAME newer_table',
    ],
  },
];
