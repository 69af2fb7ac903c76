import { describe, expect, it } from 'vitest';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { fold, loadHistory, mysqlRows } from '../support/fold.ts';
import { testSource } from '../support/source.ts';

/*
 * MariaDB system-versioned tables (docs/FORMAT.md, "System-versioned tables"): the binlog carries
 * every row version — an UPDATE logs the current row's update and an insert of its history row, a
 * DELETE an update that ends the row's period — and the change log mirrors the current rows: what
 * `SELECT * FROM t` returns, with declared period columns as columns and hidden ones left out.
 */

describe('system-versioned tables (real MariaDB)', () => {
  it('the change log materializes to the current rows, not the history the binlog also carries', async () => {
    await using source = await testSource('sysver', { SLUICE_STARTUP: 'initial' });
    await source.sql(
      `CREATE TABLE sv (id INT PRIMARY KEY, v VARCHAR(10), w INT WITHOUT SYSTEM VERSIONING) WITH SYSTEM VERSIONING;
       CREATE TABLE svd (id INT, v INT, rs TIMESTAMP(6) GENERATED ALWAYS AS ROW START, re TIMESTAMP(6) GENERATED ALWAYS AS ROW END,
         PERIOD FOR SYSTEM_TIME (rs, re), PRIMARY KEY (id)) WITH SYSTEM VERSIONING;
       CREATE TABLE later (id INT PRIMARY KEY, v INT);
       INSERT INTO sv VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0);
       INSERT INTO svd (id, v) VALUES (1, 10), (2, 20);
       INSERT INTO later VALUES (1, 1), (2, 2);
       UPDATE sv SET v = 'a1' WHERE id = 1`,
    );
    await source.capture();
    expect((await source.snapshot()).complete).toBe(true);

    await source.sql(
      `UPDATE sv SET v = 'a2' WHERE id = 1;
       UPDATE sv SET w = 5 WHERE id = 2;
       DELETE FROM sv WHERE id = 3;
       INSERT INTO sv VALUES (4, 'd', 0), (3, 'c again', 1);
       UPDATE sv SET id = 40 WHERE id = 4;
       DELETE HISTORY FROM sv BEFORE SYSTEM_TIME NOW(6);
       UPDATE svd SET v = v + 1;
       DELETE FROM svd WHERE id = 2;
       INSERT INTO svd (id, v) VALUES (3, 30);
       ALTER TABLE later ADD SYSTEM VERSIONING;
       UPDATE later SET v = 11 WHERE id = 1;
       DELETE FROM later WHERE id = 2;
       INSERT INTO later VALUES (3, 3)`,
    );
    await source.capture();
    await source.sql('ALTER TABLE later DROP SYSTEM VERSIONING; UPDATE later SET v = 12 WHERE id = 1; INSERT INTO later VALUES (4, 4)');
    await source.capture();

    const events = await source.events();
    const target = await mysqlTarget(source.config);
    for (const table of ['sv', 'svd', 'later']) {
      const mine = events.filter((e) => e.table === table);
      const history = await loadHistory(source.clients.s3, source.config.bucket, source.config.prefix, source.config.sourceId, source.db, table);
      expect(fold(mine, history), table).toEqual(await mysqlRows(target, source.db, table));
      // Hidden period columns are in every binlog row image but in no event.
      if (table !== 'svd')
        expect(
          mine.flatMap((e) => Object.keys({ ...e.before, ...e.after })),
          table,
        ).not.toContain('row_end');
      // No event wrote a row whose period had ended.
      expect(
        mine.filter((e) => e.after && e.op !== 'd' && 're' in e.after && !String(e.after.re).startsWith('2038-01-19T03:14:07')),
        table,
      ).toEqual([]);
    }
    // The history sluice left out is there: MariaDB kept it.
    const [counted] = await source.sql('SELECT (SELECT COUNT(*) FROM sv FOR SYSTEM_TIME ALL) AS sv, (SELECT COUNT(*) FROM svd FOR SYSTEM_TIME ALL) AS svd');
    expect(Number(counted?.svd)).toBeGreaterThan(3);
    const svdRows = await mysqlRows(target, source.db, 'svd');
    expect(svdRows).toHaveLength(2);
    // Updates of current rows are updates (the key is the declared one, not the key MariaDB logs with the row end).
    expect(events.filter((e) => e.table === 'sv' && e.op === 'u').map((e) => e.key)).toEqual([{ id: 1 }, { id: 2 }]);
    expect(events.filter((e) => e.op === 't').map((e) => `${e.table} ${e.ddl?.kind}`)).toEqual([]);
  });
});
