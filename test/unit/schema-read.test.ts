import { describe, expect, it } from 'vitest';
import { statementsBetween } from '../../lib/source/mysql/schema-read.ts';
import type { SqlConnection } from '../../lib/source/mysql/server.ts';

const G = 2 ** 32;

/**
 * A server whose binlog.000002 runs past 4 GiB: SHOW BINLOG EVENTS prints each event's true `Pos`
 * and its header's `End_log_pos`, the end offset modulo 2^32 (as MySQL and MariaDB do), and
 * refuses a FROM that is not where an event starts.
 */
function serverPast4GiB(events: { pos: number; end: number; type: string; info: string }[]): SqlConnection {
  const size = events[events.length - 1]?.end ?? 4;
  return {
    async query(sql: string, values?: unknown[]) {
      if (sql === 'SHOW BINARY LOGS') return [[{ Log_name: 'binlog.000002', File_size: String(size) }], []];
      const [file, from] = values as [string, number];
      const at = events.findIndex((e) => e.pos === from);
      if (file !== 'binlog.000002' || at < 0)
        throw Object.assign(new Error('Error when executing command SHOW BINLOG EVENTS: Wrong offset or I/O error'), { errno: 1220 });
      const page = events.slice(at, at + 1000).map((e) => ({ Pos: e.pos, End_log_pos: e.end % G, Event_type: e.type, Info: e.info }));
      return [page, []];
    },
    end: async () => undefined,
  };
}

describe('statements logged between two positions, past 4 GiB', () => {
  it('pages through SHOW BINLOG EVENTS across 4 GiB by the true offsets, every statement once', async () => {
    const events: { pos: number; end: number; type: string; info: string }[] = [];
    let pos = G - 50_100;
    for (let i = 0; i < 2_500; i++) {
      const type = i % 100 === 0 ? 'Query' : 'Write_rows';
      const length = i === 1_000 ? 40_000 : 50; // one large event crosses 4 GiB, right at a page's start
      events.push({ pos, end: pos + length, type, info: type === 'Query' ? `use \`shop\`; ALTER TABLE t${i} ADD c INT` : '' });
      pos += length;
    }
    expect(events.some((e) => e.pos < G && e.end > G)).toBe(true);
    const found = await statementsBetween(serverPast4GiB(events), { file: 'binlog.000002', pos: G - 50_100 }, { file: 'binlog.000002', pos });
    expect(found.map((s) => s.query)).toEqual(Array.from({ length: 25 }, (_, k) => `ALTER TABLE t${k * 100} ADD c INT`));
  });
});
