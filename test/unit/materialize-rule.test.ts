import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEventsSql } from '../../lib/materialize/events.ts';
import { TableHistory } from '../../lib/materialize/history.ts';
import { materializeRule } from '../../lib/materialize/rule.ts';
import { referenceFold } from '../support/rule-reference.ts';
import { eventFiles, random, versionsFrom, workload } from '../support/rule-workload.ts';

let duck: DuckDBConnection;
let work: string;
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sluice-rule-'));
  duck = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();
});
afterAll(() => {
  duck.closeSync();
  rmSync(work, { recursive: true, force: true });
});

const sorted = (rows: string[]) => [...rows].sort();

/** An event line as sluice writes it (format v2). */
function line(op: string, seq: number, schema: number | null, images: { before?: string; after?: string; kind?: string } = {}): string {
  const ddl = images.kind ? `,"ddl":{"kind":"${images.kind}","position":{"file":"binlog.000001","pos":${seq}}}` : '';
  return `{"op":"${op}","db":"shop","table":"t","key":null,"before":${images.before ?? 'null'},"after":${images.after ?? 'null'},"source":{"file":"binlog.000001","pos":${seq},"gtid":null,"server_id":1,"ts_ms":0,"txn":"x","snapshot":false},"seq":"0000000001.${String(seq).padStart(12, '0')}.0000000000"${schema === null ? '' : `,"schema":${schema}`}${ddl}}`;
}

/** Materializes `lines` (one object) with the history of `statements`; `starts`: each version's seq in the history. */
async function run(statements: string[], lines: string[], name: string, starts: number[] = []) {
  const seqOf = (n: number) => `0000000001.${String(n).padStart(12, '0')}.0000000000`;
  const versions = (await versionsFrom(statements)).map((v, i) => (starts[i] === undefined ? v.version : { ...v.version, seq: seqOf(starts[i]) }));
  await duck.run(loadEventsSql('ev', await eventFiles(lines, join(work, name), 1, 1)));
  return materializeRule(duck, new TableHistory({ db: 'shop', table: 't' }, versions, true), 'ev', 'm');
}

async function stateRows(table: string): Promise<string[]> {
  const rows = (await duck.runAndReadAll(`SELECT row, n FROM ${table}`)).getRowObjects();
  return rows.flatMap((r) => Array.from({ length: Number(r.n) }, () => String(r.row)));
}

describe('the materialization rule (DuckDB) against an independent fold and the simulated table', () => {
  it('projects rows written under older versions byte for byte: fills, renames by id, drops, re-rendered widenings, column order', async () => {
    const r1 = '{"id":1,"d":"12.50","dt":"2024-01-02 03:04:05","ts":"2024-01-02T03:04:05Z","tm":"-838:59:59","f":-0,"name":"a,\\"b\\":1","junk":"x"}';
    const r2 = '{"id":2,"d":null,"dt":null,"ts":"0000-00-00 00:00:00","tm":"00:00:01","f":3.4028235e+38,"name":"é😀}","junk":null}';
    const r3 = '{"ch":"app","id":3,"price":"2.00000","d":"-0.0001","dt":"2025-01-01 00:00:00.123","ts":null,"tm":"12:00:00.5","f":1e-45,"na,\\"me":""}';
    const result = await run(
      [
        'CREATE TABLE t (id INT PRIMARY KEY, d DECIMAL(10,2), dt DATETIME, ts TIMESTAMP NULL, tm TIME, f DOUBLE, name VARCHAR(10), junk TEXT)',
        "ALTER TABLE t ADD COLUMN ch VARCHAR(8) DEFAULT 'web' FIRST",
        'ALTER TABLE t MODIFY d DECIMAL(12,4), MODIFY dt DATETIME(3), MODIFY ts TIMESTAMP(2) NULL, MODIFY tm TIME(1)',
        'ALTER TABLE t RENAME COLUMN name TO `na,"me`',
        'ALTER TABLE t DROP COLUMN junk',
        'ALTER TABLE t ADD COLUMN price DECIMAL(8,3) DEFAULT 1.5 AFTER id',
        'ALTER TABLE t MODIFY price DECIMAL(10,5)',
      ],
      [
        line('t', 1, 1, { kind: 'create' }),
        line('c', 2, 1, { after: r1 }),
        line('c', 3, 1, { after: r2 }),
        ...[2, 3, 4, 5, 6, 7].map((v) => line('s', 10 + v, v, { kind: 'alter' })),
        line('c', 20, 7, { after: r3 }),
      ],
      'bytes',
    );
    expect(result.version.columns.map((c) => c.name)).toEqual(['ch', 'id', 'price', 'd', 'dt', 'ts', 'tm', 'f', 'na,"me']);
    expect(sorted(await stateRows(result.state))).toEqual([
      '{"ch":"app","id":3,"price":"2.00000","d":"-0.0001","dt":"2025-01-01 00:00:00.123","ts":null,"tm":"12:00:00.5","f":1e-45,"na,\\"me":""}',
      '{"ch":"web","id":1,"price":"1.50000","d":"12.5000","dt":"2024-01-02 03:04:05.000","ts":"2024-01-02T03:04:05.00Z","tm":"-838:59:59.0","f":-0,"na,\\"me":"a,\\"b\\":1"}',
      '{"ch":"web","id":2,"price":"1.50000","d":null,"dt":null,"ts":"0000-00-00 00:00:00.00","tm":"00:00:01.0","f":3.4028235e+38,"na,\\"me":"é😀}"}',
    ]);
  });

  it('keeps one identity through a widened DECIMAL key, and carries rows across key changes to keyless', async () => {
    const row = (k: string, v: string, u: number) => `{"k":"${k}","v":"${v}","u":${u}}`;
    const result = await run(
      [
        'CREATE TABLE t (k DECIMAL(10,2) NOT NULL PRIMARY KEY, v VARCHAR(10), u INT NOT NULL, UNIQUE KEY uu (u))',
        'ALTER TABLE t MODIFY k DECIMAL(12,4) NOT NULL',
        'ALTER TABLE t DROP PRIMARY KEY',
        'ALTER TABLE t DROP INDEX uu',
      ],
      [
        line('t', 1, 1, { kind: 'create' }),
        line('c', 2, 1, { after: row('1.50', 'a', 1) }),
        line('c', 3, 1, { after: row('2.00', 'b', 2) }),
        line('s', 4, 2, { kind: 'alter' }),
        line('u', 5, 2, { before: row('1.5000', 'a', 1), after: row('1.5000', 'A', 1) }),
        line('d', 6, 2, { before: row('2.0000', 'b', 2) }),
        line('s', 7, 3, { kind: 'alter' }), // key: u (the unique key MariaDB promotes)
        line('c', 8, 3, { after: row('3.0000', 'c', 3) }),
        line('u', 9, 3, { before: row('1.5000', 'A', 1), after: row('1.5000', 'AA', 1) }),
        line('s', 10, 4, { kind: 'alter' }), // keyless
        line('c', 11, 4, { after: row('3.0000', 'c', 3) }),
        line('d', 12, 4, { before: row('1.5000', 'AA', 1) }),
        line('c', 13, 4, { after: row('9.0000', 'z', 9) }),
        line('d', 14, 4, { before: row('9.0000', 'z', 9) }),
        line('d', 15, 4, { before: row('9.0000', 'z', 9) }), // a copy no longer there: removes nothing
        line('c', 16, 4, { after: row('9.0000', 'z', 9) }),
      ],
      'epochs',
    );
    expect(result.plan.epochs.map((e) => e.key)).toEqual([['k'], ['u'], null]);
    expect(sorted(await stateRows(result.state))).toEqual([row('3.0000', 'c', 3), row('3.0000', 'c', 3), row('9.0000', 'z', 9)]);
    expect(result.rows).toBe(3);
  });

  it('refuses a row image that is not laid out as its version says, naming the table', async () => {
    const create = 'CREATE TABLE t (id INT PRIMARY KEY, a INT)';
    const lines = [line('c', 2, 1, { after: '{"a":1,"id":1}' })];
    await expect(run([create], lines, 'layout')).rejects.toThrow(/shop\.t: 1 row images are not laid out as their schema version says/);
  });

  it('the DuckDB query docs/FORMAT.md gives for the common case returns what the rule returns', async () => {
    const doc = readFileSync(new URL('../../docs/FORMAT.md', import.meta.url), 'utf8');
    const query = /<!-- rule-query -->\n```sql\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    expect(query).toContain('row_number()');
    const rnd = random(5);
    const lines = [line('t', 1, 1, { kind: 'create' })];
    const values = new Map<number, string>();
    for (let seq = 2; seq < 400; seq++) {
      const id = rnd.int(40);
      const now = `{"id":${id},"v":${JSON.stringify(`${rnd.pick(['a', 'b,"c":1', 'é'])}${seq}`)}}`;
      const before = values.get(id);
      if (rnd.chance(0.02)) {
        lines.push(line('t', seq, 1, { kind: 'truncate' }));
        values.clear();
      } else if (before && rnd.chance(0.3)) {
        lines.push(line('d', seq, 1, { before }));
        values.delete(id);
      } else {
        lines.push(line(before ? 'u' : rnd.pick(['c', 'r']), seq, 1, { ...(before ? { before } : {}), after: now }));
        values.set(id, now);
      }
    }
    expect(values.size).toBeGreaterThan(5);
    const result = await run(['CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))'], lines, 'doc');
    const local = await duck.runAndReadAll(query.replace(/'s3:\/\/[^']*'/, `'${join(work, 'doc', '*.jsonl.gz')}'`).replace(/;\s*$/, ''));
    const documented = local.getRowObjects().map((r) => JSON.stringify(JSON.parse(String(r.after))));
    expect(documented.sort()).toEqual([...values.values()].sort());
    expect((await stateRows(result.state)).sort()).toEqual([...values.values()].sort());
  });

  it('reads an event without `schema` (a snapshot page the poller had not stamped) in the version in effect at its seq', async () => {
    const result = await run(
      ['CREATE TABLE t (id INT PRIMARY KEY, d DECIMAL(6,1))', 'ALTER TABLE t ADD COLUMN c INT NOT NULL, MODIFY d DECIMAL(8,3)'],
      [
        line('t', 1, 1, { kind: 'create' }),
        line('r', 5, null, { after: '{"id":1,"d":"2.5"}' }),
        line('s', 10, 2, { kind: 'alter' }),
        line('r', 12, null, { after: '{"id":2,"d":"3.000","c":4}' }),
      ],
      'unstamped',
      [1, 10],
    );
    expect((await stateRows(result.state)).sort()).toEqual(['{"id":1,"d":"2.500","c":0}', '{"id":2,"d":"3.000","c":4}']);
    expect(result.statements[0]).toMatch(/^UPDATE ev SET v = CASE WHEN seq >= '0000000001\.000000000010\.0000000000' THEN 2/);
  });

  it('reports a table whose last reset dropped it as gone, with no rows; a truncate leaves it present and empty', async () => {
    const create = 'CREATE TABLE t (id INT PRIMARY KEY)';
    const dropped = await run(
      [create, 'DROP TABLE t'],
      [line('t', 1, 1, { kind: 'create' }), line('c', 2, 1, { after: '{"id":1}' }), line('t', 3, 1, { kind: 'drop' })],
      'gone',
    );
    expect([dropped.gone, dropped.rows]).toEqual([true, 0]);
    const truncated = await run(
      [create],
      [line('c', 2, 1, { after: '{"id":1}' }), line('t', 3, 1, { kind: 'truncate' }), line('c', 4, 1, { after: '{"id":2}' })],
      'trunc',
    );
    expect([truncated.gone, await stateRows(truncated.state)]).toEqual([false, ['{"id":2}']]);
  });

  it('equals both on random workloads: DML, key changes, truncates, drops, ADD/DROP/RENAME COLUMN, widenings, key changes, keyless duplicates, snapshots', async () => {
    const seeds = Array.from({ length: 24 }, (_, i) => 9000 + i);
    let checked = 0;
    let epochs = 0;
    let keyless = 0;
    for (const seed of seeds) {
      const w = await workload(seed, 150, seed % 2 ? 1 : 0.15);
      const f = await eventFiles(w.lines, join(work, `s${seed}`), 1 + (seed % 5), seed);
      await duck.run(loadEventsSql('ev', f));
      const history = new TableHistory({ db: w.db, table: w.table }, [...w.versions.values()], true);
      const result = await materializeRule(duck, history, 'ev', 'm');
      const reference = referenceFold(w.events, w.versions);
      const context = `seed ${seed}:\n${w.log.join('\n')}`;
      expect(sorted(reference.rows), context).toEqual(sorted(w.truth));
      expect(sorted(await stateRows(result.state)), context).toEqual(sorted(w.truth));
      expect(result.gone, context).toBe(w.gone);
      expect(result.plan.current, context).toBe(w.current);
      checked += w.truth.length;
      if (result.plan.epochs.length > 1 && w.truth.length) epochs++;
      if (!result.version.key && w.truth.length) keyless++;
    }
    // The workloads reach what they are meant to: many rows, key changes with rows across them, keyless tables.
    expect(checked).toBeGreaterThan(500);
    expect(epochs).toBeGreaterThan(1);
    expect(keyless).toBeGreaterThan(3);
  });
});
