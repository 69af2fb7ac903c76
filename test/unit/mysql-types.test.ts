import { describe, expect, it } from 'vitest';
import { MysqlType } from '../../lib/core/mysql-types.ts';
import { binlogColumn } from '../../lib/format/binlog-columns.ts';
import { tableMapType } from '../../lib/schema/column-type.ts';

describe('the one table of column type codes (lib/core/mysql-types.ts)', () => {
  it("has MariaDB's COMPRESSED codes as mysql_com.h does: 140 BLOB/TEXT, 141 VARCHAR/VARBINARY", () => {
    expect(MysqlType.BLOB_COMPRESSED).toBe(140);
    expect(MysqlType.VARCHAR_COMPRESSED).toBe(141);
  });

  it('is the table the format and the schema vocabulary read a TABLE_MAP column with', () => {
    const varchar = { name: 'v', type: MysqlType.VARCHAR_COMPRESSED, metadata: { max_length: 11 }, charset: null };
    const text = { name: 't', type: MysqlType.BLOB_COMPRESSED, metadata: { length_size: 2 }, charset: 'utf8mb4' };
    expect(tableMapType(varchar)).toEqual({ base: 'varbinary', length: 10 });
    expect(binlogColumn(varchar).sqlType).toBe('varbinary');
    expect(tableMapType(text)).toEqual({ base: 'text', charset: 'utf8mb4' });
    expect(binlogColumn(text).sqlType).toBe('text');
  });

  it('keeps the codes MySQL and MariaDB share', () => {
    expect([MysqlType.TIME2, MysqlType.VECTOR, MysqlType.JSON, MysqlType.NEWDECIMAL, MysqlType.GEOMETRY]).toEqual([19, 242, 245, 246, 255]);
  });
});
