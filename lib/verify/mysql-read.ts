import { type BinlogPosition, comparePositions, formatPosition } from '../core/position.ts';
import { type TableRef, tableKey } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { encodeKey, encodeRow, encodeShape } from '../format/event.ts';
import { BinlogReader } from '../source/mysql/binlog-reader.ts';
import { SCAN_SILENCE_MS } from '../source/mysql/binlog-scan.ts';
import { classifyDdl } from '../source/mysql/ddl/classify.ts';
import { dialectOf } from '../source/mysql/dialect/dialect.ts';
import { tableInfo } from '../source/mysql/schema.ts';
import type { serverTraits } from '../source/mysql/schema-read.ts';
import type { pagingConnection } from '../source/mysql/snapshot-reader.ts';
import type { MysqlTarget } from '../source/mysql/target.ts';
import { lineFile } from './files.ts';

type Reader = ReturnType<typeof pagingConnection>;

/**
 * Makes the reads of `tables` on `reader` see them at one binlog position S (a consistent-snapshot
 * transaction, or on MySQL without RELOAD read locks on them) and returns S and what ends it.
 */
export async function readAtKnownPosition(
  reader: Pick<Reader, 'sql'>,
  tables: readonly TableRef[],
): Promise<{ position: BinlogPosition; end: () => Promise<void> }> {
  const point = await (await dialectOf(reader.sql)).snapshotPoint(reader.sql, tables);
  if ('refused' in point)
    throw new SluiceError(
      ErrorCode.VERIFY_UNSUPPORTED,
      `verify reads MySQL in one transaction at a known binlog position, which this server cannot give: ${point.refused}`,
    );
  return { position: point.position, end: point.end };
}

/** What changed between the output's position and the MySQL read. */
export interface Changing {
  /** Tables (tableKey) a DDL touched, or every table when a statement could not be attributed. */
  readonly ddl: Set<string>;
  readonly all: boolean;
  /** Longest line written to the changes file. */
  readonly longest: number;
}

/**
 * Writes, for every row of `tables` changed between `from` (the output's position) and `to` (the
 * MySQL read's), a line `tbl \x01 key \x01 row` (the table as tableKey, the key as the binlog's
 * shape names it, the full row): rows and keys the two sides cannot both reflect. DDL in the
 * window is classified to the tables it touches: their structure differs between the two sides.
 */
export async function writeChanges(
  target: MysqlTarget,
  range: { from: BinlogPosition | undefined; to: BinlogPosition },
  tables: Set<string>,
  file: string,
  traits: Awaited<ReturnType<typeof serverTraits>>,
): Promise<Changing> {
  const out = lineFile(file);
  const ddl = new Set<string>();
  let all = false;
  let longest = 0;
  const write = async (line: string) => {
    longest = Math.max(longest, Buffer.byteLength(line));
    await out.write(line);
  };
  await write('\x01null\x01null\n'); // never empty: read_csv wants a line
  if (range.from && comparePositions(range.from, range.to) < 0) {
    const scan = new BinlogReader({ target, start: range.from, filter: (d, t) => tables.has(tableKey({ db: d, table: t })), idleMs: 500 });
    let heardAt = Date.now();
    try {
      for await (const item of scan) {
        if (item.kind === 'idle') {
          // Past `range.to` without a boundary on it (the last group is open): all of it was read.
          if (comparePositions(scan.streamPosition, range.to) >= 0) break;
          // The events up to `range.to` are in the binlog: a pause before it is a slow server, and
          // stopping there would leave later changes out of the list verify skips.
          if (Date.now() - heardAt < SCAN_SILENCE_MS) continue;
          throw new SluiceError(
            ErrorCode.BINLOG_STREAM,
            `the binlog stream stopped before ${formatPosition(range.to)} for ${SCAN_SILENCE_MS / 1000} s while listing the changes verify skips; run verify again`,
            { retriable: true },
          );
        }
        heardAt = Date.now();
        if (item.kind === 'rows') {
          const rows = item.op === 'update' ? item.rows.flatMap((r) => [r.before, r.after]) : item.rows;
          const tbl = tableKey(item.shape);
          for (const row of rows) await write(`${tbl}\x01${encodeKey(item.shape, row)}\x01${encodeRow(item.shape, row)}\n`);
        }
        if (item.kind === 'query' && item.ddl) {
          const c = await classifyDdl(item.query, {
            defaultDb: item.db,
            comments: traits.comments,
            lowerCaseTableNames: traits.lowerCaseTableNames,
            ...item.sqlMode,
          });
          if (c.kind === 'tables') for (const e of c.effects) if (e.change.kind !== 'noop') ddl.add(tableKey(e.table));
          if (c.kind === 'database' && c.op === 'drop') for (const t of tables) if ((JSON.parse(t) as string[])[0] === c.db) ddl.add(t);
          if (c.kind === 'unknown') {
            if (c.tables) for (const t of c.tables) ddl.add(tableKey(t));
            else all = true;
          }
        }
        if ((item.kind === 'commit' || item.kind === 'progress') && comparePositions(item.position, range.to) >= 0) break;
      }
    } finally {
      await scan.stop();
    }
  }
  await out.close();
  return { ddl, all, longest };
}

/** A table as MySQL holds it inside the snapshot transaction. */
export interface MysqlTable {
  readonly rows: number;
  readonly columns: readonly string[];
  /** The key columns the lines' keys are made of; null when compared as a multiset. */
  readonly key: readonly string[] | null;
  readonly longest: number;
}

/**
 * Writes a table's rows as `key \x01 row` lines in the format's exact encoding (the snapshot's own
 * code), keyed by `key` (the output's key columns) when MySQL has them all; returns what it wrote.
 */
export async function writeTableRows(reader: Reader, table: TableRef, key: readonly string[] | null, file: string): Promise<MysqlTable> {
  const info = await tableInfo(reader.sql, table.db, table.table);
  const names = info.columns.map((c) => c.name);
  const ownKey = key?.every((k) => names.includes(k)) ? key : null;
  const shape = encodeShape({ ...table, columns: info.columns, key: ownKey?.map((k) => names.indexOf(k)) ?? null });
  const out = lineFile(file);
  let rows = 0;
  let longest = 0;
  for await (const page of reader.page(info, null, null, Number.MAX_SAFE_INTEGER)) {
    for (const row of page) {
      const line = `${encodeKey(shape, row)}\x01${encodeRow(shape, row)}\n`;
      longest = Math.max(longest, Buffer.byteLength(line));
      await out.write(line);
      rows++;
    }
  }
  await out.close();
  return { rows, columns: names, key: ownKey, longest };
}
