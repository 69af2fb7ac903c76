import type { GtidPosition, GtidSet } from '../../../core/gtid-set.ts';
import type { BinlogHistory } from '../../../core/history.ts';
import type { BinlogPosition } from '../../../core/position.ts';
import type { TableRef } from '../../../core/table-ref.ts';
import type { CommentRules } from '../ddl/lexer.ts';
import type { SessionGrants } from '../grants.ts';
import type { ServerIdentity } from '../history.ts';
import type { SqlConnection } from '../server.ts';
import { mariadbDialect } from './mariadb.ts';
import { mysqlDialect } from './mysql.ts';

/*
 * Every statement and answer shape in which MySQL 8.0, 8.4, 9.x and MariaDB differ, in one object
 * chosen once per connection from the server's flavor (`dialectOf`). The jobs never ask which server
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
 * | grants (`sessionGrants`)      | SHOW GRANTS (the current role's included)    | SHOW GRANTS, CURRENT_ROLE(), SHOW GRANTS … USING the active roles | same |
 * | session setup (`prepareSession`) | nothing                                   | show_gipk_in_create_table_and_information_schema (8.0.30+) | same |
 * | executable comments (`comments`) | `/*!` but 50700–99999, `/*M!`, six digits | `/*!`, five digits        | `/*!`, six digits (8.1+)                 |
 * | GTIDs (`gtidStart`, `gtidCoverage`, `storedPositionEvidence`) | `d-s-n` per domain, @@gtid_binlog_state, @@server_id | `uuid:n-m` sets, @@gtid_executed/@@gtid_purged, @@server_uuid | same |
 *
 * One file per server implements it: mysql.ts (with mysql-locks.ts, mysql-grants.ts,
 * mysql-gtid.ts) and mariadb.ts (with mariadb-gtid.ts); common.ts holds what both send alike.
 *
 * Statements that read the same everywhere stay where they are used: SHOW BINARY LOGS, SHOW BINLOG
 * EVENTS IN … FROM … LIMIT …, SHOW GLOBAL VARIABLES WHERE …, START TRANSACTION WITH CONSISTENT
 * SNAPSHOT, information_schema queries. sluice sends no SHOW SLAVE/REPLICA STATUS and no RESET.
 */

/**
 * Which server sluice talks to, decided once per connection from `VERSION()` and
 * `@@version_comment`. Only the dialect asks it; everything else asks the dialect.
 */
export interface ServerFlavor {
  readonly kind: 'mysql' | 'mariadb';
  /** major·10000 + minor·100 + patch, as `/*!NNNNN … *\/` comments compare it: 8.0.46 → 80046, 10.11.19 → 101119. */
  readonly version: number;
  /** `VERSION()` as the server reports it, for messages. */
  readonly text: string;
}

/**
 * Reads the flavor from `VERSION()` and `@@version_comment`: MySQL `8.4.3` (Aurora MySQL 3 reports
 * its MySQL version, `8.0.39`), MariaDB `10.11.19-MariaDB-0+deb12u1`, or `5.5.5-10.11.19-MariaDB`
 * through old proxies.
 */
export function parseServerFlavor(version: string, versionComment = ''): ServerFlavor {
  const mariadb = /mariadb/i.test(version) || /mariadb/i.test(versionComment);
  // Old MariaDB clients' protocol prefix: the real version follows it.
  const text = mariadb ? version.replace(/^5\.5\.5-/, '') : version;
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(text);
  const [major, minor, patch] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
  return { kind: mariadb ? 'mariadb' : 'mysql', version: major * 10000 + minor * 100 + patch, text: version };
}

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

/** A transaction as a scan sees it begin: its GTID (null without one), binlog time and (MySQL) original commit time in µs. */
export interface ScannedTransaction {
  readonly gtid: string | null;
  readonly tsMs: number;
  readonly commitUs?: number;
}

/**
 * Scans the binlog from `start` without decoding any rows, showing `visit` each transaction as it
 * begins with the transaction boundary just before it, until `visit` returns true or the stream
 * reaches `end`; returns the last boundary read (binlog-scan.ts binds it to a server).
 */
export type TransactionScan = (
  start: BinlogPosition,
  end: BinlogPosition,
  visit: (txn: ScannedTransaction, before: BinlogPosition) => boolean,
) => Promise<BinlogPosition>;

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

/** Whether a server carries the transactions a position has read and those after it: what to reposition by, or what is not there. */
export type GtidCoverage = { readonly held: true; readonly gtid: string } | { readonly held: false; readonly missing: string };

/**
 * The statements, shapes and capabilities of one server flavor and version (Kysely's
 * `DialectAdapter` is the model): callers ask it what to send and what the server can do, never
 * which server it is — it has no member that says so.
 */
export interface Dialect {
  /** The statement that reports the binlog's current end (File, Position). */
  readonly binlogStatus: string;
  /** The statement that resets the binlog, for messages that name it. */
  readonly resetStatement: string;
  /** How the server reads the executable comments of the DDL it logs (the DDL classifier's lexer). */
  readonly comments: CommentRules;
  /** Sets what sluice's reads need on a new session: MySQL 8.0.30+ shows its generated invisible primary key. */
  prepareSession(conn: SqlConnection): Promise<void>;
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
  /** What a new session of the account holds: global privileges, the roles active at login (MySQL) and those granted (grants.ts). */
  sessionGrants(conn: SqlConnection): Promise<SessionGrants>;
  /**
   * The global privileges the account would hold with `roles` active: MySQL, where a granted role
   * counts only while it is active; undefined on MariaDB, whose SHOW GRANTS includes its current role's.
   */
  privilegesWithRoles(conn: SqlConnection, roles: readonly string[]): Promise<ReadonlySet<string> | undefined>;
  /**
   * What snapshots and `verify` cannot do for lack of a lock grant (a warning for `doctor`);
   * undefined when nothing lacks, and on MariaDB, whose consistent snapshot reports its binlog position.
   */
  lockWarning(conn: SqlConnection): Promise<string | undefined>;
  /**
   * Throws CONFIG unless `text` (SLUICE_STARTUP=gtid:…) has this server's GTID shape: MariaDB's
   * `d-s-n,…` position, MySQL's `uuid:n-m,…` set.
   */
  checkStartupGtid(text: string): void;
  /**
   * Where the transactions `text` names end on this server (a `gtid:` start, a move to another
   * server): the boundary before the first transaction not read, found with `scan`, carrying the
   * GTID state it starts after; `identity`'s transaction is looked for on the way.
   */
  gtidStart(conn: SqlConnection, scan: TransactionScan, text: string, identity?: GtidIdentity): Promise<GtidStart>;
  /**
   * Whether the server holds every transaction `position` has read and still has every one after
   * it, by its GTID state alone (no binlog is read). That the very transaction is in the binlog,
   * and is the one read, only a scan tells (`gtidStart` with an identity).
   */
  gtidCoverage(conn: SqlConnection, position: BinlogPosition): Promise<GtidCoverage>;
  /**
   * The stored position's checks by GTID and server identity before reading (history.ts, whose
   * header has them): why the server is on another history, if it is. POSITION_LOST when what
   * follows the position is purged.
   */
  storedPositionEvidence(
    conn: SqlConnection,
    position: BinlogPosition,
    history: BinlogHistory | undefined,
    server: ServerIdentity,
  ): Promise<string | undefined>;
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
    dialect = conn.query('SELECT VERSION() AS version, @@version_comment AS comment').then(([rows]) => {
      const row = (rows as { version: string; comment: string | null }[])[0];
      return dialectFor(parseServerFlavor(row?.version ?? '', row?.comment ?? ''));
    });
    dialect.catch(() => chosen.delete(conn));
    chosen.set(conn, dialect);
  }
  return dialect;
}
