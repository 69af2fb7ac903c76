import { describe, expect, it } from 'vitest';
import { type Config, loadConfig } from '../../lib/config/config.ts';
import { bucketCount } from '../../lib/iceberg/merge/rewrite.ts';
import { TableHistory } from '../../lib/materialize/history.ts';
import type { SchemaColumn, SchemaVersion } from '../../lib/schema/version.ts';

/* When a first load is split into buckets, and into how many (lib/iceberg/merge/rewrite.ts). */

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
const history = (...versions: SchemaVersion[]) => new TableHistory({ db: 'shop', table: 't' }, versions, true);
const config = (workers: number, bucketRows: number): Config => {
  const base = loadConfig({ SLUICE_SOURCE_ID: 'x', SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/', SLUICE_BUCKET: 'lake', SLUICE_STATE_TABLE: 'sluice-state' });
  return { ...base, iceberg: { ...base.iceberg, workers, bucketRows } };
};
const keyed = version(1, [column(1, 'id'), column(2, 'v', 'varchar(9)')], ['id']);

describe('bucketCount', () => {
  it('writes a load of up to SLUICE_ICEBERG_BUCKET_ROWS events whole, whatever the workers', () => {
    expect(bucketCount(config(1, 1000), 1000, history(keyed))).toBe(1);
    expect(bucketCount(config(4, 1000), 999, history(keyed))).toBe(1);
  });

  it('splits a larger one into buckets of about that many rows, at least one per worker', () => {
    expect(bucketCount(config(1, 1000), 1001, history(keyed))).toBe(2);
    expect(bucketCount(config(1, 1000), 10_500, history(keyed))).toBe(11);
    expect(bucketCount(config(4, 1000), 1001, history(keyed))).toBe(4);
  });

  it('writes keyless tables, and tables whose versions differ in columns or key, whole', () => {
    expect(bucketCount(config(2, 10), 1000, history(version(1, [column(1, 'a')], null)))).toBe(1);
    expect(bucketCount(config(2, 10), 1000, history(keyed, version(2, [column(1, 'id'), column(2, 'v', 'varchar(20)')], ['id'])))).toBe(1);
    expect(bucketCount(config(2, 10), 1000, history(keyed, version(2, [column(1, 'id'), column(2, 'v', 'varchar(9)')], ['id', 'v'])))).toBe(1);
    // A version that changed something else (same columns and key) does not stop the split.
    expect(bucketCount(config(2, 10), 1000, history(keyed, version(2, [column(1, 'id'), column(2, 'v', 'varchar(9)')], ['id'])))).toBe(100);
  });
});
