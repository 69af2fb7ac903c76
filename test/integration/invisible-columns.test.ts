import { describe, expect, it } from 'vitest';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { fold, loadHistory, mysqlRows } from '../support/fold.ts';
import { testSource } from '../support/source.ts';

/*
 * INVISIBLE columns (MariaDB 10.3+, MySQL 8.0.23+, and MySQL's generated invisible primary key
 * `my_row_id`) are in every binlog row image but not in `SELECT *`: the snapshot names every
 * column, so snapshot rows and stream rows of one table carry the same columns, and the schema
 * history holds the invisible ones.
 */

describe('invisible columns (real stack)', () => {
  it('snapshot rows and stream rows carry the same columns, invisible ones included', async () => {
    await using source = await testSource('invisible', { SLUICE_STARTUP: 'initial' });
    await source.sql("CREATE TABLE inv (id INT PRIMARY KEY, v VARCHAR(5), h INT INVISIBLE DEFAULT 7); INSERT INTO inv (id, v, h) VALUES (1,'a',10),(2,'b',20)");
    await source.capture();
    expect((await source.snapshot()).complete).toBe(true);
    await source.sql(
      "INSERT INTO inv (id, v) VALUES (3,'c'); UPDATE inv SET h = 21 WHERE id = 2; ALTER TABLE inv ADD COLUMN h2 VARCHAR(3) INVISIBLE DEFAULT 'z'; INSERT INTO inv (id, v, h, h2) VALUES (4,'d',40,'y')",
    );
    await source.capture();

    const events = (await source.events()).filter((e) => e.table === 'inv');
    const columns = (op: string) => [...new Set(events.filter((e) => e.op === op).map((e) => Object.keys(e.after ?? {}).join(',')))];
    expect(columns('r')).toEqual(['id,v,h']);
    expect(columns('c')).toEqual(['id,v,h', 'id,v,h,h2']);
    expect(events.filter((e) => e.op === 'r').map((e) => e.after?.h)).toEqual([10, 20]);
    expect(events.filter((e) => e.op === 't').map((e) => e.ddl?.kind)).toEqual([]);
    const history = await loadHistory(source.clients.s3, source.config.bucket, source.config.prefix, source.config.sourceId, source.db, 'inv');
    expect([...history.values()].map((v) => v.columns.map((c) => c.name).join(','))).toEqual(['id,v,h', 'id,v,h,h2']);
    expect(fold(events, history)).toEqual(await mysqlRows(await mysqlTarget(source.config), source.db, 'inv'));
  });
});
