import mysql from 'mysql2/promise';
import { type BinlogPosition, comparePositions, fileNumber, formatPosition } from '../../core/position.ts';
import { ErrorCode, PositionLostError, PreflightError, SluiceError } from '../../errors.ts';
import type { MysqlTarget } from './target.ts';

/** The minimal connection surface sluice uses, so tests and other drivers can stand in. */
export interface SqlConnection {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>;
  end(): Promise<void>;
}

/** Opens a control connection; values arrive as exact text, times in UTC. */
export async function connect(target: MysqlTarget): Promise<SqlConnection> {
  try {
    return await mysql.createConnection({
      uri: target.uri,
      ssl: target.ssl,
      dateStrings: true,
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
      connectTimeout: 10_000,
    });
  } catch (error) {
    throw new SluiceError(ErrorCode.MYSQL_CONNECT, `cannot connect to MySQL at ${target.label}: ${(error as Error).message}`, {
      cause: error,
      retriable: true,
    });
  }
}

async function rows<T>(conn: SqlConnection, sql: string, values?: unknown[]): Promise<T[]> {
  const [result] = await conn.query(sql, values);
  return result as T[];
}

/** The server's current end of binlog: where `latest` starts and where `--once` stops. */
export async function masterPosition(conn: SqlConnection): Promise<BinlogPosition> {
  const [status] = await rows<{ File: string; Position: string | number }>(conn, 'SHOW MASTER STATUS');
  if (!status)
    throw new PreflightError(
      ErrorCode.PREFLIGHT_LOG_BIN,
      'binary logging is off on the source. Start the server with log_bin enabled (RDS/Aurora: set a backup retention period > 0).',
    );
  return { file: status.File, pos: Number(status.Position) };
}

export async function binaryLogs(conn: SqlConnection): Promise<{ file: string; size: number }[]> {
  const list = await rows<{ Log_name: string; File_size: string | number }>(conn, 'SHOW BINARY LOGS');
  return list.map((r) => ({ file: r.Log_name, size: Number(r.File_size) }));
}

/** Fails fast with a PositionLostError if the stored position's file was purged or lies beyond the server's binlog. */
export async function checkPositionReadable(conn: SqlConnection, position: BinlogPosition): Promise<void> {
  const logs = await binaryLogs(conn);
  const first = logs[0];
  const last = logs[logs.length - 1];
  const oldest = first ? `${first.file}` : 'none';
  const here = logs.find((l) => l.file === position.file);
  if (!here || (last && comparePositions(position, { file: last.file, pos: last.size }) > 0) || (first && fileNumber(position.file) < fileNumber(first.file))) {
    throw new PositionLostError(
      `the stored position ${formatPosition(position)} is not on the server (oldest binlog: ${oldest}). ` +
        'It was purged while sluice was not reading, or the server was replaced. Nothing was skipped silently: ' +
        're-snapshot the source or reset its position (docs/RUNBOOK.md), and keep binlogs longer than your longest outage.',
    );
  }
}

/** Checks the settings and grants CDC needs; each failure says the statement that fixes it. */
export async function preflight(conn: SqlConnection): Promise<void> {
  let vars: Record<string, string | null>;
  try {
    const [row] = await rows<Record<string, string | null>>(
      conn,
      'SELECT @@log_bin AS log_bin, @@binlog_format AS binlog_format, @@binlog_row_image AS binlog_row_image, @@binlog_row_metadata AS binlog_row_metadata',
    );
    vars = row ?? {};
  } catch (error) {
    if (/binlog_row_metadata/.test((error as Error).message)) {
      throw new PreflightError(
        ErrorCode.PREFLIGHT_VERSION,
        'the server has no binlog_row_metadata variable; sluice needs MySQL 8.0.14+ or MariaDB 10.5+ so that row events carry column names.',
      );
    }
    throw error;
  }
  const setting = (name: string, want: string) =>
    `SET GLOBAL ${name} = '${want}' (and ${name}=${want} in the server configuration / RDS parameter group so it survives a restart)`;
  if (String(vars.log_bin) !== '1')
    throw new PreflightError(
      ErrorCode.PREFLIGHT_LOG_BIN,
      'binary logging is off. Start the server with --log-bin (RDS/Aurora: backup retention > 0 enables it).',
    );
  if (vars.binlog_format !== 'ROW')
    throw new PreflightError(
      ErrorCode.PREFLIGHT_BINLOG_FORMAT,
      `binlog_format is ${vars.binlog_format}; CDC needs ROW. Fix: ${setting('binlog_format', 'ROW')}.`,
    );
  if (vars.binlog_row_image !== 'FULL')
    throw new PreflightError(
      ErrorCode.PREFLIGHT_BINLOG_ROW_IMAGE,
      `binlog_row_image is ${vars.binlog_row_image}; sluice needs FULL before/after images. Fix: ${setting('binlog_row_image', 'FULL')}.`,
    );
  if (vars.binlog_row_metadata !== 'FULL') {
    throw new PreflightError(
      ErrorCode.PREFLIGHT_BINLOG_ROW_METADATA,
      `binlog_row_metadata is ${vars.binlog_row_metadata}; without FULL, rows written before an ALTER TABLE are decoded with the wrong columns. Fix: ${setting('binlog_row_metadata', 'FULL')}.`,
    );
  }
  const grants = (await rows<Record<string, string>>(conn, 'SHOW GRANTS'))
    .map((r) => Object.values(r)[0] ?? '')
    .join('\n')
    .toUpperCase();
  const has = (privilege: string) => grants.includes('ALL PRIVILEGES ON *.*') || new RegExp(`GRANT [^\\n]*\\b${privilege}\\b[^\\n]* ON \\*\\.\\*`).test(grants);
  const missing = [
    has('REPLICATION SLAVE') || has('REPLICATION REPLICA') ? undefined : 'REPLICATION SLAVE',
    has('REPLICATION CLIENT') || has('BINLOG MONITOR') ? undefined : 'REPLICATION CLIENT',
    has('SELECT') ? undefined : 'SELECT',
  ].filter(Boolean);
  if (missing.length) {
    throw new PreflightError(
      ErrorCode.PREFLIGHT_GRANTS,
      `the MySQL user lacks ${missing.join(', ')}. Fix: GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '<user>'@'%';`,
    );
  }
}
