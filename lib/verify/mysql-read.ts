import { type Config, keyColumn } from '../config/config.ts';
import { type BinlogPosition, comparePositions } from '../core/position.ts';
import { formatTableRef, tableKey } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { encodeKey, encodeRow, encodeShape } from '../format/event.ts';
import { BinlogReader } from '../source/mysql/binlog-reader.ts';
import { tableInfo } from '../source/mysql/schema.ts';
import type { pagingConnection } from '../source/mysql/snapshot-reader.ts';
import type { MysqlTarget } from '../source/mysql/target.ts';
import { jsonLine, lineFile } from './files.ts';

type Reader = ReturnType<typeof pagingConnection>;

/** Opens one consistent-snapshot transaction on `reader` and returns the binlog position S it reads at. */
export async function readAtKnownPosition(reader: Reader): Promise<BinlogPosition> {
  await reader.sql.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
  const [status] = await reader.sql.query("SHOW STATUS LIKE 'binlog_snapshot_%'");
  const vars = Object.fromEntries((status as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name.toLowerCase(), r.Value]));
  if (!vars.binlog_snapshot_file)
    throw new SluiceError(
      ErrorCode.VERIFY_UNSUPPORTED,
      'the server does not report binlog_snapshot_file (MariaDB does); verify needs it to read MySQL at a known binlog position',
    );
  return { file: vars.binlog_snapshot_file, pos: Number(vars.binlog_snapshot_position) };
}

/** Writes `{tbl, k}` lines (`tbl` = the `tableKey`) for every key of `tables` (a set of `tableKey`s) changed between `from` (the output's position) and `to` (the MySQL read's): keys the two sides cannot both reflect. */
export async function writeChangedKeys(
  target: MysqlTarget,
  from: BinlogPosition | undefined,
  to: BinlogPosition,
  tables: Set<string>,
  file: string,
): Promise<void> {
  const out = lineFile(file);
  await out.write(jsonLine({ tbl: '""', k: 'null' }));
  if (from && comparePositions(from, to) < 0) {
    const scan = new BinlogReader({ target, start: from, filter: (db, table) => tables.has(tableKey({ db, table })), idleMs: 500 });
    try {
      for await (const item of scan) {
        if (item.kind === 'rows') {
          const rows = item.op === 'update' ? item.rows.flatMap((r) => [r.before, r.after]) : item.rows;
          for (const row of rows) await out.write(jsonLine({ tbl: JSON.stringify(tableKey(item.shape)), k: encodeKey(item.shape, row) }));
        }
        if ((item.kind === 'commit' || item.kind === 'progress') && comparePositions(item.position, to) >= 0) break;
        if (item.kind === 'idle') break;
      }
    } finally {
      await scan.stop();
    }
  }
  await out.close();
}

/** Writes a table's rows as `{k, a}` lines in the format's exact encoding (inside the snapshot transaction); returns how many. */
export async function writeTableRows(reader: Reader, config: Config, db: string, table: string, file: string): Promise<number> {
  const info = await tableInfo(reader.sql, db, table, keyColumn(config, { db, table }));
  if (!info.key.length)
    throw new SluiceError(ErrorCode.SNAPSHOT_NO_KEY, `table ${formatTableRef({ db, table })} has no primary key; verify compares keyed tables only (yet)`);
  const shape = encodeShape({ db, table, columns: info.columns, key: info.key.map((k) => info.columns.findIndex((c) => c.name === k)) });
  const out = lineFile(file);
  let rows = 0;
  for await (const page of reader.page(info, null, null, 1_000_000_000)) {
    for (const row of page) {
      await out.write(jsonLine({ k: encodeKey(shape, row), a: encodeRow(shape, row) }));
      rows++;
    }
  }
  await out.close();
  return rows;
}
