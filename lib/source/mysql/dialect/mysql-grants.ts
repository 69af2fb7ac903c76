import { grantLines, parseGrants, parseRoles, type SessionGrants } from '../grants.ts';
import type { SqlConnection } from '../server.ts';

/* MySQL's roles (see grants.ts): privileges of granted roles count only while the roles are active. */

/** The account's grants with the privileges of `roles` included (the roles must be granted to it). */
async function grantsUsing(conn: SqlConnection, roles: readonly string[]): Promise<string[]> {
  return grantLines(conn, `SHOW GRANTS FOR CURRENT_USER() USING ${roles.join(', ')}`);
}

/** MySQL: the global privileges a new session of this account holds, those of the roles active at login included. */
export async function mysqlSessionGrants(conn: SqlConnection): Promise<SessionGrants> {
  const own = parseGrants(await grantLines(conn, 'SHOW GRANTS'));
  const [rows] = await conn.query('SELECT CURRENT_ROLE() AS roles');
  const activeRoles = parseRoles((rows as { roles: string | null }[])[0]?.roles ?? '');
  if (activeRoles.length === 0) return { ...own, activeRoles };
  // USING names roles granted to the account; should the server refuse one (a mandatory role is not
  // granted), each role's own grants are read instead (SHOW GRANTS FOR a role needs SELECT on mysql.*,
  // which the SELECT ON *.* sluice needs includes).
  const lines = await grantsUsing(conn, activeRoles).catch(async () =>
    (await Promise.all(activeRoles.map((role) => grantLines(conn, `SHOW GRANTS FOR ${role}`).catch(() => [])))).flat(),
  );
  const withRoles = parseGrants(lines);
  return { privileges: new Set([...own.privileges, ...withRoles.privileges]), activeRoles, grantedRoles: own.grantedRoles };
}

/**
 * MySQL: what the account cannot do for lack of a lock to pin a binlog point with (mysql-locks.ts
 * `snapshotPoint`, `settledEnd`): neither RELOAD (FLUSH TABLES WITH READ LOCK) nor LOCK TABLES
 * granted globally. With gtid_mode ON only keyless tables and `verify` need one; otherwise every
 * snapshot page does. A warning, not a failure: LOCK TABLES may be granted on the captured
 * databases alone, and capture itself needs neither. Undefined when nothing is lacking. (MariaDB
 * reports a consistent snapshot's binlog position itself: it needs no lock.)
 */
export async function mysqlLockWarning(conn: SqlConnection): Promise<string | undefined> {
  const { privileges } = await mysqlSessionGrants(conn);
  if (['ALL PRIVILEGES', 'RELOAD', 'LOCK TABLES'].some((p) => privileges.has(p))) return undefined;
  const [rows] = await conn.query('SELECT @@GLOBAL.gtid_mode AS mode');
  const mode = String((rows as { mode: string | null }[])[0]?.mode ?? 'OFF');
  const fix = "GRANT LOCK TABLES ON *.* TO '<user>'@'%'; (RDS and Aurora) or GRANT RELOAD ON *.* TO '<user>'@'%'; (docs/RUNBOOK.md \"MySQL versions\")";
  const keyless = 'keyless tables cannot be snapshotted (SNAPSHOT_NO_KEY) and `sluice verify` refuses (VERIFY_UNSUPPORTED)';
  return mode.toUpperCase() === 'ON'
    ? `the MySQL user holds neither RELOAD nor LOCK TABLES on *.*: ${keyless}, unless LOCK TABLES is granted on their databases. Fix: ${fix}`
    : `the MySQL user holds neither RELOAD nor LOCK TABLES on *.*, and gtid_mode is ${mode}: every snapshot stops (SNAPSHOT_NO_POINT) and ${keyless}, unless LOCK TABLES is granted on the captured databases. Fix: ${fix}, or gtid_mode=ON`;
}

/** MySQL: the account's global privileges were `roles` active (granted ones; none when the server refuses). */
export async function mysqlPrivilegesWithRoles(conn: SqlConnection, roles: readonly string[]): Promise<ReadonlySet<string>> {
  return parseGrants(await grantsUsing(conn, roles).catch(() => [])).privileges;
}
