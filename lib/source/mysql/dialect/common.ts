import type { BinlogPosition } from '../../../core/position.ts';
import { ErrorCode, PreflightError, SluiceError } from '../../../errors.ts';
import type { SqlConnection } from '../server.ts';

/* What both dialects' statements share: reading rows, the binlog status, and lock refusals. */

export async function rows<T>(conn: SqlConnection, sql: string, values?: unknown[]): Promise<T[]> {
  const [result] = await conn.query(sql, values);
  return result as T[];
}

/** The binlog end `statement` (SHOW MASTER STATUS or SHOW BINARY LOG STATUS) reports. */
export async function statusPosition(conn: SqlConnection, statement: string): Promise<BinlogPosition> {
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
export const denied = (error: unknown) => DENIED.has((error as { errno?: number }).errno ?? 0);

/** ER_LOCK_WAIT_TIMEOUT: a lock was not granted within lock_wait_timeout (running statements or open transactions hold it). */
export const LOCK_WAIT_TIMEOUT = 1205;
/** How long a lock sluice takes for the snapshot point waits for the statements and transactions that hold it. */
export const LOCK_WAIT_SECONDS = 5;

export const quoted = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** The point's lock waited out lock_wait_timeout: a busy server, not a missing grant; the next run tries again. */
export function busy(lock: string, error: unknown): SluiceError {
  return new SluiceError(
    ErrorCode.SNAPSHOT_BUSY,
    `${lock} waited ${LOCK_WAIT_SECONDS} s (lock_wait_timeout) for running statements or open transactions to finish, to pin the binlog point a consistent read needs (${(error as Error).message}); the next run tries again. A query or transaction that runs for long on these tables delays it: see docs/RUNBOOK.md "MySQL versions"`,
    { cause: error, retriable: true },
  );
}

/** The binlog files the server lists (SHOW BINARY LOGS), oldest first, with their sizes. */
export async function binaryLogs(conn: SqlConnection): Promise<{ file: string; size: number }[]> {
  const list = await rows<{ Log_name: string; File_size: string | number }>(conn, 'SHOW BINARY LOGS');
  return list.map((r) => ({ file: r.Log_name, size: Number(r.File_size) }));
}
