import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Column } from '../../lib/format/types.ts';
import { evolveSchema, IncompatibleTypeChangeError, parquetName } from '../../lib/iceberg/files/schema.ts';
import { canPromote, typeMapping } from '../../lib/iceberg/files/types.ts';

const column = (name: string, kind: Column['kind'], sqlType: string): Column => ({ name, kind, sqlType });

describe('Iceberg type mapping', () => {
  it('maps every sluice column to the Iceberg type docs/ICEBERG.md promises', () => {
    const cases: [Column, string][] = [
      [column('a', 'int', 'tinyint unsigned'), 'int'],
      [column('a', 'int', 'mediumint'), 'int'],
      [column('a', 'int', 'int'), 'int'],
      [column('a', 'int', 'int unsigned'), 'long'],
      [column('a', 'int', 'bigint'), 'long'],
      [column('a', 'int', 'bigint unsigned'), 'decimal(20,0)'],
      [column('a', 'decimal', 'decimal(38,10)'), 'decimal(38,10)'],
      [column('a', 'decimal', 'decimal(65,30)'), 'string'],
      [column('a', 'float', 'float'), 'float'],
      [column('a', 'double', 'double'), 'double'],
      [column('a', 'year', 'year'), 'int'],
      [column('a', 'bit', 'bit(63)'), 'long'],
      [column('a', 'bit', 'bit(64)'), 'decimal(20,0)'],
      [column('a', 'date', 'date'), 'date'],
      [column('a', 'datetime', 'datetime(6)'), 'timestamp'],
      [column('a', 'timestamp', 'timestamp(3)'), 'timestamptz'],
      [column('a', 'time', 'time(6)'), 'string'],
      [column('a', 'string', 'json'), 'string'],
      [column('a', 'string', 'enum'), 'string'],
      [column('a', 'binary', 'blob'), 'binary'],
      [column('a', 'binary', 'geometry'), 'binary'],
    ];
    for (const [c, iceberg] of cases) expect([c.sqlType, typeMapping(c).iceberg]).toEqual([c.sqlType, iceberg]);
    // The user-facing table says the same for the types it names.
    const doc = readFileSync('docs/ICEBERG.md', 'utf8');
    for (const [mysql, iceberg] of [
      ['BIGINT UNSIGNED', 'decimal(20,0)'],
      ['INT UNSIGNED', 'long'],
      ['DATETIME(n)', 'timestamp'],
      ['TIMESTAMP(n)', 'timestamptz'],
      ['TIME(n)', 'string'],
      ['JSON', 'string'],
      ['BINARY, VARBINARY, BLOB', 'binary'],
    ])
      expect(doc).toContain(`| ${mysql} | ${iceberg} |`);
  });

  it('allows only the promotions the spec allows', () => {
    expect(canPromote('int', 'long')).toBe(true);
    expect(canPromote('float', 'double')).toBe(true);
    expect(canPromote('decimal(10,2)', 'decimal(12,2)')).toBe(true);
    expect(canPromote('decimal(10,2)', 'decimal(12,3)')).toBe(false);
    expect(canPromote('decimal(12,2)', 'decimal(10,2)')).toBe(false);
    expect(canPromote('long', 'decimal(20,0)')).toBe(false);
    expect(canPromote('long', 'int')).toBe(false);
    expect(canPromote('int', 'string')).toBe(false);
  });

  it('names Parquet columns as Iceberg Java does', () => {
    expect(parquetName('order-id')).toBe('order_x2Did');
    expect(parquetName('1st')).toBe('_1st');
    expect(parquetName('ok_name9')).toBe('ok_name9');
    expect(parquetName('prix €')).toBe('prix_x20_x20AC');
  });
});

describe('Iceberg schema evolution', () => {
  const v1 = evolveSchema(undefined, [column('id', 'int', 'int'), column('name', 'string', 'varchar'), column('price', 'decimal', 'decimal(10,2)')], ['id']);

  it('numbers a new table from 1, with the key required and as identifier', () => {
    expect(v1.schema.fields.map((f) => [f.id, f.name, f.type, f.required])).toEqual([
      [1, 'id', 'int', true],
      [2, 'name', 'string', false],
      [3, 'price', 'decimal(10,2)', false],
    ]);
    expect(v1.schema['identifier-field-ids']).toEqual([1]);
    expect(v1.lastColumnId).toBe(3);
    expect(v1.changed).toBe(false);
  });

  it('keeps ids across renames and promotions, gives new columns new ids, never reuses a dropped id', () => {
    const v2 = evolveSchema(
      v1,
      [column('id', 'int', 'bigint'), column('title', 'string', 'varchar'), column('price', 'decimal', 'decimal(12,2)'), column('added', 'date', 'date')],
      ['id'],
      { renamed: new Map([['title', 'name']]) },
    );
    expect(v2.schema.fields.map((f) => [f.id, f.name, f.type])).toEqual([
      [1, 'id', 'long'],
      [2, 'title', 'string'],
      [3, 'price', 'decimal(12,2)'],
      [4, 'added', 'date'],
    ]);
    expect(v2.changed).toBe(true);
    expect(v2.schema['schema-id']).toBe(1);
    const v3 = evolveSchema(v2, [column('id', 'int', 'bigint'), column('price', 'decimal', 'decimal(12,2)'), column('title', 'string', 'varchar')], ['id']);
    expect(v3.dropped).toEqual(['added']);
    const v4 = evolveSchema(
      v3,
      [column('id', 'int', 'bigint'), column('price', 'decimal', 'decimal(12,2)'), column('title', 'string', 'varchar'), column('added', 'date', 'date')],
      ['id'],
    );
    expect(v4.schema.fields.find((f) => f.name === 'added')?.id).toBe(5);
    expect(v4.lastColumnId).toBe(5);
  });

  it('treats a column dropped and added again as new', () => {
    const v2 = evolveSchema(v1, [column('id', 'int', 'int'), column('name', 'string', 'varchar'), column('price', 'decimal', 'decimal(10,2)')], ['id'], {
      recreated: new Set(['name']),
    });
    expect(v2.schema.fields.map((f) => f.id)).toEqual([1, 4, 3]);
  });

  it('refuses a type change Iceberg cannot promote, unless the table is rewritten', () => {
    const unsigned = [column('id', 'int', 'int'), column('name', 'string', 'varchar'), column('price', 'int', 'bigint unsigned')];
    expect(() => evolveSchema(v1, unsigned, ['id'])).toThrow(IncompatibleTypeChangeError);
    const rewritten = evolveSchema(v1, unsigned, ['id'], { allowIncompatible: true });
    expect(rewritten.replaced).toEqual(['price']);
    expect(rewritten.schema.fields.find((f) => f.name === 'price')).toMatchObject({ id: 4, type: 'decimal(20,0)' });
  });
});
