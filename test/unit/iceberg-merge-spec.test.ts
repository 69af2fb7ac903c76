import { describe, expect, it } from 'vitest';
import { spec } from '../../lib/iceberg/merge/spec.ts';
import { TableHistory } from '../../lib/materialize/history.ts';
import type { SchemaColumn, SchemaVersion } from '../../lib/schema/version.ts';

/* How the merge describes a schema version to the Iceberg layer: renames and re-created columns by sluice column id. */

const column = (id: number, name: string, type = 'int'): SchemaColumn => ({ id, name, type, kind: type === 'int' ? 'int' : 'string', nullable: true });
const version = (n: number, columns: SchemaColumn[], key: string[] | null): SchemaVersion => ({
  db: 'shop',
  table: 't',
  version: n,
  columns,
  key,
  lastColumnId: Math.max(...columns.map((c) => c.id)),
  changes: [],
  indexes: [],
});

const history = new TableHistory(
  { db: 'shop', table: 't' },
  [
    version(1, [column(1, 'id'), column(2, 'a'), column(3, 'b', 'varchar(5)')], ['id']),
    // a renamed to c (same id), b dropped and added again (new id 4), d added.
    version(2, [column(1, 'id'), column(2, 'c'), column(4, 'b', 'varchar(9)'), column(5, 'd')], ['id']),
    version(3, [column(6, 'x', 'varchar(1)')], null),
  ],
  true,
);

describe('the merge’s table spec', () => {
  it('maps renames and re-created columns by column id between the Iceberg table’s version and the target', () => {
    const s = spec(history, 'p/iceberg/shop/t', 2, 1);
    expect(s.columns.map((c) => [c.name, c.sqlType])).toEqual([
      ['id', 'int'],
      ['c', 'int'],
      ['b', 'varchar(9)'],
      ['d', 'int'],
    ]);
    expect(s.key).toEqual(['id']);
    expect([...(s.renamed ?? [])]).toEqual([['c', 'a']]);
    expect([...(s.recreated ?? [])]).toEqual(['b']);
  });

  it('gives a first version, or a new table under the name, no carried identity', () => {
    expect(spec(history, 'l', 1, undefined)).toMatchObject({ key: ['id'], renamed: new Map(), recreated: new Set() });
    expect([...(spec(history, 'l', 2, 1, true).recreated ?? [])]).toEqual(['id', 'c', 'b', 'd']);
    expect(spec(history, 'l', 3, 2).key).toEqual([]);
  });
});
