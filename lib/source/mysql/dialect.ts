import { GtidSet } from '../../core/gtid-set.ts';
import type { BinlogPosition } from '../../core/position.ts';
import { ErrorCode, PreflightError } from '../../errors.ts';
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
 * | executed / purged GTIDs       | @@gtid_binlog_state (no purged set)          | @@gtid_executed, @@gtid_purged, @@gtid_mode | same                  |
 * | consistent snapshot's point   | SHOW STATUS LIKE 'binlog_snapshot_%'         | performance_schema.log_status (BACKUP_ADMIN), else FTWRL (RELOAD) | same |
 * | binlog retention              | @@expire_logs_days, @@binlog_expire_logs_seconds (10.6+) | both (expire_logs_days deprecated) | @@binlog_expire_logs_seconds (expire_logs_days removed in 8.4) |
 * | reset statement (messages)    | RESET MASTER                                 | RESET MASTER             | RESET BINARY LOGS AND GTIDS (8.2+; RESET MASTER removed in 8.4) |
 *
 * Statements that read the same everywhere stay where they are used: SHOW BINARY LOGS, SHOW BINLOG
 * EVENTS IN … FROM … LIMIT …, SHOW GLOBAL VARIABLES WHERE …, START TRANSACTION WITH CONSISTENT
 * SNAPSHOT, information_schema queries. sluice sends no SHOW SLAVE/REPLICA STATUS and no RESET.
 */

/** Where a transaction opened by `snapshotPoint` reads, or why no exact point can be had. */
export type SnapshotPoint = { readonly position: BinlogPosition; readonly how: string } | { readonly refused: string };

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
  /** The server's current end of binlog. */
  binlogEnd(conn: SqlConnection): Promise<BinlogPosition>;
  /** GTIDs executed before `file` starts: MariaDB's `d-s-n` position or MySQL's Previous_gtids set text ('' if none). */
  gtidsBefore(conn: SqlConnection, file: string): Promise<string>;
  /** The MySQL GTID state; undefined on MariaDB, whose GTIDs history.ts checks in its own way. */
  gtidState(conn: SqlConnection): Promise<MysqlGtidState | undefined>;
  /** Binlog retention in seconds (0: none configured). */
  retentionSeconds(conn: SqlConnection): Promise<number>;
  /**
   * Opens `START TRANSACTION WITH CONSISTENT SNAPSHOT` on `conn` and returns the binlog position
   * its reads see: every transaction before it, none after. On refusal no transaction is open.
   */
  snapshotPoint(conn: SqlConnection): Promise<SnapshotPoint>;
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

/** How often log_status is read around START TRANSACTION before the transaction's point is taken as unknowable that way. */
const LOG_STATUS_ATTEMPTS = 20;

/**
 * MySQL's consistent-snapshot point. MySQL (unlike MariaDB) does not say where a consistent
 * snapshot reads in the binlog, so it is pinned from outside:
 *
 *   1. performance_schema.log_status (BACKUP_ADMIN + SELECT; 8.0.14+). Reading it blocks logging
 *      just long enough to return a binary_log_position and a gtid_executed consistent with each
 *      other (the manual, "The log_status Table"); gtid_executed only grows once a transaction has
 *      committed in the engine, so every transaction before that position is committed and
 *      visible to a read view created after the read. It is read before START TRANSACTION WITH
 *      CONSISTENT SNAPSHOT and again after: when both reads give the same position, nothing was
 *      written to the binlog in between — a transaction commits in the engine only after its
 *      binlog write — so the read view holds exactly the transactions before that position. A
 *      moved position means a commit raced the read view: the transaction is rolled back and
 *      the pair read again (LOG_STATUS_ATTEMPTS times).
 *   2. FLUSH TABLES WITH READ LOCK (RELOAD; RDS and Aurora refuse a global read lock) held around START TRANSACTION and the binlog status, as mysqldump
 *      --single-transaction --source-data does: no commit can happen while it is held. It waits for
 *      running statements first, so a long query on the server delays it (lock_wait_timeout 5 s).
 *      LOCK INSTANCE FOR BACKUP is no substitute: it blocks DDL and file operations but lets DML
 *      commit, so it pins nothing.
 *   3. Otherwise a refusal naming the grant to add.
 */
async function mysqlSnapshotPoint(conn: SqlConnection, binlogStatus: string): Promise<SnapshotPoint> {
  const logStatus = async () => {
    const [row] = await rows<{ LOCAL: string | { binary_log_file: string; binary_log_position: number } }>(
      conn,
      'SELECT LOCAL FROM performance_schema.log_status',
    );
    const local = typeof row?.LOCAL === 'string' ? JSON.parse(row.LOCAL) : row?.LOCAL;
    if (!local?.binary_log_file)
      throw new PreflightError(ErrorCode.PREFLIGHT_LOG_BIN, 'binary logging is off on the source (performance_schema.log_status reports no binary log).');
    return { file: String(local.binary_log_file), pos: Number(local.binary_log_position) };
  };
  let logStatusRefused: string | undefined;
  try {
    for (let attempt = 0; attempt < LOG_STATUS_ATTEMPTS; attempt++) {
      const before = await logStatus();
      await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
      const after = await logStatus().catch(async (error) => {
        await conn.query('ROLLBACK');
        throw error;
      });
      if (before.file === after.file && before.pos === after.pos) return { position: after, how: 'performance_schema.log_status' };
      await conn.query('ROLLBACK');
      await new Promise((resolve) => setTimeout(resolve, 5 * (attempt + 1)));
    }
  } catch (error) {
    if (!denied(error)) throw error;
    logStatusRefused = (error as Error).message;
  }
  try {
    await conn.query('SET SESSION lock_wait_timeout = 5');
    await conn.query('FLUSH TABLES WITH READ LOCK');
  } catch (error) {
    if (!denied(error)) throw error;
    const why = logStatusRefused
      ? `it may read neither performance_schema.log_status (${logStatusRefused}) nor run FLUSH TABLES WITH READ LOCK`
      : `the binlog moved during each of ${LOG_STATUS_ATTEMPTS} reads of performance_schema.log_status around it, and the user may not run FLUSH TABLES WITH READ LOCK`;
    return {
      refused: `MySQL does not report where a consistent snapshot reads in the binlog, and ${why}. Fix: GRANT BACKUP_ADMIN ON *.* TO '<user>'@'%'; GRANT SELECT ON performance_schema.log_status TO '<user>'@'%'; (RDS and Aurora MySQL 3 grant their admin user neither BACKUP_ADMIN nor a global read lock: there, docs/RUNBOOK.md "MySQL versions")`,
    };
  }
  try {
    await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
    return { position: await statusPosition(conn, binlogStatus), how: 'FLUSH TABLES WITH READ LOCK' };
  } finally {
    await conn.query('UNLOCK TABLES');
  }
}

function mariadbDialect(flavor: ServerFlavor): Dialect {
  const binlogStatus = 'SHOW MASTER STATUS';
  return {
    flavor,
    binlogStatus,
    resetStatement: 'RESET MASTER',
    binlogEnd: (conn) => statusPosition(conn, binlogStatus),
    async gtidsBefore(conn, file) {
      // https://mariadb.com/kb/en/binlog_gtid_pos/
      const [row] = await rows<{ gtid: string | null }>(conn, 'SELECT BINLOG_GTID_POS(?, 4) AS gtid', [file]);
      return String(row?.gtid ?? '');
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
    async snapshotPoint(conn) {
      // https://mariadb.com/kb/en/enhancements-for-start-transaction-with-consistent-snapshot/
      await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
      const status = await rows<{ Variable_name: string; Value: string }>(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'");
      const vars = Object.fromEntries(status.map((r) => [r.Variable_name.toLowerCase(), r.Value]));
      if (!vars.binlog_snapshot_file) {
        await conn.query('ROLLBACK');
        return { refused: 'the server does not report binlog_snapshot_file (binary logging is off?)' };
      }
      return { position: { file: vars.binlog_snapshot_file, pos: Number(vars.binlog_snapshot_position) }, how: 'binlog_snapshot_file' };
    },
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
    async gtidsBefore(conn, file) {
      // Every binlog file starts with Format_desc, then Previous_gtids: the set executed before it
      // (SHOW BINLOG EVENTS shows it as the event's Info; empty with no GTIDs).
      const events = await rows<{ Event_type: string; Info: string | null }>(conn, 'SHOW BINLOG EVENTS IN ? LIMIT 3', [file]);
      return String(events.find((e) => e.Event_type === 'Previous_gtids')?.Info ?? '').trim();
    },
    async gtidState(conn) {
      const [row] = await rows<{ mode: string | null; executed: string | null; purged: string | null }>(
        conn,
        'SELECT @@GLOBAL.gtid_mode AS mode, @@GLOBAL.gtid_executed AS executed, @@GLOBAL.gtid_purged AS purged',
      );
      return {
        on: /^ON/i.test(String(row?.mode ?? '')),
        executed: GtidSet.parse(String(row?.executed ?? '')),
        purged: GtidSet.parse(String(row?.purged ?? '')),
      };
    },
    async retentionSeconds(conn) {
      // expire_logs_days was removed in 8.4.0 (asking for it is ER_UNKNOWN_SYSTEM_VARIABLE there).
      const sql =
        flavor.version >= 80400
          ? 'SELECT 0 AS days, @@binlog_expire_logs_seconds AS seconds'
          : 'SELECT @@expire_logs_days AS days, @@binlog_expire_logs_seconds AS seconds';
      const [row] = await rows<{ days: number | string | null; seconds: number | string | null }>(conn, sql);
      return Number(row?.seconds ?? 0) || Math.round(Number(row?.days ?? 0) * 86_400);
    },
    snapshotPoint: (conn) => mysqlSnapshotPoint(conn, binlogStatus),
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
