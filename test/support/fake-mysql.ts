import type { SqlConnection } from '../../lib/source/mysql/server.ts';

/*
 * A control connection that answers the statements sluice sends as the manual of one server
 * version documents them — enough to test the dialect's choices without a server of that version
 * (none installs here). Anything it does not know fails the test with the statement.
 *
 *   - SHOW MASTER STATUS: MySQL 8.0 "SHOW MASTER STATUS Statement"; deprecated in 8.2, removed in
 *     8.4 ("Features Removed in MySQL 8.4"): a parse error (1064) there. MariaDB: still there.
 *   - SHOW BINARY LOG STATUS: MySQL 8.4 "SHOW BINARY LOG STATUS Statement", added in 8.2.0.
 *   - @@expire_logs_days: removed in MySQL 8.4 (1193 ER_UNKNOWN_SYSTEM_VARIABLE).
 *   - performance_schema.log_status: MySQL 8.0.14+, needs BACKUP_ADMIN (1227 without).
 *   - FLUSH TABLES WITH READ LOCK: needs RELOAD (1227 without; RDS and Aurora refuse it).
 *   - LOCK TABLES … READ: needs LOCK TABLES (1044 ER_DBACCESS_DENIED_ERROR without); START
 *     TRANSACTION and UNLOCK TABLES release its locks ("LOCK TABLES and UNLOCK TABLES Statements").
 *   - a lock not granted within lock_wait_timeout: 1205 ER_LOCK_WAIT_TIMEOUT.
 *   - performance_schema=OFF: its tables exist and are empty (log_status has no row).
 *   - SHOW STATUS LIKE 'binlog_snapshot_%': MariaDB only (MySQL returns no rows).
 *   - BINLOG_GTID_POS, @@gtid_binlog_state: MariaDB only (MySQL: 1305 / 1193).
 *   - @@gtid_executed, @@gtid_purged, @@gtid_mode, @@gtid_owned, @@server_uuid: MySQL only.
 *   - WAIT_FOR_EXECUTED_GTID_SET(set, timeout): 0 once the set is executed, 1 after the timeout
 *     (MySQL "Functions Used with Global Transaction Identifiers").
 */

export interface FakeFile {
  name: string;
  size: number;
  /** MySQL: the file's Previous_gtids set; MariaDB: BINLOG_GTID_POS(file, 4). */
  before?: string;
  /** Offsets where an event starts (SHOW BINLOG EVENTS FROM must land on one). */
  events?: number[];
  /** SHOW BINLOG EVENTS' Event_type at an offset (default Format_desc at 4, else Gtid). */
  types?: Record<number, string>;
  /** MariaDB: BINLOG_GTID_POS(file, offset), by offset (default NULL). */
  gtidAt?: Record<number, string>;
  /** MySQL: the GTID a Gtid event at an offset sets (SHOW BINLOG EVENTS' Info: SET @@SESSION.GTID_NEXT= '…'). */
  gtids?: Record<number, string>;
}

export interface FakeServerOptions {
  version: string;
  comment?: string;
  files?: FakeFile[];
  gtidMode?: 'ON' | 'OFF';
  gtidExecuted?: string;
  gtidPurged?: string;
  /** MySQL: @@GLOBAL.gtid_owned, as the server prints it (`uuid:gno#thread`…). */
  gtidOwned?: string;
  /** MySQL: the owned transactions do not commit within WAIT_FOR_EXECUTED_GTID_SET's timeout. */
  commitsStuck?: boolean;
  /** MariaDB: @@gtid_binlog_state (the last GTID per domain and server). */
  gtidBinlogState?: string;
  serverUuid?: string;
  serverId?: number;
  grants?: { backupAdmin?: boolean; reload?: boolean; lockTables?: boolean };
  /** performance_schema=OFF: log_status returns no row. */
  performanceSchemaOff?: boolean;
  /** Which lock waits out lock_wait_timeout (1205): a running statement or an open transaction holds it. */
  busy?: 'global' | 'tables';
  /** The binlog end each read of it returns, in turn (the last one repeats). */
  ends?: { file: string; pos: number }[];
}

export const mysqlError = (errno: number, code: string, message: string) => Object.assign(new Error(message), { errno, code, sqlMessage: message });

const parseError = (sql: string) =>
  mysqlError(
    1064,
    'ER_PARSE_ERROR',
    `You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '${sql}'`,
  );

export class FakeServer implements SqlConnection {
  /** Every statement received, in order. */
  readonly statements: string[] = [];
  private reads = 0;
  inTransaction = false;
  locked = false;
  /** The tables LOCK TABLES holds, as the statement named them (undefined: none). */
  tableLocks: string | undefined;

  constructor(readonly options: FakeServerOptions) {}

  get mariadb(): boolean {
    return /mariadb/i.test(this.options.version);
  }

  /** major·10000 + minor·100 + patch. */
  get number(): number {
    const [a = 0, b = 0, c = 0] = (/(\d+)\.(\d+)\.(\d+)/.exec(this.options.version.replace(/^5\.5\.5-/, '')) ?? []).slice(1).map(Number);
    return a * 10000 + b * 100 + c;
  }

  private binlogEnd(): { file: string; pos: number } {
    const ends = this.options.ends ?? [];
    const last = this.options.files?.[this.options.files.length - 1];
    const end = ends[Math.min(this.reads, ends.length - 1)] ?? { file: last?.name ?? 'binlog.000001', pos: last?.size ?? 4 };
    this.reads++;
    return end;
  }

  async query(sql: string, values: unknown[] = []): Promise<[unknown, unknown]> {
    this.statements.push(sql);
    const mysql = !this.mariadb;
    const answer = (rows: unknown[]): [unknown, unknown] => [rows, []];
    const status = () => {
      const end = this.binlogEnd();
      return answer([{ File: end.file, Position: end.pos, Binlog_Do_DB: '', Binlog_Ignore_DB: '', Executed_Gtid_Set: this.options.gtidExecuted ?? '' }]);
    };
    if (sql === 'SELECT VERSION() AS version, @@version_comment AS comment')
      return answer([{ version: this.options.version, comment: this.options.comment ?? '' }]);
    if (sql === 'SHOW MASTER STATUS') {
      if (mysql && this.number >= 80400) throw parseError('MASTER STATUS');
      return status();
    }
    if (sql === 'SHOW BINARY LOG STATUS') {
      if (this.mariadb || this.number < 80200) throw parseError('BINARY LOG STATUS');
      return status();
    }
    if (sql === 'SHOW BINARY LOGS') return answer((this.options.files ?? []).map((f) => ({ Log_name: f.name, File_size: f.size, Encrypted: 'No' })));
    if (sql.startsWith('SELECT @@expire_logs_days')) {
      if (mysql && this.number >= 80400) throw mysqlError(1193, 'ER_UNKNOWN_SYSTEM_VARIABLE', "Unknown system variable 'expire_logs_days'");
      return answer([{ days: 0, seconds: 86_400 }]);
    }
    if (sql === 'SELECT 0 AS days, @@binlog_expire_logs_seconds AS seconds') return answer([{ days: 0, seconds: 86_400 }]);
    if (sql.startsWith("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'server_uuid')"))
      return answer([
        { Variable_name: 'server_id', Value: String(this.options.serverId ?? 1) },
        ...(mysql && this.options.serverUuid ? [{ Variable_name: 'server_uuid', Value: this.options.serverUuid }] : []),
      ]);
    if (sql.startsWith('SELECT @@GLOBAL.gtid_mode')) {
      if (this.mariadb) throw mysqlError(1193, 'ER_UNKNOWN_SYSTEM_VARIABLE', "Unknown system variable 'gtid_mode'");
      return answer([
        {
          mode: this.options.gtidMode ?? 'ON',
          executed: this.options.gtidExecuted ?? '',
          purged: this.options.gtidPurged ?? '',
          owned: this.options.gtidOwned ?? '',
        },
      ]);
    }
    if (/^SELECT WAIT_FOR_EXECUTED_GTID_SET\(\?, \d+\) AS timedOut$/.test(sql)) {
      if (this.mariadb) throw mysqlError(1305, 'ER_SP_DOES_NOT_EXIST', 'FUNCTION WAIT_FOR_EXECUTED_GTID_SET does not exist');
      return answer([{ timedOut: this.options.commitsStuck ? 1 : 0 }]);
    }
    const page = /^SHOW BINLOG EVENTS IN (?:'([^']+)'|\?) FROM (\d+) LIMIT (\d+)$/.exec(sql);
    if (page && (page[1] === undefined || Number(page[3]) > 1)) {
      // A page of events from an event's start on, each ending where the next starts.
      const file = this.options.files?.find((f) => f.name === (page[1] ?? values[0]));
      if (!file) throw mysqlError(1220, 'ER_ERROR_WHEN_EXECUTING_COMMAND', 'Error when executing command SHOW BINLOG EVENTS: Could not find target log');
      const starts = [...(file.events ?? [4])].sort((a, b) => a - b);
      const from = starts.indexOf(Number(page[2]));
      if (from < 0 && Number(page[2]) !== file.size)
        throw mysqlError(1220, 'ER_ERROR_WHEN_EXECUTING_COMMAND', 'Error when executing command SHOW BINLOG EVENTS: Wrong offset or I/O error');
      return answer(
        (from < 0 ? [] : starts.slice(from, from + Number(page[3]))).map((pos) => {
          const type = file.types?.[pos] ?? (pos === 4 ? 'Format_desc' : 'Gtid');
          const gtid = file.gtids?.[pos];
          const end = starts[starts.indexOf(pos) + 1] ?? file.size;
          return { Log_name: file.name, Pos: pos, Event_type: type, Server_id: 1, End_log_pos: end, Info: gtid ? `SET @@SESSION.GTID_NEXT= '${gtid}'` : '' };
        }),
      );
    }
    const events = /^SHOW BINLOG EVENTS IN '([^']+)' FROM (\d+) LIMIT 1$/.exec(sql);
    if (events) {
      const file = this.options.files?.find((f) => f.name === events[1]);
      const pos = Number(events[2]);
      if (!file) throw mysqlError(1220, 'ER_ERROR_WHEN_EXECUTING_COMMAND', 'Error when executing command SHOW BINLOG EVENTS: Could not find target log');
      if (pos === file.size) return answer([]);
      if (!(file.events ?? [4]).includes(pos))
        throw mysqlError(1220, 'ER_ERROR_WHEN_EXECUTING_COMMAND', 'Error when executing command SHOW BINLOG EVENTS: Wrong offset or I/O error');
      return answer([
        { Log_name: file.name, Pos: pos, Event_type: file.types?.[pos] ?? (pos === 4 ? 'Format_desc' : 'Gtid'), Server_id: 1, End_log_pos: pos + 10, Info: '' },
      ]);
    }
    if (sql === 'SHOW BINLOG EVENTS IN ? LIMIT 3') {
      // The manual's SHOW BINLOG EVENTS: a file starts with Format_desc and (MySQL) Previous_gtids.
      const file = this.options.files?.find((f) => f.name === values[0]);
      if (!file) throw mysqlError(1220, 'ER_ERROR_WHEN_EXECUTING_COMMAND', 'Could not find target log');
      return answer([
        { Log_name: file.name, Pos: 4, Event_type: 'Format_desc', End_log_pos: 126, Info: `Server ver: ${this.options.version}, Binlog ver: 4` },
        ...(mysql ? [{ Log_name: file.name, Pos: 126, Event_type: 'Previous_gtids', End_log_pos: 197, Info: file.before ?? '' }] : []),
      ]);
    }
    if (sql === 'SELECT BINLOG_GTID_POS(?, ?) AS gtid') {
      if (mysql) throw mysqlError(1305, 'ER_SP_DOES_NOT_EXIST', 'FUNCTION BINLOG_GTID_POS does not exist');
      // sql/item_strfunc.cc Item_func_binlog_gtid_pos: NULL for a position past UINT_MAX32.
      const file = this.options.files?.find((f) => f.name === values[0]);
      return answer([{ gtid: Number(values[1]) > 2 ** 32 - 1 ? null : (file?.gtidAt?.[Number(values[1])] ?? null) }]);
    }
    if (sql === 'SELECT BINLOG_GTID_POS(?, 4) AS gtid') {
      if (mysql) throw mysqlError(1305, 'ER_SP_DOES_NOT_EXIST', 'FUNCTION BINLOG_GTID_POS does not exist');
      return answer([{ gtid: this.options.files?.find((f) => f.name === values[0])?.before ?? '' }]);
    }
    if (sql === 'SELECT @@gtid_binlog_state AS state') {
      if (mysql) throw mysqlError(1193, 'ER_UNKNOWN_SYSTEM_VARIABLE', "Unknown system variable 'gtid_binlog_state'");
      return answer([{ state: this.options.gtidBinlogState ?? '' }]);
    }
    if (sql === 'START TRANSACTION WITH CONSISTENT SNAPSHOT') {
      this.inTransaction = true;
      this.tableLocks = undefined;
      return answer([]);
    }
    if (sql === 'COMMIT' || sql === 'ROLLBACK') {
      this.inTransaction = false;
      return answer([]);
    }
    if (sql === "SHOW STATUS LIKE 'binlog_snapshot_%'") {
      if (mysql) return answer([]);
      const end = this.binlogEnd();
      return answer([
        { Variable_name: 'Binlog_snapshot_file', Value: end.file },
        { Variable_name: 'Binlog_snapshot_position', Value: String(end.pos) },
      ]);
    }
    if (sql === 'SELECT LOCAL FROM performance_schema.log_status') {
      if (this.mariadb) throw mysqlError(1146, 'ER_NO_SUCH_TABLE', "Table 'performance_schema.log_status' doesn't exist");
      if (!this.options.grants?.backupAdmin)
        throw mysqlError(1227, 'ER_SPECIFIC_ACCESS_DENIED_ERROR', 'Access denied; you need (at least one of) the BACKUP_ADMIN privilege(s) for this operation');
      if (this.options.performanceSchemaOff) return answer([]);
      const end = this.binlogEnd();
      return answer([{ LOCAL: JSON.stringify({ gtid_executed: this.options.gtidExecuted ?? '', binary_log_file: end.file, binary_log_position: end.pos }) }]);
    }
    if (sql === 'SET SESSION lock_wait_timeout = 5') return answer([]);
    if (sql === 'FLUSH TABLES WITH READ LOCK') {
      if (!this.options.grants?.reload)
        throw mysqlError(1227, 'ER_SPECIFIC_ACCESS_DENIED_ERROR', 'Access denied; you need (at least one of) the RELOAD privilege(s) for this operation');
      if (this.options.busy === 'global') throw mysqlError(1205, 'ER_LOCK_WAIT_TIMEOUT', 'Lock wait timeout exceeded; try restarting transaction');
      this.locked = true;
      return answer([]);
    }
    const lockTables = /^LOCK TABLES (.+)$/.exec(sql);
    if (lockTables) {
      if (!this.options.grants?.lockTables) throw mysqlError(1044, 'ER_DBACCESS_DENIED_ERROR', "Access denied for user 'sluice'@'%' to database 'shop'");
      if (this.options.busy === 'tables') throw mysqlError(1205, 'ER_LOCK_WAIT_TIMEOUT', 'Lock wait timeout exceeded; try restarting transaction');
      this.inTransaction = false; // LOCK TABLES commits an open transaction
      this.tableLocks = lockTables[1];
      return answer([]);
    }
    if (sql === 'UNLOCK TABLES') {
      this.locked = false;
      if (this.tableLocks !== undefined) this.inTransaction = false; // it commits only after LOCK TABLES
      this.tableLocks = undefined;
      return answer([]);
    }
    throw new Error(`the fake ${this.options.version} server does not know: ${sql}`);
  }

  async end(): Promise<void> {}
}
