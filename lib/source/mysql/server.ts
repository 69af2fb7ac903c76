import mysql from 'mysql2/promise';
import { type BinlogPosition, comparePositions, fileNumber, formatPosition } from '../../core/position.ts';
import { ErrorCode, PositionLostError, PreflightError, SluiceError } from '../../errors.ts';
import { authRefusal } from './auth.ts';
import { binaryLogs } from './dialect/common.ts';
import { dialectOf } from './dialect/dialect.ts';
import { checkGrants } from './grants.ts';
import { connectionOptions, type MysqlTarget, scrub } from './target.ts';

// SHOW BINARY LOGS reads the same on every server; the dialects' GTID code needs it too.
export { binaryLogs };

/** The minimal connection surface sluice uses, so tests and other drivers can stand in. */
export interface SqlConnection {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>;
  end(): Promise<void>;
}

/** Opens a control connection; values arrive as exact text, times in UTC. */
export async function connect(target: MysqlTarget): Promise<SqlConnection> {
  try {
    return await mysql.createConnection({
      ...connectionOptions(target),
      dateStrings: true,
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
      connectTimeout: 10_000,
    });
  } catch (error) {
    const refused = authRefusal(error);
    if (refused) throw refused; // a setting to change, not a network to wait for
    // A password encrypted for another key reads as a wrong password to the server.
    const keyHint =
      target.serverPublicKey && (error as { errno?: number }).errno === 1045
        ? " (if the password is right, the pinned SLUICE_MYSQL_SERVER_PUBLIC_KEY may not be this server's key: compare it with SHOW STATUS LIKE 'Caching_sha2_password_rsa_public_key')"
        : '';
    throw new SluiceError(ErrorCode.MYSQL_CONNECT, `cannot connect to MySQL at ${target.label}: ${scrub((error as Error).message, target.uri)}${keyHint}`, {
      cause: error,
      retriable: true,
    });
  }
}

async function rows<T>(conn: SqlConnection, sql: string, values?: unknown[]): Promise<T[]> {
  const [result] = await conn.query(sql, values);
  return result as T[];
}

/**
 * The server's current end of binlog: where `latest` starts and where `--once` stops. Asked in the
 * connection's dialect (SHOW MASTER STATUS, or SHOW BINARY LOG STATUS on MySQL 8.2+).
 */
export async function masterPosition(conn: SqlConnection): Promise<BinlogPosition> {
  return (await dialectOf(conn)).binlogEnd(conn);
}

/** Fails fast with a PositionLostError if the position's file was purged or lies beyond the server's binlog. */
export async function checkPositionReadable(conn: SqlConnection, position: BinlogPosition, what = 'the stored position'): Promise<void> {
  const logs = await binaryLogs(conn);
  const first = logs[0];
  const last = logs[logs.length - 1];
  const oldest = first ? `${first.file}` : 'none';
  const here = logs.find((l) => l.file === position.file);
  if (!here || (last && comparePositions(position, { file: last.file, pos: last.size }) > 0) || (first && fileNumber(position.file) < fileNumber(first.file))) {
    throw new PositionLostError(
      `${what} ${formatPosition(position)} is not on the server (oldest binlog: ${oldest}). ` +
        'It was purged while sluice was not reading, or the server was replaced. Nothing was skipped silently: ' +
        're-snapshot the source or reset its position (docs/RUNBOOK.md), and keep binlogs longer than your longest outage.',
    );
  }
}

/** The server variables preflight reads; a server lacks those it does not know (MariaDB the MySQL 8 ones). */
const PREFLIGHT_VARIABLES = ['log_bin', 'binlog_format', 'binlog_row_image', 'binlog_row_metadata'] as const;

/**
 * Checks the server's binlog settings (its global variables, as `SHOW GLOBAL VARIABLES` lists them)
 * and returns what is wrong, naming the statement that fixes it. These are the defaults every
 * session starts with; a session may change its own, which the binlog reader checks event by event
 * (lib/source/mysql/guards.ts).
 */
export function settingsProblem(vars: Readonly<Record<string, string | undefined>>): PreflightError | undefined {
  const setting = (name: string, want: string) =>
    `SET GLOBAL ${name} = '${want}' (and ${name}=${want} in the server configuration / RDS parameter group so it survives a restart)`;
  const value = (name: (typeof PREFLIGHT_VARIABLES)[number]) => vars[name]?.toUpperCase();
  if (value('log_bin') !== 'ON' && value('log_bin') !== '1')
    return new PreflightError(
      ErrorCode.PREFLIGHT_LOG_BIN,
      'binary logging is off. Start the server with --log-bin (RDS/Aurora: backup retention > 0 enables it).',
    );
  if (value('binlog_row_metadata') === undefined)
    return new PreflightError(
      ErrorCode.PREFLIGHT_VERSION,
      'the server has no binlog_row_metadata variable; sluice needs MySQL 8.0.14+ or MariaDB 10.5+ so that row events carry column names.',
    );
  if (value('binlog_format') !== 'ROW')
    return new PreflightError(
      ErrorCode.PREFLIGHT_BINLOG_FORMAT,
      `binlog_format is ${vars.binlog_format}; CDC needs ROW. Fix: ${setting('binlog_format', 'ROW')}.`,
    );
  if (value('binlog_row_image') !== 'FULL')
    return new PreflightError(
      ErrorCode.PREFLIGHT_BINLOG_ROW_IMAGE,
      `binlog_row_image is ${vars.binlog_row_image}; sluice needs FULL before/after images. Fix: ${setting('binlog_row_image', 'FULL')}.`,
    );
  if (value('binlog_row_metadata') !== 'FULL')
    return new PreflightError(
      ErrorCode.PREFLIGHT_BINLOG_ROW_METADATA,
      `binlog_row_metadata is ${vars.binlog_row_metadata}; without FULL, rows written before an ALTER TABLE are decoded with the wrong columns. Fix: ${setting('binlog_row_metadata', 'FULL')}.`,
    );
  return undefined;
}

/** Checks the settings and grants CDC needs, the latter as the connection's dialect reads them; each failure says the statement that fixes it. */
export async function preflight(conn: SqlConnection): Promise<void> {
  const list = await rows<{ Variable_name: string; Value: string }>(
    conn,
    `SHOW GLOBAL VARIABLES WHERE Variable_name IN (${PREFLIGHT_VARIABLES.map((v) => `'${v}'`).join(', ')})`,
  );
  const problem = settingsProblem(Object.fromEntries(list.map((r) => [r.Variable_name, r.Value])));
  if (problem) throw problem;
  await checkGrants(conn, await dialectOf(conn));
}
