import { describe, expect, it } from 'vitest';
import { evolve, type SchemaVersion } from '../../lib/schema/version.ts';
import { classifyDdl } from '../../lib/source/mysql/ddl/classify.ts';

const ctx = { defaultDb: 'd', serverVersion: 101119 };
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
