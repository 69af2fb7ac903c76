import { describe, expect, it } from 'vitest';
import type { BinlogPosition } from '../../lib/core/position.ts';
import { BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { testSource } from '../support/source.ts';

/** The timers pending in this process (the runner's own included): what keeps it from exiting. */
const pendingTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

describe('the binlog reader', () => {
  it('leaves nothing behind that would keep a process alive once stopped', async () => {
    await using source = await testSource('readerstop');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY)');
    const [status] = await source.sql('SHOW MASTER STATUS');
    const start: BinlogPosition = { file: String(status?.File), pos: Number(status?.Position) };
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
});
