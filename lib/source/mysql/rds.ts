/*
 * Binlog retention on Amazon RDS and Aurora. There binlogs are purged by the service according to
 * `binlog retention hours` (the `mysql.rds_set_configuration` / `mysql.rds_show_configuration`
 * procedures), not by the server's expiry variables. Its default, NULL, means "purge as soon as
 * possible" on RDS and "lazily, usually within a day" on Aurora MySQL: a poller that stalls for a
 * few hours then finds its position purged (POSITION_LOST).
 *
 * RDS is recognised by calling the procedure, the very interface whose answer is needed (RDS for
 * MariaDB has it too; `@@aurora_version` would miss RDS for MySQL and MariaDB). A server without it
 * answers ER_SP_DOES_NOT_EXIST (1305), but only to a user allowed to execute routines in `mysql`: to
 * any other (sluice's user holds SELECT and the replication privileges), MariaDB 10.11 answers
 * ER_PROCEDURE_ACCESS_DENIED (1370) whether the procedure exists or not (seen in
 * test/integration/rds-retention.test.ts), as MySQL checks EXECUTE before looking the routine up.
 * That answer is settled by `@@basedir`: RDS and Aurora install the server under `/rdsdbbin/`. It is
 * not documented, so it only decides between "RDS, retention unreadable" and "not RDS", never
 * hides an answer the procedure gave.
 */
import type { SqlConnection } from './server.ts';

/** `binlog retention hours` as the server reports it. */
export type RdsRetention =
  | { readonly kind: 'not-rds' }
  /** `hours` null: NULL, purged as soon as possible (RDS) or lazily (Aurora). */
  | { readonly kind: 'hours'; readonly hours: number | null }
  | { readonly kind: 'unreadable'; readonly reason: string };

/** Below this, `doctor` and `status` warn. */
export const MIN_RETENTION_HOURS = 24;

const ER_SP_DOES_NOT_EXIST = 1305;
const ER_PROCEDURE_ACCESS_DENIED = 1370;
const SET_RETENTION = "CALL mysql.rds_set_configuration('binlog retention hours', 168);";

/** Reads RDS/Aurora's `binlog retention hours`, or says the server is not RDS. */
export async function rdsBinlogRetention(conn: SqlConnection): Promise<RdsRetention> {
  let result: unknown;
  try {
    [result] = await conn.query('CALL mysql.rds_show_configuration');
  } catch (error) {
    const errno = (error as { errno?: number }).errno;
    if (errno === ER_SP_DOES_NOT_EXIST) return { kind: 'not-rds' };
    if (errno === ER_PROCEDURE_ACCESS_DENIED && !(await installedByRds(conn))) return { kind: 'not-rds' };
    return { kind: 'unreadable', reason: (error as Error).message };
  }
  // A CALL answers with its result sets followed by the statement's status.
  const sets = Array.isArray(result) ? result : [];
  const rows = (Array.isArray(sets[0]) ? sets[0] : sets) as { name?: unknown; value?: unknown }[];
  const row = rows.find((r) => typeof r?.name === 'string' && r.name.toLowerCase() === 'binlog retention hours');
  if (!row) return { kind: 'unreadable', reason: 'mysql.rds_show_configuration lists no "binlog retention hours"' };
  if (row.value === null || row.value === undefined || String(row.value).toUpperCase() === 'NULL') return { kind: 'hours', hours: null };
  const hours = Number(row.value);
  return Number.isFinite(hours) ? { kind: 'hours', hours } : { kind: 'unreadable', reason: `binlog retention hours is "${String(row.value)}"` };
}

/** The server runs from RDS's install directory (RDS for MySQL and MariaDB, Aurora MySQL). */
async function installedByRds(conn: SqlConnection): Promise<boolean> {
  const [rows] = await conn.query('SELECT @@basedir AS basedir');
  return /^\/rdsdbbin\//.test(String((rows as { basedir?: unknown }[])[0]?.basedir ?? ''));
}

/** What to tell the operator about the retention, if anything. */
export function retentionWarning(retention: RdsRetention): string | undefined {
  switch (retention.kind) {
    case 'not-rds':
      return undefined;
    case 'unreadable':
      return `cannot read RDS/Aurora binlog retention hours (${retention.reason}): run CALL mysql.rds_show_configuration; as the master user and make it at least ${MIN_RETENTION_HOURS} h: ${SET_RETENTION}`;
    case 'hours':
      if (retention.hours === null)
        return `RDS/Aurora binlog retention hours is NULL: binlogs are purged as soon as possible (Aurora: lazily, usually within a day), so a poller stopped for a while loses its position. Set it: ${SET_RETENTION} (168 h is the RDS for MySQL maximum; Aurora MySQL 3 allows up to 2160)`;
      if (retention.hours < MIN_RETENTION_HOURS)
        return `RDS/Aurora binlog retention hours is ${retention.hours}, below ${MIN_RETENTION_HOURS} h: an outage longer than that loses the position. Set it: ${SET_RETENTION}`;
      return undefined;
  }
}
