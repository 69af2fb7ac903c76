/*
 * The privileges sluice's sessions hold, read the way each server reports them.
 *
 * MariaDB: `SHOW GRANTS` lists the account's grants and those of its current (default) role, so one
 * statement says it all.
 *
 * MySQL 8.0 / 8.4 / 9.x (reference manual, "SHOW GRANTS Statement" and "Using Roles"): `SHOW GRANTS`
 * lists the account's own privileges and the roles granted to it (`GRANT `r`@`%`,`s`@`%` TO …`),
 * not what those roles hold; `SHOW GRANTS FOR CURRENT_USER() USING <roles>` adds the privileges of
 * the roles named. A granted role counts only while it is active, and sluice never runs SET ROLE, so
 * what its sessions hold is the account's own privileges plus those of the roles active at login:
 * the default roles, or all granted ones with `activate_all_roles_on_login`, plus active mandatory
 * roles. `CURRENT_ROLE()` in a fresh session names exactly those. Global privileges come as one line
 * of static privileges (`GRANT SELECT, REPLICATION SLAVE, … ON *.* TO …`) and separate lines of
 * dynamic ones (`GRANT BACKUP_ADMIN,REPLICATION_SLAVE_ADMIN ON *.* TO …`); 8.0 no longer prints
 * `ALL PRIVILEGES` for global grants but lists each.
 */
import { ErrorCode, PreflightError } from '../../errors.ts';
import type { Dialect } from './dialect/dialect.ts';
import type { SqlConnection } from './server.ts';

/** A role as MySQL prints it: `name`@`host`, backticks inside doubled. */
const ROLE = /`((?:[^`]|``)*)`@`((?:[^`]|``)*)`/g;
/** A grant of roles: `GRANT `r`@`%`,`s`@`%` TO `u`@`%``. */
const ROLE_GRANT = /^GRANT\s+(`(?:[^`]|``)*`@`(?:[^`]|``)*`(?:\s*,\s*`(?:[^`]|``)*`@`(?:[^`]|``)*`)*)\s+TO\s/i;
/** A grant of global privileges: everything between GRANT and ON *.*. */
const GLOBAL_GRANT = /^GRANT\s+(.+?)\s+ON\s+\*\.\*\s+TO\s/i;

/** The roles in a `CURRENT_ROLE()` value or a role grant, as SQL (`` `name`@`host` ``). */
export function parseRoles(text: string): string[] {
  return [...text.matchAll(ROLE)].map((m) => m[0]);
}

/** Global privileges (upper case, as named in `GRANT … ON *.*` lines) and the roles granted, from SHOW GRANTS lines. */
export function parseGrants(lines: readonly string[]): { privileges: Set<string>; grantedRoles: string[] } {
  const privileges = new Set<string>();
  const grantedRoles: string[] = [];
  for (const line of lines) {
    const roles = ROLE_GRANT.exec(line);
    if (roles?.[1]) {
      grantedRoles.push(...parseRoles(roles[1]));
      continue;
    }
    const global = GLOBAL_GRANT.exec(line);
    if (!global?.[1]) continue;
    for (const privilege of global[1].split(',')) {
      const name = privilege.trim().replace(/\s+/g, ' ').toUpperCase();
      privileges.add(name === 'ALL' ? 'ALL PRIVILEGES' : name);
    }
  }
  return { privileges, grantedRoles: [...new Set(grantedRoles)] };
}

/** What CDC needs, each with the privilege names that satisfy it (MariaDB 10.5+ renamed two). */
const NEEDED: readonly { grant: string; any: readonly string[] }[] = [
  { grant: 'REPLICATION SLAVE', any: ['REPLICATION SLAVE', 'REPLICATION REPLICA'] },
  { grant: 'REPLICATION CLIENT', any: ['REPLICATION CLIENT', 'BINLOG MONITOR'] },
  { grant: 'SELECT', any: ['SELECT'] },
];

/** The grants in NEEDED that `privileges` lacks. */
export function missingGrants(privileges: ReadonlySet<string>): string[] {
  if (privileges.has('ALL PRIVILEGES')) return [];
  return NEEDED.filter((need) => !need.any.some((p) => privileges.has(p))).map((need) => need.grant);
}

/** The first column of every row `sql` (a SHOW GRANTS) answers. */
export async function grantLines(conn: SqlConnection, sql: string): Promise<string[]> {
  const [rows] = await conn.query(sql);
  return (rows as Record<string, string>[]).map((r) => Object.values(r)[0] ?? '');
}

/** What sluice's sessions hold: global privileges, the roles active at login and those granted. */
export interface SessionGrants {
  readonly privileges: ReadonlySet<string>;
  readonly activeRoles: readonly string[];
  readonly grantedRoles: readonly string[];
}

/** Checks that the account holds what CDC needs in every new session; the error names the statements that fix it. */
export async function checkGrants(conn: SqlConnection, dialect: Dialect): Promise<void> {
  const grants = await dialect.sessionGrants(conn);
  const missing = missingGrants(grants.privileges);
  if (!missing.length) return;
  const fix = "GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '<user>'@'%';";
  // Granted but inactive roles: their privileges do not reach sluice's sessions. Say so when they would help.
  const inactive = grants.grantedRoles.filter((role) => !grants.activeRoles.includes(role));
  const all = inactive.length ? await dialect.privilegesWithRoles(conn, [...grants.activeRoles, ...inactive]) : undefined;
  if (all && missingGrants(new Set([...grants.privileges, ...all])).length < missing.length) {
    throw new PreflightError(
      ErrorCode.PREFLIGHT_GRANTS,
      `the MySQL user lacks ${missing.join(', ')} in its sessions: role ${inactive.join(', ')} holds ${missing.length > 1 ? 'some of them' : 'it'} but is not active at login. ` +
        `Fix: SET DEFAULT ROLE ${inactive.join(', ')} TO '<user>'@'%'; (or SET PERSIST activate_all_roles_on_login = ON, on RDS/Aurora in the parameter group), or ${fix}`,
    );
  }
  const via = grants.activeRoles.length ? ` (with its active role${grants.activeRoles.length > 1 ? 's' : ''} ${grants.activeRoles.join(', ')})` : '';
  throw new PreflightError(ErrorCode.PREFLIGHT_GRANTS, `the MySQL user lacks ${missing.join(', ')}${via}. Fix: ${fix}`);
}
