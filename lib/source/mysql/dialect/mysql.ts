import { GtidSet } from '../../../core/gtid-set.ts';
import { type BinlogPosition, LOG_POS_MODULUS } from '../../../core/position.ts';
import type { SqlConnection } from '../server.ts';
import { rows, statusPosition } from './common.ts';
import type { Dialect, MysqlGtidState, ServerFlavor } from './dialect.ts';
import { mysqlLockWarning, mysqlPrivilegesWithRoles, mysqlSessionGrants } from './mysql-grants.ts';
import { checkMysqlStartupGtid, mysqlCoverage, mysqlGtidPosition, mysqlStoredEvidence } from './mysql-gtid.ts';
import { mysqlSettledEnd, mysqlSnapshotPoint } from './mysql-locks.ts';

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

/** MySQL reads six-digit versions in executable comments from 8.1.0 on. */
const SIX_DIGIT_COMMENTS_FROM = 80100;

/**
 * MySQL 8.0.30 added generated invisible primary keys (`my_row_id`,
 * `sql_generate_invisible_primary_key`) and the session variable that shows them to the session's
 * information_schema: the binlog's row images carry the column, so the schema history and the
 * snapshot's column list must too. Other INVISIBLE columns (8.0.23+) are always listed there.
 */
const GIPK_FROM = 80030;

/** MySQL 8.0, 8.4 and 9.x, Aurora MySQL 3 (the table in dialect.ts). */
export function mysqlDialect(flavor: ServerFlavor): Dialect {
  // SHOW BINARY LOG STATUS from 8.2.0; SHOW MASTER STATUS deprecated there and removed in 8.4.0.
  const binlogStatus = flavor.version >= 80200 ? 'SHOW BINARY LOG STATUS' : 'SHOW MASTER STATUS';
  const dialect: Dialect = {
    binlogStatus,
    resetStatement: flavor.version >= 80200 ? 'RESET BINARY LOGS AND GTIDS' : 'RESET MASTER',
    comments: { version: flavor.version, mariadbComments: false, sixDigitVersions: flavor.version >= SIX_DIGIT_COMMENTS_FROM, mysqlOnlyVersions: true },
    async prepareSession(conn) {
      if (flavor.version >= GIPK_FROM) await conn.query('SET SESSION show_gipk_in_create_table_and_information_schema = ON');
    },
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
    sessionGrants: mysqlSessionGrants,
    privilegesWithRoles: mysqlPrivilegesWithRoles,
    lockWarning: mysqlLockWarning,
    checkStartupGtid: (text) => checkMysqlStartupGtid(text, flavor.text),
    gtidStart: (conn, scan, text, identity) => mysqlGtidPosition(dialect, conn, scan, text, identity),
    gtidCoverage: (conn, position) => mysqlCoverage(dialect, conn, position),
    storedPositionEvidence: (conn, position, history, server) => mysqlStoredEvidence(dialect, conn, position, history, server),
  };
  return dialect;
}
