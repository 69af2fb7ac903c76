import type { Config } from '../../config/config.ts';
import { GtidPosition, GtidSet, isMariadbGtidPosition, parseMariadbGtid } from '../../core/gtid-set.ts';
import type { BinlogHistory } from '../../core/history.ts';
import { type BinlogPosition, comparePositions, formatPosition, LOG_POS_MODULUS } from '../../core/position.ts';
import { type TableRef, tableKey } from '../../core/table-ref.ts';
import { ConfigError, ErrorCode, PositionLostError, SluiceError } from '../../errors.ts';
import type { Log } from '../../log.ts';
import { BinlogReader } from './binlog-reader.ts';
import { type ClassifyContext, classifyDdl, type DdlClassification } from './ddl/classify.ts';
import { type Dialect, dialectOf } from './dialect/dialect.ts';
import { BinlogHistories, checkStartPosition } from './history.ts';
import { binaryLogs, masterPosition, type SqlConnection } from './server.ts';
import { type MysqlTarget, mysqlTarget } from './target.ts';

/** How long a scan of the binlog up to a known end waits for the stream to go on before it gives up. */
export const SCAN_SILENCE_MS = 30_000;

/** A transaction as a scan sees it begin: its GTID (null without one), binlog time and (MySQL) original commit time in µs. */
interface ScannedTransaction {
  readonly gtid: string | null;
  readonly tsMs: number;
  readonly commitUs?: number;
}

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

/** A transaction sluice has read, and when it was written: a GTID alone does not tell it from another with the same GTID (after RESET MASTER). */
export interface GtidIdentity {
  readonly gtid: string;
  readonly at: number;
}

/** Where a GTID start ends on this server, and what the scan that found it saw. */
export interface GtidStart {
  /** The boundary to read from, carrying the GTID state it starts after (`gtidPos`/`gtidSkip` on MariaDB, `gtidSet` on MySQL). */
  readonly position: BinlogPosition;
  /** MariaDB: the domains' last GTIDs the server's binlog does not hold (the scan reached its end without them). */
  readonly missing?: GtidPosition;
  /** MariaDB: the GTID state before the file the scan began with, when that is the oldest binlog and holds domains the start did not name. */
  readonly unnamed?: GtidPosition;
  /** When `identity`'s transaction was written on this server, if the scan passed it. */
  readonly identityAt?: number;
  /** MySQL: when `identity`'s transaction was first committed (µs), as this server logged it, if the scan passed it. */
  readonly identityCommitUs?: number;
}

/** Whether a file's starting GTID state (a domain's last GTID before it) lies at or before the domain's last GTID wanted: the same one, or an earlier one of its server. */
function startsBefore(state: GtidPosition, wanted: GtidPosition): boolean {
  return state.gtids().every((g) => {
    const w = wanted.get(g.domain);
    return w !== undefined && (w.text === g.text || (w.server === g.server && g.seq < w.seq));
  });
}

/**
 * `gtid:<d-s-n,...>` (MariaDB), as a replica resumes from its gtid_slave_pos: every listed domain's
 * transactions up to and including its GTID were read, in this server's binlog order (which is
 * the domain's order; sequence numbers alone do not order it), and a domain not listed is read from
 * the oldest binlog on. The scan starts in the newest file that begins before every listed GTID
 * (and before `identity`'s transaction, to see it), and the position is the boundary before the
 * first transaction not read; a domain whose GTID this server logs after that boundary (another
 * order of the domains than the old server's) is skipped up to it by the stream (`gtidSkip`).
 */
export async function mariadbGtidStart(target: MysqlTarget, conn: SqlConnection, dialect: Dialect, text: string, identity?: GtidIdentity): Promise<GtidStart> {
  const wanted = GtidPosition.parse(text);
  const known = identity && parseMariadbGtid(identity.gtid);
  const end = await dialect.binlogEnd(conn);
  const logs = await binaryLogs(conn);
  let from: { file: string; before: GtidPosition } | undefined;
  for (const log of [...logs].reverse()) {
    const before = GtidPosition.ofState((await dialect.gtidsBefore(conn, log.file)).split(','));
    from = { file: log.file, before };
    if (startsBefore(before, wanted) && !(known && before.holds(known))) break;
  }
  if (!from) return { position: end, missing: wanted };
  let pending = wanted;
  for (const gtid of from.before.gtids()) if (wanted.holds(gtid)) pending = pending.without(gtid.domain);
  let start: { before: BinlogPosition; skip: GtidPosition } | undefined;
  let identityAt: number | undefined;
  const last = await scanTransactions(target, { file: from.file, pos: 4 }, end, (txn, before) => {
    const gtid = parseMariadbGtid(txn.gtid);
    const until = gtid && pending.get(gtid.domain);
    if (gtid && until) {
      // A transaction of a domain before its last GTID read: read already.
      if (until.text === gtid.text) {
        pending = pending.without(gtid.domain);
        if (known?.text === gtid.text) identityAt = txn.tsMs;
      }
    } else start ??= { before, skip: pending };
    return start !== undefined && pending.isEmpty && (!known || identityAt !== undefined);
  });
  const at = start ?? { before: last, skip: pending };
  const unnamed = from.before.gtids().filter((g) => !wanted.get(g.domain));
  return {
    position: { ...at.before, gtidPos: wanted.toString(), ...(at.skip.isEmpty ? {} : { gtidSkip: at.skip.toString() }) },
    ...(pending.isEmpty ? {} : { missing: pending }),
    ...(unnamed.length ? { unnamed: GtidPosition.ofState(unnamed.map((g) => g.text)) } : {}),
    ...(identityAt === undefined ? {} : { identityAt }),
  };
}

/** `gtid:<d-s-n,...>` (MariaDB): the boundary before the first transaction the position has not read. */
async function positionAfterMariadbGtid(target: MysqlTarget, conn: SqlConnection, dialect: Dialect, gtid: string): Promise<BinlogPosition> {
  const { position, missing } = await mariadbGtidStart(target, conn, dialect, gtid);
  if (missing)
    throw new SluiceError(
      ErrorCode.POSITION_FOREIGN,
      `gtid:${gtid} names transactions this server's binlog does not hold (${missing}); nothing was stored. Take the GTIDs from this server's history (@@gtid_binlog_pos at the point wanted, or BINLOG_GTID_POS).`,
    );
  return position;
}

/**
 * Where a MySQL GTID set's transactions end, as a file and offset: the newest file whose
 * Previous_gtids (the set executed before the file) the set includes, scanned from its start to
 * the first transaction the set lacks. The server must hold every transaction of the set and still
 * have those after it (not in gtid_purged); else nothing is stored and the error says what differs.
 */
export async function mysqlGtidStart(
  conn: SqlConnection,
  dialect: Dialect,
  text: string,
  identity?: GtidIdentity,
): Promise<{ from: string | undefined; covered: GtidSet }> {
  const covered = GtidSet.parse(text);
  const state = await dialect.gtidState(conn);
  if (state && !state.executed.includes(covered)) {
    throw new SluiceError(
      ErrorCode.POSITION_FOREIGN,
      `gtid:${text} holds transactions this server never executed (${covered.subtract(state.executed)}; its gtid_executed is "${state.executed}"): the set comes from another server or history; nothing was stored. Take the set from this server's history (a savepoint, or @@gtid_executed at the point wanted).`,
    );
  }
  const lost = state?.executed.subtract(covered).intersect(state.purged);
  if (lost && !lost.isEmpty) {
    throw new PositionLostError(
      `the transactions after gtid:${text} are partly purged from this server's binlog (${lost} is in gtid_purged); nothing was stored. Re-snapshot the source (SLUICE_STARTUP=initial, or \`sluice state reset --to latest\`, after which the next run copies every table again).`,
    );
  }
  const logs = await binaryLogs(conn);
  for (const log of [...logs].reverse()) {
    const before = GtidSet.parse(await dialect.gtidsBefore(conn, log.file));
    // With `identity`, a file that starts before its transaction, so that the scan passes it.
    if (covered.includes(before) && !(identity && before.contains(identity.gtid))) return { from: log.file, covered };
  }
  return { from: logs[0]?.file, covered };
}

/**
 * `gtid:<uuid:1-5,...>` (MySQL): the boundary before the first transaction the set does not hold,
 * carrying the set itself (with what the scan found before it) as executed there. A set with a gap
 * holds transactions after that boundary; the stream skips them, as a replica does (BinlogReader).
 */
export async function mysqlGtidPosition(target: MysqlTarget, conn: SqlConnection, dialect: Dialect, text: string, identity?: GtidIdentity): Promise<GtidStart> {
  const end = await dialect.binlogEnd(conn);
  const { from, covered } = await mysqlGtidStart(conn, dialect, text, identity);
  let found: BinlogPosition | undefined;
  let identityAt: number | undefined;
  let identityCommitUs: number | undefined;
  const last = from
    ? await scanTransactions(target, { file: from, pos: 4 }, end, (txn, before) => {
        if (txn.gtid !== null && !covered.contains(txn.gtid)) found ??= before;
        else if (identity && txn.gtid === identity.gtid) {
          identityAt = txn.tsMs;
          identityCommitUs = txn.commitUs;
        }
        return found !== undefined && (!identity || identityAt !== undefined);
      })
    : end;
  const start = found ?? last;
  const scanned = start.gtidSet && GtidSet.is(start.gtidSet) ? GtidSet.parse(start.gtidSet) : GtidSet.EMPTY;
  const executed = covered.union(scanned);
  return {
    position: executed.isEmpty ? start : { ...start, gtidSet: executed.toString() },
    ...(identityAt === undefined ? {} : { identityAt }),
    ...(identityCommitUs === undefined ? {} : { identityCommitUs }),
  };
}

async function positionAfterMysqlGtid(target: MysqlTarget, conn: SqlConnection, dialect: Dialect, text: string): Promise<BinlogPosition> {
  return (await mysqlGtidPosition(target, conn, dialect, text)).position;
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
      if (dialect.flavor.kind === 'mariadb' ? !isMariadbGtidPosition(startup.gtid) : !GtidSet.is(startup.gtid))
        throw new ConfigError(
          `SLUICE_STARTUP=gtid:${startup.gtid} is a ${dialect.flavor.kind === 'mariadb' ? 'MySQL GTID set' : 'MariaDB GTID position'}, but the server is ${dialect.flavor.text} (${dialect.flavor.kind === 'mariadb' ? 'MariaDB: d-s-n, e.g. gtid:0-1-1234' : 'MySQL: uuid:n-m, e.g. gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5'})`,
        );
      const find = dialect.flavor.kind === 'mariadb' ? positionAfterMariadbGtid : positionAfterMysqlGtid;
      start = await find(await mysqlTarget(config), conn, dialect, startup.gtid);
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
