import { describe, expect, it } from 'vitest';
import { type BinlogPosition, comparePositions } from '../../lib/core/position.ts';
import { BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { testSource } from '../support/source.ts';

/** The timers pending in this process (the runner's own included): what keeps it from exiting. */
const pendingTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

const startOf = async (sql: (q: string) => Promise<Record<string, unknown>[]>): Promise<BinlogPosition> => {
  const [status] = await sql('SHOW MASTER STATUS');
  return { file: String(status?.File), pos: Number(status?.Position) };
};

describe('the binlog reader', () => {
  it('pauses the connection while too many decoded rows wait, so a large transaction is never held whole', async () => {
    await using source = await testSource('readerpressure');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))');
    const start = await startOf(source.sql);
    const rows = 60_000;
    await source.sql(`INSERT INTO t SELECT seq, 'row' FROM seq_1_to_${rows}`);
    const highWaterRows = 2_000;

    const reader = new BinlogReader({ target: await mysqlTarget(source.config), start, filter: (db) => db === source.db, highWaterRows });
    try {
      // Nobody reads yet: the reader must stop the connection instead of decoding the whole transaction.
      for (let polls = 0; polls < 600 && reader.backPressure.pauses === 0 && reader.backPressure.queuedRows < rows; polls++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(reader.backPressure.pauses).toBe(1);
      // Read as the capture loop reads: what is at hand synchronously, through the iterator to wait.
      let read = 0;
      let atHand = 0;
      const items = reader[Symbol.asyncIterator]();
      for (;;) {
        let item = reader.takeReady();
        if (item) atHand++;
        else {
          const next = await items.next();
          if (next.done) break;
          item = next.value;
        }
        if (item.kind === 'rows') read += item.rows.length;
        if (item.kind === 'commit' && read > 0) break;
      }
      expect(read).toBe(rows);
      expect(atHand).toBeGreaterThan(0);
      // Never more than the bound plus what the connection had already received when it paused
      // (one socket read, at most 64 KiB: ~2,000 of these rows at most).
      expect(reader.backPressure.peakQueuedRows).toBeLessThan(2 * highWaterRows);
    } finally {
      await reader.stop();
    }
  });

  it('leaves nothing behind that would keep a process alive once stopped', async () => {
    await using source = await testSource('readerstop');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY)');
    const start = await startOf(source.sql);
    await source.sql('INSERT INTO t VALUES (1)');
    const before = pendingTimers();

    const reader = new BinlogReader({ target: await mysqlTarget(source.config), start, filter: (db) => db === source.db, idleMs: 200 });
    let rows = 0;
    for await (const item of reader) {
      if (item.kind === 'rows') rows += item.rows.length;
      if (item.kind === 'idle') break;
    }
    await reader.stop();

    expect(rows).toBe(1);
    // stop() bounds its wait for zongji with a timer: a pending one held every `capture --once` ~2 s.
    expect(pendingTimers()).toBeLessThanOrEqual(before);
  });

  it('maps a table once while its TABLE_MAPs stay byte-identical, and again at the first that differs', async () => {
    await using source = await testSource('readertablemap');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), d DECIMAL(6,2))');
    const start = await startOf(source.sql);
    const insert = (from: number, v = 'v') => Promise.all([0, 1, 2, 3, 4].map((i) => source.sql(`INSERT INTO t (id, ${v}, d) VALUES (${from + i}, 'x', 1.5)`)));
    await insert(1);
    await source.sql('ALTER TABLE t ADD COLUMN w INT NOT NULL DEFAULT 7');
    await insert(11);
    await source.sql('ALTER TABLE t CHANGE v v2 VARCHAR(10)');
    await insert(21, 'v2');

    const end = await startOf(source.sql);

    const reader = new BinlogReader({ target: await mysqlTarget(source.config), start, filter: (db) => db === source.db, idleMs: 200 });
    const seen: string[] = [];
    // Read to the end of our writes (not to the first quiet moment: other tests write meanwhile).
    for await (const item of reader) {
      if (item.kind === 'rows')
        for (const row of item.rows as Record<string, unknown>[])
          seen.push(
            `${row.id}:${Object.entries(row)
              .map(([k, v]) => `${k}=${v}`)
              .join(',')}`,
          );
      if ((item.kind === 'commit' || item.kind === 'progress') && comparePositions(item.position, end) >= 0) break;
    }
    await reader.stop();

    // Values too: a reused TABLE_MAP keeps the columns' raw decoding (DECIMAL as exact text).
    const columns = (from: number, names: string[]) =>
      [0, 1, 2, 3, 4].map((i) => `${from + i}:${names.map((n) => `${n}=${{ id: from + i, v: 'x', v2: 'x', d: '1.50', w: 7 }[n]}`).join(',')}`);
    expect(seen.sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10))).toEqual([
      ...columns(1, ['id', 'v', 'd']),
      ...columns(11, ['id', 'v', 'd', 'w']),
      ...columns(21, ['id', 'v2', 'd', 'w']),
    ]);
    // Five single-row transactions per structure: the first TABLE_MAP of each is mapped, four reused
    // (fewer if the server gave the table a new id meanwhile, evicting it from its table cache).
    expect(reader.reusedTableMaps).toBeGreaterThanOrEqual(6);
    expect(reader.reusedTableMaps).toBeLessThanOrEqual(12);
  });
});
