/**
 * Every error code sluice reports, one entry each: the code is what logs, metrics, the state item
 * and `sluice status` show, so it never changes once released. docs/RUNBOOK.md ("Error codes")
 * mirrors this list with what to do about each; a unit test keeps the two in step.
 */
export const ErrorCode = {
  // Configuration and the local stack
  /** A setting is missing or malformed; the message names each variable and what it accepts. */
  CONFIG_INVALID: 'CONFIG_INVALID',
  /** The embedded local stack could not start (MariaDB, Java, DynamoDB Local, fauxqs) or is not running. */
  LOCAL_STACK: 'LOCAL_STACK',

  // The source database
  /** Cannot reach MySQL (network, credentials, TLS). Retriable. */
  MYSQL_CONNECT: 'MYSQL_CONNECT',
  /** The Secrets Manager secret cannot be read or lacks username/password/host. */
  MYSQL_SECRET: 'MYSQL_SECRET',
  /** Binary logging is off (`log_bin`). */
  PREFLIGHT_LOG_BIN: 'PREFLIGHT_LOG_BIN',
  /** The server is too old to have `binlog_row_metadata` (MySQL < 8.0.14, MariaDB < 10.5). */
  PREFLIGHT_VERSION: 'PREFLIGHT_VERSION',
  /** `binlog_format` is not ROW. */
  PREFLIGHT_BINLOG_FORMAT: 'PREFLIGHT_BINLOG_FORMAT',
  /** `binlog_row_image` is not FULL. */
  PREFLIGHT_BINLOG_ROW_IMAGE: 'PREFLIGHT_BINLOG_ROW_IMAGE',
  /** `binlog_row_metadata` is not FULL. */
  PREFLIGHT_BINLOG_ROW_METADATA: 'PREFLIGHT_BINLOG_ROW_METADATA',
  /** The MySQL user lacks REPLICATION SLAVE, REPLICATION CLIENT or SELECT. */
  PREFLIGHT_GRANTS: 'PREFLIGHT_GRANTS',
  /** No longer raised: compressed transactions (`binlog_transaction_compression=ON`) are decoded. Kept so older errors still resolve. */
  PREFLIGHT_BINLOG_COMPRESSION: 'PREFLIGHT_BINLOG_COMPRESSION',
  /** No longer raised: partial JSON updates (`binlog_row_value_options=PARTIAL_JSON`) are decoded. Kept so older errors still resolve. */
  PREFLIGHT_BINLOG_ROW_VALUE_OPTIONS: 'PREFLIGHT_BINLOG_ROW_VALUE_OPTIONS',
  /** `SHOW BINARY LOGS` is empty, so `earliest` has nowhere to start. */
  NO_BINLOG: 'NO_BINLOG',
  /** The stored (or requested) binlog position is no longer on the server: purged, or the server was replaced. Fatal. */
  POSITION_LOST: 'POSITION_LOST',
  /**
   * The stored position belongs to another binlog history: the file it names was re-created (RESET
   * MASTER, a restore) or the server is another one (failover, Blue/Green). Fatal.
   */
  POSITION_FOREIGN: 'POSITION_FOREIGN',
  /**
   * A snapshot page's watermark lies before the source's stored position: the server's binlog is
   * another history than the stored position's, and the poller has not moved to it yet. The page
   * is not kept; retriable once the source's position is moved (`sluice state reset`).
   */
  SNAPSHOT_HISTORY: 'SNAPSHOT_HISTORY',
  /** A position given to sluice (`SLUICE_STARTUP=position:…`, `state reset --to position:…`) is not where a transaction starts. */
  POSITION_INVALID: 'POSITION_INVALID',
  /** The binlog connection failed mid-stream. Retriable: the next run resumes at the stored position. */
  BINLOG_STREAM: 'BINLOG_STREAM',
  /**
   * The stored position lies past 4 GiB in its binlog file, where a dump cannot start by file and
   * offset; the run re-read the file from its start and its time was up before it got there. Fatal:
   * nothing was written, and a run with more time gets past it.
   */
  RESUME_PAST_4GIB: 'RESUME_PAST_4GIB',
  /** A rows event of a captured table holds a partial row image (a session with binlog_row_image MINIMAL or NOBLOB). Fatal. */
  ROW_IMAGE_PARTIAL: 'ROW_IMAGE_PARTIAL',
  /** Rows of a captured table in an XA transaction prepared in two phases, whose outcome comes later in the binlog. Fatal. */
  XA_PREPARED: 'XA_PREPARED',
  /** No longer raised: a compressed transaction (MySQL 8 TRANSACTION_PAYLOAD event) is decoded. Kept so older errors still resolve. */
  BINLOG_COMPRESSED: 'BINLOG_COMPRESSED',
  /** No longer raised: a partial JSON update (MySQL 8 PARTIAL_UPDATE_ROWS event) is applied to its before image. Kept so older errors still resolve. */
  BINLOG_PARTIAL_JSON: 'BINLOG_PARTIAL_JSON',
  /** A table named for a snapshot does not exist, or the sluice user cannot see it. */
  TABLE_NOT_FOUND: 'TABLE_NOT_FOUND',
  /** A table in a flag or setting (`--tables`, `--table`, `SLUICE_KEY_COLUMNS`) is not `db.table` or its backtick-quoted form; the message says where. */
  TABLE_NAME: 'TABLE_NAME',

  // AWS resources
  /** The DynamoDB state table does not exist (`sluice init` or the deployment creates it). */
  STATE_TABLE_MISSING: 'STATE_TABLE_MISSING',
  /** The S3 bucket does not exist (`sluice init` or the deployment creates it). */
  BUCKET_MISSING: 'BUCKET_MISSING',

  // Capture and commits
  /** A DDL statement touches a captured table and sluice cannot tell what it does to the rows. Fatal: the position stays before it. */
  DDL_UNKNOWN: 'DDL_UNKNOWN',
  /**
   * A system-versioned table's row ends its period neither at the end of time nor by its statement's
   * time: sluice cannot tell a current row from a history row (lib/capture/current-rows.ts). Fatal.
   */
  VERSIONED_ROW_END: 'VERSIONED_ROW_END',
  /** A change to a captured table was logged as a statement (binlog_format STATEMENT/MIXED in a session): its rows are not in the binlog. Fatal. */
  STATEMENT_DML: 'STATEMENT_DML',
  /** A transaction did not end before the run's time was up. Retriable: the next run re-reads it. */
  TXN_OVER_BUDGET: 'TXN_OVER_BUDGET',
  /** Another run holds the lease, or this run's lease expired: it must not write. Retriable. */
  LEASE_LOST: 'LEASE_LOST',
  /** The state item changed under this run (a concurrent writer). Retriable. */
  OFFSET_CONFLICT: 'OFFSET_CONFLICT',
  /** A committed commit's staging object and its final object are both gone: the commit cannot complete. Fatal. */
  STAGING_LOST: 'STAGING_LOST',
  /** S3 refused to delete staging objects. Retriable: the next run deletes them. */
  S3_DELETE: 'S3_DELETE',

  // Snapshots
  /** Some tables cannot be snapshotted (listed in the message); nothing was copied. */
  SNAPSHOT_REFUSED: 'SNAPSHOT_REFUSED',
  /** The source has no snapshot request to work on. */
  SNAPSHOT_NONE: 'SNAPSHOT_NONE',
  /** A table without a key on a server that cannot pin where a consistent snapshot reads (MySQL without RELOAD or LOCK TABLES): it cannot be read whole at a known point. */
  SNAPSHOT_NO_KEY: 'SNAPSHOT_NO_KEY',
  /** MySQL with gtid_mode not ON where the user may run neither LOCK TABLES nor FLUSH TABLES WITH READ LOCK: a snapshot page cannot know that the transactions before its binlog position have committed. */
  SNAPSHOT_NO_POINT: 'SNAPSHOT_NO_POINT',
  /** A table's structure changed during every read of it the worker tried. Retriable. */
  SNAPSHOT_TABLE_CHANGING: 'SNAPSHOT_TABLE_CHANGING',
  /** A table's key cannot be paged exactly (YEAR(2) or spatial key columns compare differently from how they sort). */
  SNAPSHOT_BAD_KEY: 'SNAPSHOT_BAD_KEY',
  /** The configured chunk column is missing, nullable or not uniquely indexed. */
  SNAPSHOT_BAD_CHUNK_COLUMN: 'SNAPSHOT_BAD_CHUNK_COLUMN',

  // Operations
  /** State import/reset while a run holds the lease. Retry after the run. */
  STATE_BUSY: 'STATE_BUSY',
  /** State import/reset while a committed batch is still being renamed. Run one capture first. */
  STATE_PENDING: 'STATE_PENDING',
  /** The file given to `state import` is not a `sluice-state/v1` savepoint with a position; the message names the file and the field. */
  STATE_FILE: 'STATE_FILE',
  /** The savepoint belongs to another source (`--force` imports it anyway). */
  STATE_SOURCE: 'STATE_SOURCE',
  /** The stored state is ahead of the savepoint (`--force` rolls back on purpose). */
  STATE_NEWER: 'STATE_NEWER',
  /** `state reset --to` was given a startup mode that is not a position (`initial…`). */
  STATE_RESET: 'STATE_RESET',
  /** `sluice sources add` of an id already registered in the stack's fleet (`sources set` changes it). */
  SOURCE_EXISTS: 'SOURCE_EXISTS',
  /** A source id the stack's fleet does not hold (`sources set`, `pause`, `resume`, `remove`); `sluice sources list` names those it does. */
  SOURCE_NOT_FOUND: 'SOURCE_NOT_FOUND',
  /** `verify` while a snapshot is copying. */
  VERIFY_SNAPSHOT_RUNNING: 'VERIFY_SNAPSHOT_RUNNING',
  /** The server cannot pin where a consistent snapshot reads (MySQL without RELOAD or LOCK TABLES): verify cannot read it at a known position. */
  VERIFY_UNSUPPORTED: 'VERIFY_UNSUPPORTED',
  /**
   * The output holds events that sort after the MySQL read although the stored position was read
   * before it: the source's position was moved while verify ran, or the output's order is broken.
   * Verify judges nothing then rather than skip the table.
   */
  VERIFY_ORDER: 'VERIFY_ORDER',
  /** `materialize --out` is neither `.parquet` nor `.jsonl`. */
  MATERIALIZE_FORMAT: 'MATERIALIZE_FORMAT',
  /** The output has no events for the table to materialize. */
  MATERIALIZE_EMPTY: 'MATERIALIZE_EMPTY',
  /** Events are written in a schema version the history lacks, or contradict it (rows of one version on both sides of a key change). */
  MATERIALIZE_HISTORY: 'MATERIALIZE_HISTORY',
  /** An event line is not laid out as sluice writes it (no `source`, `before`/`after` out of place). */
  MATERIALIZE_EVENTS: 'MATERIALIZE_EVENTS',

  // Iceberg tables
  /** A column's type changed in a way Iceberg cannot promote; the table must be rewritten. */
  ICEBERG_INCOMPATIBLE_TYPE: 'ICEBERG_INCOMPATIBLE_TYPE',
  /** A metadata, manifest or manifest-list file the table's metadata names is missing. Fatal. */
  ICEBERG_FILE_MISSING: 'ICEBERG_FILE_MISSING',
  /** The Glue table points at a metadata file this merge did not replace: another writer changed it. */
  ICEBERG_CATALOG_CONFLICT: 'ICEBERG_CATALOG_CONFLICT',
  /** The table holds a file kind sluice does not read (e.g. position deletes written by another engine). */
  ICEBERG_UNSUPPORTED: 'ICEBERG_UNSUPPORTED',

  /** A broken invariant: a bug in sluice, never a user error. Fatal. */
  ASSERTION: 'ASSERTION',

  /**
   * The MySQL account uses SHA-2 authentication (caching_sha2_password, sha256_password), which sends
   * the password itself, over a channel that would expose it: no TLS and no pinned server key, or
   * TLS without a certificate check. The password was not sent (mysql2's first answer, a
   * mysql_native_password token, was: see lib/source/mysql/auth.ts). Fatal.
   */
  MYSQL_AUTH_INSECURE: 'MYSQL_AUTH_INSECURE',
  /** MySQL: the lock that pins a consistent read's binlog point (a global read lock or LOCK TABLES … READ) waited out lock_wait_timeout, or the commits in flight at a snapshot page's position did not finish within 5 s. Retriable. */
  SNAPSHOT_BUSY: 'SNAPSHOT_BUSY',
  /** The Iceberg REST catalog refused a request or did not answer (unreachable, credentials, a bad request). Retriable when the catalog may recover (no answer, 5xx, 429). */
  ICEBERG_CATALOG_REQUEST: 'ICEBERG_CATALOG_REQUEST',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * One error hierarchy for sluice. Every error that crosses a module boundary is a SluiceError with
 * a stable `code` from the list above and a `retriable` flag: retriable errors end the run and the
 * next scheduled run tries again; fatal ones are recorded for `sluice status` and need an operator.
 */
export class SluiceError extends Error {
  override readonly name: string = 'SluiceError';
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** The output cannot be materialized as written: the schema history and the events disagree, or a line is malformed. */
export class MaterializeError extends SluiceError {
  override readonly name = 'MaterializeError';
  constructor(message: string, code: Extract<ErrorCode, 'MATERIALIZE_HISTORY' | 'MATERIALIZE_EVENTS'> = ErrorCode.MATERIALIZE_HISTORY) {
    super(code, message);
  }
}

/** Configuration is missing or malformed; the message names the variable and what it accepts. */
export class ConfigError extends SluiceError {
  override readonly name = 'ConfigError';
  constructor(message: string) {
    super(ErrorCode.CONFIG_INVALID, message);
  }
}

/** The source database is not set up for CDC (binlog off, wrong format, missing grants). */
export class PreflightError extends SluiceError {
  override readonly name = 'PreflightError';
  constructor(code: Extract<ErrorCode, `PREFLIGHT_${string}`>, message: string) {
    super(code, message);
  }
}

/** The stored binlog position no longer exists on the server (purged, or never valid). */
export class PositionLostError extends SluiceError {
  override readonly name = 'PositionLostError';
  constructor(message: string, cause?: unknown) {
    super(ErrorCode.POSITION_LOST, message, { cause });
  }
}

/** The stored position belongs to another binlog history; `evidence` says what differs, as a sentence part. */
export class PositionForeignError extends SluiceError {
  override readonly name = 'PositionForeignError';
  constructor(
    message: string,
    readonly evidence: string,
  ) {
    super(ErrorCode.POSITION_FOREIGN, message);
  }
}

/** Another run holds the lease, or ours expired: this run must not write state. */
export class LeaseLostError extends SluiceError {
  override readonly name = 'LeaseLostError';
  constructor(message: string) {
    super(ErrorCode.LEASE_LOST, message, { retriable: true });
  }
}

/** The state item changed under us (a concurrent commit): our batch must not be committed. */
export class OffsetConflictError extends SluiceError {
  override readonly name = 'OffsetConflictError';
  constructor(message: string) {
    super(ErrorCode.OFFSET_CONFLICT, message, { retriable: true });
  }
}

/** The local stack could not start; the message says what to install or free. */
export class LocalStackError extends SluiceError {
  override readonly name = 'LocalStackError';
  constructor(message: string, cause?: unknown) {
    super(ErrorCode.LOCAL_STACK, message, { cause });
  }
}

/** A broken invariant: a bug in sluice, never a user error. */
export class AssertionError extends SluiceError {
  override readonly name = 'AssertionError';
  constructor(message: string) {
    super(ErrorCode.ASSERTION, message);
  }
}

/** A SluiceError that needs an operator: recorded where `sluice status` shows it. */
export function isFatal(error: unknown): error is SluiceError {
  return error instanceof SluiceError && !error.retriable;
}
