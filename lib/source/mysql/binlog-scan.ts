import type { Config } from '../../config/config.ts';
import type { BinlogHistory } from '../../core/history.ts';
import { type BinlogPosition, comparePositions, formatPosition, LOG_POS_MODULUS } from '../../core/position.ts';
import { type TableRef, tableKey } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import type { Log } from '../../log.ts';
import { BinlogReader } from './binlog-reader.ts';
import { type ClassifyContext, classifyDdl, type DdlClassification } from './ddl/classify.ts';
import { dialectOf, type ScannedTransaction, type TransactionScan } from './dialect/dialect.ts';
import { BinlogHistories, checkStartPosition } from './history.ts';
import { binaryLogs, masterPosition, type SqlConnection } from './server.ts';
import { type MysqlTarget, mysqlTarget } from './target.ts';

/** How long a scan of the binlog up to a known end waits for the stream to go on before it gives up. */
export const SCAN_SILENCE_MS = 30_000;

/**
 * Scans the binlog from `start` without decoding any rows, showing `visit` each transaction as it
 * begins with the transaction boundary just before it, until `visit` returns true or the stream
 * reaches `end`. Returns the last boundary read (`end` once reached).
 */
async function scanTransactions(
  target: MysqlTarget,
  start: BinlogPosition,
  end: BinlogPosition,
  visit: (txn: ScannedTransaction, before: BinlogPosition) => boolean,
): Promise<BinlogPosition> {
  if (comparePositions(start, end) >= 0) return end;
  const reader = new BinlogReader({ target, start, filter: () => false, idleMs: 200 });
  let boundary = start;
  let heardAt = Date.now();
  try {
    for await (const item of reader) {
      if (item.kind === 'idle') {
        // Past `end` without a boundary on it (the last group is open): `boundary` is the answer.
        if (comparePositions(reader.streamPosition, end) >= 0) return boundary;
        // The events up to `end` are in the binlog: a pause before it is the server (or a loaded
        // machine) being slow, not the answer. Taking `boundary` here started a source early.
        if (Date.now() - heardAt < SCAN_SILENCE_MS) continue;
        throw new SluiceError(
          ErrorCode.BINLOG_STREAM,
          `the binlog stream stopped at ${formatPosition(boundary)}, before ${formatPosition(end)}, for ${SCAN_SILENCE_MS / 1000} s while looking for where to start; the next run tries again`,
          { retriable: true },
        );
      }
      heardAt = Date.now();
      if (item.kind === 'begin' && visit({ gtid: item.gtid, tsMs: item.tsMs, commitUs: item.commitUs }, boundary)) return boundary;
      if (item.kind === 'commit' || item.kind === 'progress') {
        boundary = item.position;
        if (comparePositions(boundary, end) >= 0) return end;
      }
    }
    return boundary;
  } finally {
    await reader.stop();
  }
}

/** `scanTransactions` on `target`'s binlog: how a dialect's GTID start (Dialect.gtidStart) reads the stream. */
export function transactionScan(target: MysqlTarget): TransactionScan {
  return (start, end, visit) => scanTransactions(target, start, end, visit);
}

/** The transaction boundary just before the first transaction `stop` accepts, or `end` if none does before it. */
async function boundaryBefore(
  target: MysqlTarget,
  start: BinlogPosition,
  end: BinlogPosition,
  stop: (txn: ScannedTransaction) => boolean,
): Promise<BinlogPosition> {
  let found: BinlogPosition | undefined;
  const last = await scanTransactions(target, start, end, (txn, before) => {
    if (!stop(txn)) return false;
    found = before;
    return true;
  });
  return found ?? last;
}

/** The first transaction time of a binlog file, or undefined if it holds none. */
async function firstTransactionTime(target: MysqlTarget, file: string, end: BinlogPosition): Promise<number | undefined> {
  let first: number | undefined;
  await boundaryBefore(target, { file, pos: 4 }, end, (txn) => {
    first = txn.tsMs;
    return true;
  });
  return first;
}

/** `timestamp:<T>`: the boundary before the first transaction at or after T (binlog times have second precision). */
async function positionAtTime(target: MysqlTarget, conn: SqlConnection, at: number): Promise<BinlogPosition> {
  const end = await masterPosition(conn);
  const logs = await binaryLogs(conn);
  let from = logs[0];
  for (const log of [...logs].reverse()) {
    const first = await firstTransactionTime(target, log.file, end);
    if (first !== undefined && first < at) {
      from = log;
      break;
    }
  }
  if (!from) return end;
  return boundaryBefore(target, { file: from.file, pos: 4 }, end, (txn) => txn.tsMs >= at);
}

/**
 * The binlog history `position` is on now: its file's creation time (the Format_description event
 * a stream from there begins with) and the server's identity. Stored with a position taken from
 * the server (a reset, a first run) before any run has read from it, so that the next run tells
 * this history from another that reuses the file's name and offsets: after RESET MASTER the server
 * starts again at the same `binlog.000001:157`, and GTIDs (MariaDB sequence numbers, MySQL's own
 * GNOs) are numbered from 1 again, so neither proves which history a position is on.
 */
export async function historyAt(target: MysqlTarget, conn: SqlConnection, position: BinlogPosition): Promise<BinlogHistory> {
  const histories = new BinlogHistories();
  await histories.checkStored(conn); // no stored position: the server's identity only
  // The server sends the file's Format_description first wherever a dump starts: from the file's
  // end no event follows to decode. A dump cannot start past 4 GiB: a longer file from its start,
  // left at its first transaction.
  const size = (await binaryLogs(conn)).find((log) => log.file === position.file)?.size;
  const from = { file: position.file, pos: size !== undefined && size < LOG_POS_MODULUS ? size : 4 };
  const reader = new BinlogReader({ target, start: from, filter: () => false, idleMs: 5, history: histories });
  const started = Date.now();
  try {
    for await (const item of reader) {
      const history = histories.of(position);
      if (history) return history;
      if (item.kind === 'idle' && Date.now() - started >= SCAN_SILENCE_MS) break;
    }
  } finally {
    await reader.stop();
  }
  throw new SluiceError(
    ErrorCode.BINLOG_STREAM,
    `the server sent no Format_description event for ${position.file} within ${SCAN_SILENCE_MS / 1000} s, so the history of ${formatPosition(position)} is unknown; nothing was stored, try again`,
    { retriable: true },
  );
}

/** Where a source with no stored position starts, per SLUICE_STARTUP (`initial*` are handled by the caller). */
export async function startupPosition(config: Config, conn: SqlConnection, log: Log): Promise<BinlogPosition> {
  const startup = config.startup;
  let start: BinlogPosition;
  switch (startup.mode) {
    case 'latest':
      start = await masterPosition(conn);
      break;
    case 'initial':
    case 'initial-only':
      // The snapshot's plan reads after this start and must see every transaction before it (rows
      // inserted past its last key later are the stream's): a settled end (dialect.ts).
      start = await (await dialectOf(conn)).settledEnd(conn, []);
      break;
    case 'earliest': {
      const [first] = await binaryLogs(conn);
      if (!first) throw new SluiceError(ErrorCode.NO_BINLOG, 'the server lists no binary logs (SHOW BINARY LOGS is empty)');
      start = { file: first.file, pos: 4 };
      break;
    }
    case 'position':
      await checkStartPosition(conn, startup.position);
      start = startup.position;
      break;
    case 'timestamp':
      start = await positionAtTime(await mysqlTarget(config), conn, startup.at);
      break;
    case 'gtid': {
      const dialect = await dialectOf(conn);
      dialect.checkStartupGtid(startup.gtid);
      // The boundary before the first transaction the GTIDs do not name.
      const { position, missing } = await dialect.gtidStart(conn, transactionScan(await mysqlTarget(config)), startup.gtid);
      if (missing)
        throw new SluiceError(
          ErrorCode.POSITION_FOREIGN,
          `gtid:${startup.gtid} names transactions this server's binlog does not hold (${missing}); nothing was stored. Take the GTIDs from this server's history (@@gtid_binlog_pos at the point wanted, or BINLOG_GTID_POS).`,
        );
      start = position;
      break;
    }
  }
  log.info('no stored position: starting from the startup setting', { startup: startup.mode, start });
  return start;
}

/**
 * The captured tables (`accept`) whose rows the transactions between `from` and `to` write, read
 * from the binlog without keeping any row; `ddl`: a DDL statement in the range may touch a captured
 * table (what it did is not worked out here). What a reset that skips the range leaves out of the output.
 * With `history`, the stream must read the history `from` was stored in (POSITION_FOREIGN
 * otherwise), which it checks before anything else, also when the range is empty.
 */
export async function tablesWritten(
  target: MysqlTarget,
  range: { from: BinlogPosition; to: BinlogPosition },
  accept: (db: string, table: string) => boolean,
  context: Omit<ClassifyContext, 'defaultDb'>,
  history?: BinlogHistories,
): Promise<{ tables: TableRef[]; ddl: boolean }> {
  const found = new Map<string, TableRef>();
  let ddl = false;
  const reader = new BinlogReader({ target, start: range.from, filter: accept, idleMs: 200, history });
  let heardAt = Date.now();
  try {
    for await (const item of reader) {
      if (item.kind === 'idle') {
        if (comparePositions(reader.streamPosition, range.to) >= 0) break;
        if (Date.now() - heardAt < SCAN_SILENCE_MS) continue;
        throw new SluiceError(
          ErrorCode.BINLOG_STREAM,
          `the binlog stream stopped before ${formatPosition(range.to)} for ${SCAN_SILENCE_MS / 1000} s while listing the tables a reset skips; nothing was stored, try again`,
          { retriable: true },
        );
      }
      heardAt = Date.now();
      if (item.kind === 'rows') found.set(tableKey(item.shape), { db: item.shape.db, table: item.shape.table });
      if (item.kind === 'query' && item.ddl && !ddl)
        ddl = touchesCaptured(await classifyDdl(item.query, { ...context, defaultDb: item.db, ...item.sqlMode }), accept);
      if ((item.kind === 'commit' || item.kind === 'progress') && comparePositions(item.position, range.to) >= 0) break;
    }
  } finally {
    await reader.stop();
  }
  return { tables: [...found.values()], ddl };
}

/** Whether a DDL statement may touch a captured table (an unknown one that names none may touch any). */
function touchesCaptured(c: DdlClassification, accept: (db: string, table: string) => boolean): boolean {
  switch (c.kind) {
    case 'tables':
      return c.effects.some((e) => e.change.kind !== 'noop' && accept(e.table.db, e.table.table));
    case 'database':
      return accept(c.db, '');
    case 'unknown':
      return c.tables === null || c.tables.some((t) => accept(t.db, t.table));
    default:
      return false;
  }
}
