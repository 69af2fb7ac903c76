/**
 * MySQL's and MariaDB's column type codes (`enum_field_types`), the one table every layer reads: a
 * binlog TABLE_MAP's column types, the binary protocol's column definitions (snapshot rows) and
 * the schema vocabulary's binlog descriptors. MySQL's `include/field_types.h`, MariaDB's
 * `include/mysql_com.h`; the two agree but where one has a code the other lacks.
 */
export const MysqlType = {
  DECIMAL: 0,
  TINY: 1,
  SHORT: 2,
  LONG: 3,
  FLOAT: 4,
  DOUBLE: 5,
  NULL: 6,
  TIMESTAMP: 7,
  LONGLONG: 8,
  INT24: 9,
  DATE: 10,
  TIME: 11,
  DATETIME: 12,
  YEAR: 13,
  NEWDATE: 14,
  VARCHAR: 15,
  BIT: 16,
  TIMESTAMP2: 17,
  DATETIME2: 18,
  TIME2: 19,
  /** MariaDB's BLOB/TEXT … COMPRESSED, in binlog row events only (mysql_com.h `MYSQL_TYPE_BLOB_COMPRESSED= 140`). */
  BLOB_COMPRESSED: 140,
  /** MariaDB's VARCHAR/VARBINARY … COMPRESSED, in binlog row events only (mysql_com.h `MYSQL_TYPE_VARCHAR_COMPRESSED= 141`). */
  VARCHAR_COMPRESSED: 141,
  /** MySQL 9 VECTOR(n): n float32s, little-endian, stored like a BLOB. */
  VECTOR: 242,
  JSON: 245,
  NEWDECIMAL: 246,
  ENUM: 247,
  SET: 248,
  TINY_BLOB: 249,
  MEDIUM_BLOB: 250,
  LONG_BLOB: 251,
  BLOB: 252,
  VAR_STRING: 253,
  STRING: 254,
  GEOMETRY: 255,
} as const;
