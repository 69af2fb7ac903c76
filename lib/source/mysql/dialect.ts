import { GtidSet } from '../../core/gtid-set.ts';
import { type BinlogPosition, LOG_POS_MODULUS } from '../../core/position.ts';
import type { TableRef } from '../../core/table-ref.ts';
import { ErrorCode, PreflightError, SluiceError } from '../../errors.ts';
import { type ServerFlavor, serverFlavor } from './flavor.ts';
import type { SqlConnection } from './server.ts';

/*
 * Every statement and answer shape in which MySQL 8.0, 8.4, 9.x and MariaDB differ, in one object
 * chosen once per connection from the server's flavor (flavor.ts). The jobs never ask which server
 * they talk to: they ask the dialect. Each entry names the manual page it follows.
 *
 * | what                          | MariaDB 10.5+                                | MySQL 8.0 (< 8.2)        | MySQL ≥ 8.2 (8.4 LTS, 9.x)               |
 * |-------------------------------|----------------------------------------------|--------------------------|------------------------------------------|
 * | binlog end (`binlogStatus`)   | SHOW MASTER STATUS (SHOW BINLOG STATUS 10.5.2+) | SHOW MASTER STATUS    | SHOW BINARY LOG STATUS (SHOW MASTER STATUS removed in 8.4: 1064) |
 * | GTIDs before a file           | BINLOG_GTID_POS(file, 4)                     | its Previous_gtids event (SHOW BINLOG EVENTS) | same                 |
 * | GTIDs at a position           | BINLOG_GTID_POS(file, pos)                   | the file's Previous_gtids and its Gtid events before pos (SHOW BINLOG EVENTS) | same |
 * | executed / purged GTIDs       | @@gtid_binlog_state (no purged set)          | @@gtid_executed, @@gtid_purged, @@gtid_mode | same                  |
 * | consistent snapshot's point   | SHOW STATUS LIKE 'binlog_snapshot_%'         | FTWRL (RELOAD), else LOCK TABLES … READ (LOCK TABLES) | same |
 * | settled binlog end (`settledEnd`) | binlog_snapshot_% of a consistent snapshot | the end, then WAIT_FOR_EXECUTED_GTID_SET(@@gtid_owned) (gtid_mode ON), else the end read under LOCK TABLES … READ or FTWRL | same |
 * | binlog retention              | @@expire_logs_days, @@binlog_expire_logs_seconds (10.6+) | both (expire_logs_days deprecated) | @@binlog_expire_logs_seconds (expire_logs_days removed in 8.4) |
 * | reset statement (messages)    | RESET MASTER                                 | RESET MASTER             | RESET BINARY LOGS AND GTIDS (8.2+; RESET MASTER removed in 8.4) |
 *
 * Statements that read the same everywhere stay where they are used: SHOW BINARY LOGS, SHOW BINLOG
 * EVENTS IN … FROM … LIMIT …, SHOW GLOBAL VARIABLES WHERE …, START TRANSACTION WITH CONSISTENT
 * SNAPSHOT, information_schema queries. sluice sends no SHOW SLAVE/REPLICA STATUS and no RESET.
 */

/**
 * Where the reads after `snapshotPoint` see the tables (every transaction before `position`, none
 * after), and `end`, which closes what holds them there (COMMIT, or UNLOCK TABLES); or why no exact
 * point can be had.
 */
export type SnapshotPoint = { readonly position: BinlogPosition; readonly how: string; readonly end: () => Promise<void> } | { readonly refused: string };

/** The GTID state of a MySQL server (gtid_mode, @@gtid_executed, @@gtid_purged); undefined on MariaDB. */
export interface MysqlGtidState {
  /** gtid_mode is ON (or ON_PERMISSIVE): the server's own transactions carry GTIDs. */
  readonly on: boolean;
  readonly executed: GtidSet;
  readonly purged: GtidSet;
}

/** The statements and shapes one server flavor and version speaks. */
export interface Dialect {
  readonly flavor: ServerFlavor;
  /** The statement that reports the binlog's current end (File, Position). */
  readonly binlogStatus: string;
  /** The statement that resets the binlog, for messages that name it. */
  readonly resetStatement: string;
  /**
   * The server's current end of binlog. Transactions before it may not be committed in the engine
   * yet (see `settledEnd`): a read after it need not see them.
   */
  binlogEnd(conn: SqlConnection): Promise<BinlogPosition>;
  /**
   * A binlog end P every transaction before which that changed `tables` has committed in the engine
   * when this returns: every read started afterwards sees them (a snapshot page's watermark, a
   * stream start that a plan's reads follow). With no `tables`, P holds for every table where the
   * server can tell without a lock (MariaDB; MySQL with gtid_mode ON), else it is the plain end.
   * SNAPSHOT_BUSY (retriable) when in-flight commits or a lock wait too long; SNAPSHOT_NO_POINT
   * when the server offers no way.
   */
  settledEnd(conn: SqlConnection, tables: readonly TableRef[]): Promise<BinlogPosition>;
  /** GTIDs executed before `file` starts: MariaDB's `d-s-n` position or MySQL's Previous_gtids set text ('' if none). */
  gtidsBefore(conn: SqlConnection, file: string): Promise<string>;
  /**
   * The GTIDs executed at `position`, read from the binlog itself: MariaDB every domain's last
   * (`d-s-n,…`), MySQL the set (`uuid:1-5,…`); undefined where the server cannot say.
   */
  gtidsAt(conn: SqlConnection, position: BinlogPosition): Promise<string | undefined>;
  /**
   * `position` with the GTIDs executed at it in the field its flavor keeps them in (MariaDB
   * `gtidPos`, MySQL `gtidSet`), asked of the server once, for a position that lacks them (a first
   * run's, a reset's); the stream carries them on, so every position a run stores has them.
   */
  withGtids(conn: SqlConnection, position: BinlogPosition): Promise<BinlogPosition>;
  /** The MySQL GTID state; undefined on MariaDB, whose GTIDs history.ts checks in its own way. */
  gtidState(conn: SqlConnection): Promise<MysqlGtidState | undefined>;
  /** Binlog retention in seconds (0: none configured). */
  retentionSeconds(conn: SqlConnection): Promise<number>;
  /**
   * Makes the reads of `tables` on `conn` see them at one binlog position — a consistent-snapshot
   * transaction, or (MySQL without RELOAD) read locks on `tables`, so read nothing else until
   * `end` — and returns it. On refusal nothing is held. SNAPSHOT_BUSY (retriable) when a lock waits too long.
   */
  snapshotPoint(conn: SqlConnection, tables: readonly TableRef[]): Promise<SnapshotPoint>;
}

async function rows<T>(conn: SqlConnection, sql: string, values?: unknown[]): Promise<T[]> {
  const [result] = await conn.query(sql, values);
  return result as T[];
}

async function statusPosition(conn: SqlConnection, statement: string): Promise<BinlogPosition> {
  const [status] = await rows<{ File: string; Position: string | number }>(conn, statement);
  if (!status)
    throw new PreflightError(
      ErrorCode.PREFLIGHT_LOG_BIN,
      'binary logging is off on the source. Start the server with log_bin enabled (RDS/Aurora: set a backup retention period > 0).',
    );
  return { file: status.File, pos: Number(status.Position) };
}

/** Error numbers a server answers a statement the user may not run with (1044, 1045, 1142, 1227 ER_SPECIFIC_ACCESS_DENIED_ERROR). */
const DENIED = new Set([1044, 1045, 1142, 1227]);
const denied = (error: unknown) => DENIED.has((error as { errno?: number }).errno ?? 0);

/** ER_LOCK_WAIT_TIMEOUT: a lock was not granted within lock_wait_timeout (running statements or open transactions hold it). */
const LOCK_WAIT_TIMEOUT = 1205;
/** How long a lock sluice takes for the snapshot point waits for the statements and transactions that hold it. */
const LOCK_WAIT_SECONDS = 5;

const quoted = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** The point's lock waited out lock_wait_timeout: a busy server, not a missing grant; the next run tries again. */
function busy(lock: string, error: unknown): SluiceError {
  return new SluiceError(
    ErrorCode.SNAPSHOT_BUSY,
    `${lock} waited ${LOCK_WAIT_SECONDS} s (lock_wait_timeout) for running statements or open transactions to finish, to pin the binlog point a consistent read needs (${(error as Error).message}); the next run tries again. A query or transaction that runs for long on these tables delays it: see docs/RUNBOOK.md "MySQL versions"`,
    { cause: error, retriable: true },
  );
}

/**
 * MySQL's consistent-snapshot point. MySQL (unlike MariaDB) does not say where a consistent
 * snapshot reads in the binlog, so it is pinned by a lock that stops every commit that could fall
 * between the read and the binlog position read with it. Why a lock is needed at all: in MySQL's
 * group commit a transaction is written to the binlog in the flush stage, the binlog lock is
 * released, and only later (sync, then commit stage) is it committed in InnoDB and added to
 * gtid_executed. Between the two it lies before the binlog end P while no read view sees it, so a
 * position merely unchanged around START TRANSACTION (performance_schema.log_status read before and
 * after, as sluice did) proves nothing: the read lacks that transaction and the stream starts after
 * it. Reading log_status is therefore not used (it also reports nothing with performance_schema=OFF,
 * RDS's default on small instance classes). The two locks, in order:
 *
 *   1. FLUSH TABLES WITH READ LOCK (RELOAD), held around START TRANSACTION WITH CONSISTENT SNAPSHOT
 *      and the binlog status, as mysqldump --single-transaction --source-data does. FTWRL takes the
 *      global read lock and then the commit lock, which every committing transaction holds from
 *      before its binlog write until its engine commit is done: once it is granted no transaction is
 *      between the two and none can start committing. So at that moment the committed transactions
 *      are exactly those before the binlog end P, the read view opened then holds exactly them, and
 *      START TRANSACTION keeps the global read lock (only LOCK TABLES locks are released by it);
 *      UNLOCK TABLES then releases it without ending the transaction. Held for milliseconds, but
 *      it first waits for running statements (lock_wait_timeout 5 s). RDS and Aurora refuse it.
 *   2. LOCK TABLES <the tables read> READ (LOCK TABLES + SELECT; allowed on RDS and Aurora, where
 *      Debezium too falls back to read locks on the captured tables held until they are read —
 *      its FLUSH TABLES <list> WITH READ LOCK also needs RELOAD), the binlog status read while holding it, then the tables read
 *      while still holding it, outside any transaction (START TRANSACTION would release the locks),
 *      then UNLOCK TABLES. A transaction that changes a table holds its metadata lock (SHARED_WRITE)
 *      until its commit has ended, engine commit included, and the READ lock conflicts with it:
 *      when the lock is granted, every transaction that changed these tables has committed — and
 *      written the binlog before that, so it lies before P — and none can change them until
 *      UNLOCK TABLES. Each statement's read then sees exactly the tables at P. Sound for those
 *      tables only, which is all the caller reads; writers to them wait while they are read.
 *   3. Otherwise a refusal naming both grants.
 *
 * LOCK INSTANCE FOR BACKUP is no substitute: it blocks DDL and file operations but lets DML commit.
 * A lock that waits out lock_wait_timeout is SNAPSHOT_BUSY (retriable), never a refusal.
 */
async function mysqlSnapshotPoint(conn: SqlConnection, binlogStatus: string, tables: readonly TableRef[]): Promise<SnapshotPoint> {
  await conn.query(`SET SESSION lock_wait_timeout = ${LOCK_WAIT_SECONDS}`);
  let globalRefused: string | undefined;
  try {
    await conn.query('FLUSH TABLES WITH READ LOCK');
  } catch (error) {
    if ((error as { errno?: number }).errno === LOCK_WAIT_TIMEOUT) throw busy('FLUSH TABLES WITH READ LOCK', error);
    if (!denied(error)) throw error;
    globalRefused = (error as Error).message;
  }
  if (globalRefused === undefined) {
    try {
      await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
      const position = await statusPosition(conn, binlogStatus).catch(async (error) => {
        await conn.query('ROLLBACK');
        throw error;
      });
      return { position, how: 'FLUSH TABLES WITH READ LOCK', end: async () => void (await conn.query('COMMIT')) };
    } finally {
      await conn.query('UNLOCK TABLES');
    }
  }
  // Nothing is read: no lock is needed for the point to be exact.
  if (!tables.length) return { position: await statusPosition(conn, binlogStatus), how: 'no tables read', end: async () => {} };
  // A table named twice in LOCK TABLES is an error (1066 ER_NONUNIQ_TABLE).
  const names = [...new Set(tables.map((t) => `${quoted(t.db)}.${quoted(t.table)}`))];
  const lock = `LOCK TABLES ${names.map((name) => `${name} READ`).join(', ')}`;
  try {
    await conn.query(lock);
  } catch (error) {
    if ((error as { errno?: number }).errno === LOCK_WAIT_TIMEOUT) throw busy('LOCK TABLES … READ', error);
    if (!denied(error)) throw error;
    return {
      refused: `MySQL does not report where a consistent snapshot reads in the binlog, so sluice pins it with a lock, and the user may run neither FLUSH TABLES WITH READ LOCK (${globalRefused}) nor LOCK TABLES on the tables read (${(error as Error).message}). Fix: GRANT RELOAD ON *.* TO '<user>'@'%'; (a global read lock held for milliseconds) or GRANT LOCK TABLES ON *.* TO '<user>'@'%'; (read locks on the tables read while they are read; RDS and Aurora refuse a global read lock but let their admin user grant LOCK TABLES: docs/RUNBOOK.md "MySQL versions")`,
    };
  }
  const unlock = async () => void (await conn.query('UNLOCK TABLES'));
  const position = await statusPosition(conn, binlogStatus).catch(async (error) => {
    await unlock();
    throw error;
  });
  return { position, how: 'LOCK TABLES … READ', end: unlock };
}

/** How long a settled binlog end waits for the commits in flight at it (WAIT_FOR_EXECUTED_GTID_SET's timeout). */
const COMMIT_WAIT_SECONDS = 5;

/**
 * MySQL's settled binlog end (`Dialect.settledEnd`). The binlog end alone is not one: in MySQL's
 * group commit a transaction is written to the binlog (flush stage, where SHOW MASTER STATUS sees
 * it), then synced, and only then committed in InnoDB; a read started in between lacks a
 * transaction that lies before the end. Measured on 8.0.31 with sync_binlog=0: 2% of the reads
 * that followed SHOW MASTER STATUS lacked a transaction before it with binlog_transaction_compression
 * ON (compressing widens the window), fewer without; every read with a sync delay. A snapshot page
 * read after such an end keeps the older row under a seq that sorts after the change (issue #30).
 *
 *   1. gtid_mode ON: a transaction owns its GTID from the flush stage until its engine commit is
 *      done (the commit stage adds it to gtid_executed only then). So after reading the end P, every
 *      transaction before P not yet committed is in @@GLOBAL.gtid_owned, and
 *      WAIT_FOR_EXECUTED_GTID_SET of that set returns once they are all committed. No lock, no
 *      privilege; it waits only for commits already under way (and for transactions that own a GTID
 *      set by gtid_next, which may be longer: COMMIT_WAIT_SECONDS, then SNAPSHOT_BUSY).
 *   2. Otherwise anonymous transactions leave no trace to wait for: the end is read while holding
 *      LOCK TABLES <tables> READ (a writer holds the table's metadata lock until its commit has
 *      ended, so once granted every change to the tables is committed), released at once; else
 *      under FLUSH TABLES WITH READ LOCK (no commit half-done); else SNAPSHOT_NO_POINT. Each waits at
 *      most lock_wait_timeout (5 s) and blocks the tables' writers meanwhile.
 */
async function mysqlSettledEnd(conn: SqlConnection, binlogStatus: string, tables: readonly TableRef[]): Promise<BinlogPosition> {
  const end = await statusPosition(conn, binlogStatus);
  // Read after the end: every transaction before it is committed or still owns its GTID.
  const [gtids] = await rows<{ mode: string | null; owned: string | null }>(conn, 'SELECT @@GLOBAL.gtid_mode AS mode, @@GLOBAL.gtid_owned AS owned');
  if (String(gtids?.mode ?? '').toUpperCase() === 'ON') {
    // `uuid:gno#thread` per owned GTID; without the owners it is a GTID set.
    const owned = String(gtids?.owned ?? '').replace(/#\d+/g, '');
    if (!owned) return end;
    const [wait] = await rows<{ timedOut: number | string | null }>(conn, `SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ${COMMIT_WAIT_SECONDS}) AS timedOut`, [owned]);
    if (Number(wait?.timedOut) === 0) return end;
    throw new SluiceError(
      ErrorCode.SNAPSHOT_BUSY,
      `transactions in the binlog before ${end.file}:${end.pos} (${owned}) did not finish committing within ${COMMIT_WAIT_SECONDS} s; a snapshot page waits for them so that it sees them. The next run tries again; a session that set gtid_next and keeps its transaction open holds it`,
      { retriable: true },
    );
  }
  if (!tables.length) return end;
  await conn.query(`SET SESSION lock_wait_timeout = ${LOCK_WAIT_SECONDS}`);
  const refusals: string[] = [];
  const names = [...new Set(tables.map((t) => `${quoted(t.db)}.${quoted(t.table)}`))];
  for (const lock of [`LOCK TABLES ${names.map((name) => `${name} READ`).join(', ')}`, 'FLUSH TABLES WITH READ LOCK']) {
    try {
      await conn.query(lock);
    } catch (error) {
      if ((error as { errno?: number }).errno === LOCK_WAIT_TIMEOUT) throw busy(lock.startsWith('LOCK') ? 'LOCK TABLES … READ' : lock, error);
      if (!denied(error)) throw error;
      refusals.push((error as Error).message);
      continue;
    }
    try {
      return await statusPosition(conn, binlogStatus);
    } finally {
      await conn.query('UNLOCK TABLES');
    }
  }
  throw new SluiceError(
    ErrorCode.SNAPSHOT_NO_POINT,
    `with gtid_mode ${gtids?.mode ?? 'OFF'} MySQL cannot say when the transactions before a binlog position have committed, so a snapshot page pins its position with a read lock held for the moment it is read, and the user may run neither LOCK TABLES on ${names.join(', ')} (${refusals[0]}) nor FLUSH TABLES WITH READ LOCK (${refusals[1]}). Fix: GRANT LOCK TABLES ON *.* TO '<user>'@'%'; or GRANT RELOAD ON *.* TO '<user>'@'%'; or run the server with gtid_mode=ON (no lock then): docs/RUNBOOK.md "MySQL versions"`,
  );
}

/** MariaDB's consistent-snapshot point: the transaction's own binlog_snapshot_file/position. */
async function mariadbSnapshotPoint(conn: SqlConnection): Promise<SnapshotPoint> {
  // https://mariadb.com/kb/en/enhancements-for-start-transaction-with-consistent-snapshot/
  await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
  const status = await rows<{ Variable_name: string; Value: string }>(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'");
  const vars = Object.fromEntries(status.map((r) => [r.Variable_name.toLowerCase(), r.Value]));
  if (!vars.binlog_snapshot_file) {
    await conn.query('ROLLBACK');
    return { refused: 'the server does not report binlog_snapshot_file (binary logging is off?)' };
  }
  return {
    position: { file: vars.binlog_snapshot_file, pos: Number(vars.binlog_snapshot_position) },
    how: 'binlog_snapshot_file',
    end: async () => void (await conn.query('COMMIT')),
  };
}

function mariadbDialect(flavor: ServerFlavor): Dialect {
  const binlogStatus = 'SHOW MASTER STATUS';
  return {
    flavor,
    binlogStatus,
    resetStatement: 'RESET MASTER',
    binlogEnd: (conn) => statusPosition(conn, binlogStatus),
    async settledEnd(conn) {
      // The binlog position of a consistent snapshot is exact (taken with the engine's commit
      // order); SHOW MASTER STATUS is not: a group's binlog write precedes its engine commit.
      const point = await mariadbSnapshotPoint(conn);
      if ('refused' in point) return statusPosition(conn, binlogStatus);
      await point.end();
      return point.position;
    },
    async gtidsBefore(conn, file) {
      // https://mariadb.com/kb/en/binlog_gtid_pos/
      const [row] = await rows<{ gtid: string | null }>(conn, 'SELECT BINLOG_GTID_POS(?, 4) AS gtid', [file]);
      return String(row?.gtid ?? '');
    },
    async gtidsAt(conn, position) {
      const [row] = await rows<{ gtid: string | null }>(conn, 'SELECT BINLOG_GTID_POS(?, ?) AS gtid', [position.file, position.pos]);
      return row?.gtid ?? undefined;
    },
    async withGtids(conn, position) {
      if (position.gtidPos !== undefined) return position;
      const [row] = await rows<{ gtid: string | null }>(conn, 'SELECT BINLOG_GTID_POS(?, ?) AS gtid', [position.file, position.pos]);
      return row?.gtid ? { ...position, gtidPos: row.gtid } : position;
    },
    gtidState: async () => undefined,
    async retentionSeconds(conn) {
      // binlog_expire_logs_seconds exists from 10.6.1; expire_logs_days everywhere.
      const [result] = await conn
        .query('SELECT @@expire_logs_days AS days, @@binlog_expire_logs_seconds AS seconds')
        .catch(() => conn.query('SELECT @@expire_logs_days AS days, 0 AS seconds'));
      const row = (result as { days: number | string | null; seconds: number | string | null }[])[0];
      return Number(row?.seconds ?? 0) || Math.round(Number(row?.days ?? 0) * 86_400);
    },
    snapshotPoint: (conn) => mariadbSnapshotPoint(conn),
  };
}

/**
 * MySQL: the set executed before `file`. Every binlog file starts with Format_desc, then
 * Previous_gtids (SHOW BINLOG EVENTS shows it as the event's Info; empty with no GTIDs).
 */
async function mysqlPreviousGtids(conn: SqlConnection, file: string): Promise<string> {
  const events = await rows<{ Event_type: string; Info: string | null }>(conn, 'SHOW BINLOG EVENTS IN ? LIMIT 3', [file]);
  return String(events.find((e) => e.Event_type === 'Previous_gtids')?.Info ?? '').trim();
}

/**
 * MySQL: the GTID set executed at `position` (a transaction end), exact, from the binlog alone:
 * the set executed before the file (its Previous_gtids) and every GTID logged in it before the
 * position (a transaction end, so each of them committed).
 *
 * Not SHOW MASTER STATUS's Executed_Gtid_Set: it is not read atomically with File/Position (a
 * transaction is in the binlog before it is in gtid_executed), and a set off by one either way
 * makes the stream skip a transaction it should read, or read one twice (BinlogReader skips what
 * its set holds). Not a stream from the file's start either: this reads the same bytes once, on the
 * server, once per position that lacks a set (a first run, a reset), with no second path through
 * the reader: 0.4 s for a 90 MB file of 20,000 transactions on 8.0.31 here.
 *
 * SHOW BINLOG EVENTS pages `page` events at a time. A compressed transaction's Gtid event precedes
 * its Transaction_payload, whose inner events are listed after it at the payload's end offset
 * (checked on 8.0.31), so a page's last End_log_pos is always an event's start. Offsets are 32 bits
 * there, so positions past 4 GiB are left to the stream, which re-reads such a file from its start
 * (binlog-dump.ts).
 */
export async function mysqlExecutedAt(conn: SqlConnection, position: BinlogPosition, page = 5_000): Promise<string | undefined> {
  if (position.pos >= LOG_POS_MODULUS) return undefined;
  let set = GtidSet.parse(await mysqlPreviousGtids(conn, position.file));
  for (let from = 4; from < position.pos; ) {
    const events = await rows<{ Pos: number | string; End_log_pos: number | string; Event_type: string; Info: string | null }>(
      conn,
      `SHOW BINLOG EVENTS IN ? FROM ${from} LIMIT ${page}`,
      [position.file],
    );
    for (const event of events) {
      if (Number(event.Pos) >= position.pos) return set.toString();
      const gtid = event.Event_type === 'Gtid' ? /GTID_NEXT\s*=\s*'([^']+)'/i.exec(event.Info ?? '')?.[1] : undefined;
      if (gtid) set = set.add(gtid);
    }
    const last = events.at(-1);
    if (events.length < page || !last) break;
    from = Number(last.End_log_pos);
  }
  return set.toString();
}

/** MySQL: gtid_mode, @@gtid_executed and @@gtid_purged, read in one statement. */
async function mysqlGtidState(conn: SqlConnection): Promise<MysqlGtidState> {
  const [row] = await rows<{ mode: string | null; executed: string | null; purged: string | null }>(
    conn,
    'SELECT @@GLOBAL.gtid_mode AS mode, @@GLOBAL.gtid_executed AS executed, @@GLOBAL.gtid_purged AS purged',
  );
  return {
    on: /^ON/i.test(String(row?.mode ?? '')),
    executed: GtidSet.parse(String(row?.executed ?? '')),
    purged: GtidSet.parse(String(row?.purged ?? '')),
  };
}

function mysqlDialect(flavor: ServerFlavor): Dialect {
  // SHOW BINARY LOG STATUS from 8.2.0; SHOW MASTER STATUS deprecated there and removed in 8.4.0.
  const binlogStatus = flavor.version >= 80200 ? 'SHOW BINARY LOG STATUS' : 'SHOW MASTER STATUS';
  return {
    flavor,
    binlogStatus,
    resetStatement: flavor.version >= 80200 ? 'RESET BINARY LOGS AND GTIDS' : 'RESET MASTER',
    binlogEnd: (conn) => statusPosition(conn, binlogStatus),
    settledEnd: (conn, tables) => mysqlSettledEnd(conn, binlogStatus, tables),
    gtidsBefore: mysqlPreviousGtids,
    gtidsAt: (conn, position) => mysqlExecutedAt(conn, position),
    async withGtids(conn, position) {
      if (position.gtidSet !== undefined) return position;
      const state = await mysqlGtidState(conn);
      if (!state.on) return position;
      const gtids = await mysqlExecutedAt(conn, position);
      // With gtid_purged: GTIDs the server has executed that no binlog file holds from here on (the
      // files before this one were purged, or SET GLOBAL gtid_purged put them there: a restore from
      // a dump, a provisioned replica, which the next file's Previous_gtids names, this one's not).
      // None of them can come after the position, so the set skips nothing the stream would read,
      // and the next run's check does not take them for a purged tail (POSITION_LOST).
      return gtids === undefined ? position : { ...position, gtidSet: GtidSet.parse(gtids).union(state.purged).toString() };
    },
    gtidState: mysqlGtidState,
    async retentionSeconds(conn) {
      // expire_logs_days was removed in 8.4.0 (asking for it is ER_UNKNOWN_SYSTEM_VARIABLE there).
      const sql =
        flavor.version >= 80400
          ? 'SELECT 0 AS days, @@binlog_expire_logs_seconds AS seconds'
          : 'SELECT @@expire_logs_days AS days, @@binlog_expire_logs_seconds AS seconds';
      const [row] = await rows<{ days: number | string | null; seconds: number | string | null }>(conn, sql);
      return Number(row?.seconds ?? 0) || Math.round(Number(row?.days ?? 0) * 86_400);
    },
    snapshotPoint: (conn, tables) => mysqlSnapshotPoint(conn, binlogStatus, tables),
  };
}

/** The dialect a server of this flavor speaks. */
export function dialectFor(flavor: ServerFlavor): Dialect {
  return flavor.kind === 'mariadb' ? mariadbDialect(flavor) : mysqlDialect(flavor);
}

const chosen = new WeakMap<SqlConnection, Promise<Dialect>>();

/** The connection's dialect: its flavor is asked once (one round trip), then remembered with the connection. */
export function dialectOf(conn: SqlConnection): Promise<Dialect> {
  let dialect = chosen.get(conn);
  if (!dialect) {
    dialect = serverFlavor(conn).then(dialectFor);
    dialect.catch(() => chosen.delete(conn));
    chosen.set(conn, dialect);
  }
  return dialect;
}
