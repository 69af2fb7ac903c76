import { describe, expect, it } from 'vitest';
import { dialectFor, parseServerFlavor } from '../../lib/source/mysql/dialect/dialect.ts';
import { checkGrants, parseGrants, parseRoles } from '../../lib/source/mysql/grants.ts';
import type { SqlConnection } from '../../lib/source/mysql/server.ts';

/*
 * Grants over fake connections answering as the MySQL 8.0 / 8.4 reference manual documents
 * ("SHOW GRANTS Statement": one line of static global privileges, separate lines of dynamic ones,
 * granted roles as `GRANT `r`@`%` TO …`, their privileges only with USING; "Using Roles":
 * CURRENT_ROLE() lists the active roles as `r`@`%`,… or NONE) and as MariaDB 10.11 answers.
 */
const mysql84 = dialectFor(parseServerFlavor('8.4.3', 'MySQL Community Server - GPL'));
const mysql80 = dialectFor(parseServerFlavor('8.0.39', 'Source distribution'));
const mariadb = dialectFor(parseServerFlavor('10.11.19-MariaDB-0+deb12u1', 'Debian 12'));

type Answer = string[] | Record<string, string> | Error;
function fakeServer(answers: Record<string, Answer>) {
  const asked: string[] = [];
  const conn: SqlConnection = {
    async query(sql: string) {
      asked.push(sql);
      const answer = answers[sql];
      if (answer === undefined) throw Object.assign(new Error(`You have an error in your SQL syntax near '${sql}'`), { errno: 1064 });
      if (answer instanceof Error) throw answer;
      if (Array.isArray(answer)) return [answer.map((line) => ({ 'Grants for sluice@%': line })), []];
      return [[answer], []];
    },
    async end() {},
  };
  return { conn, asked };
}
const noRoles = { 'SELECT CURRENT_ROLE() AS roles': { roles: 'NONE' } };
const USAGE = 'GRANT USAGE ON *.* TO `sluice`@`%`';
const CDC_ROLE = 'GRANT `cdc`@`%` TO `sluice`@`%`';

describe('grants through MySQL 8 roles and dynamic privileges', () => {
  it('parses static and dynamic global privilege lines, role grants, and roles with odd names', () => {
    const parsed = parseGrants([
      'GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `sluice`@`%`',
      'GRANT BACKUP_ADMIN,REPLICATION_SLAVE_ADMIN ON *.* TO `sluice`@`%`',
      'GRANT INSERT ON `shop`.* TO `sluice`@`%`',
      'GRANT `cdc`@`%`,`we``ird`@`10.0.0.%` TO `sluice`@`%`',
    ]);
    expect([...parsed.privileges].sort()).toEqual(['BACKUP_ADMIN', 'RELOAD', 'REPLICATION CLIENT', 'REPLICATION SLAVE', 'REPLICATION_SLAVE_ADMIN', 'SELECT']);
    expect(parsed.grantedRoles).toEqual(['`cdc`@`%`', '`we``ird`@`10.0.0.%`']);
    expect(parseRoles('NONE')).toEqual([]);
  });

  it('accepts privileges granted directly on MySQL 8.4, as one static and one dynamic line', async () => {
    const { conn } = fakeServer({
      ...noRoles,
      'SHOW GRANTS': ['GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `sluice`@`%`', 'GRANT BACKUP_ADMIN ON *.* TO `sluice`@`%`'],
    });
    await expect(checkGrants(conn, mysql84)).resolves.toBeUndefined();
  });

  it('accepts privileges held through a default role (RDS: the master user’s rds_superuser_role), read with USING', async () => {
    const { conn, asked } = fakeServer({
      'SHOW GRANTS': ['GRANT USAGE ON *.* TO `admin`@`%`', 'GRANT `rds_superuser_role`@`%` TO `admin`@`%`'],
      'SELECT CURRENT_ROLE() AS roles': { roles: '`rds_superuser_role`@`%`' },
      'SHOW GRANTS FOR CURRENT_USER() USING `rds_superuser_role`@`%`': [
        'GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, RELOAD, PROCESS, REFERENCES, INDEX, ALTER, SHOW DATABASES, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, REPLICATION SLAVE, REPLICATION CLIENT, CREATE VIEW, SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE, CREATE USER, EVENT, TRIGGER ON *.* TO `admin`@`%` WITH GRANT OPTION',
        'GRANT APPLICATION_PASSWORD_ADMIN,BACKUP_ADMIN,REPLICATION_SLAVE_ADMIN,ROLE_ADMIN,SET_USER_ID ON *.* TO `admin`@`%` WITH GRANT OPTION',
        'GRANT `rds_superuser_role`@`%` TO `admin`@`%`',
      ],
    });
    const grants = await mysql80.sessionGrants(conn);
    expect(grants.activeRoles).toEqual(['`rds_superuser_role`@`%`']);
    expect(grants.privileges.has('REPLICATION SLAVE')).toBe(true);
    await expect(checkGrants(conn, mysql80)).resolves.toBeUndefined();
    expect(asked).toContain('SHOW GRANTS FOR CURRENT_USER() USING `rds_superuser_role`@`%`');
  });

  it('a role that holds the privileges but is not active at login: names SET DEFAULT ROLE', async () => {
    const { conn } = fakeServer({
      ...noRoles,
      'SHOW GRANTS': [USAGE, CDC_ROLE],
      'SHOW GRANTS FOR CURRENT_USER() USING `cdc`@`%`': ['GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `sluice`@`%`', CDC_ROLE],
    });
    const error = await checkGrants(conn, mysql84).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'PREFLIGHT_GRANTS' });
    expect((error as Error).message).toBe(
      "the MySQL user lacks REPLICATION SLAVE, REPLICATION CLIENT, SELECT in its sessions: role `cdc`@`%` holds some of them but is not active at login. Fix: SET DEFAULT ROLE `cdc`@`%` TO '<user>'@'%'; (or SET PERSIST activate_all_roles_on_login = ON, on RDS/Aurora in the parameter group), or GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '<user>'@'%';",
    );
  });

  it('what neither the account nor its active roles hold is missing, and the message names the roles; a dynamic REPLICATION_SLAVE_ADMIN is not REPLICATION SLAVE', async () => {
    const { conn } = fakeServer({
      'SHOW GRANTS': [USAGE, CDC_ROLE],
      'SELECT CURRENT_ROLE() AS roles': { roles: '`cdc`@`%`' },
      'SHOW GRANTS FOR CURRENT_USER() USING `cdc`@`%`': [
        'GRANT SELECT, REPLICATION CLIENT ON *.* TO `sluice`@`%`',
        'GRANT REPLICATION_SLAVE_ADMIN ON *.* TO `sluice`@`%`',
        CDC_ROLE,
      ],
    });
    await expect(checkGrants(conn, mysql84)).rejects.toThrow(
      "the MySQL user lacks REPLICATION SLAVE (with its active role `cdc`@`%`). Fix: GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '<user>'@'%';",
    );
  });

  it('when the server refuses USING for an active role (a mandatory one not granted), each role’s own grants are read', async () => {
    const { conn, asked } = fakeServer({
      'SHOW GRANTS': ['GRANT SELECT ON *.* TO `sluice`@`%`', 'GRANT `cdc`@`%` TO `sluice`@`%`'],
      'SELECT CURRENT_ROLE() AS roles': { roles: '`cdc`@`%`,`audit`@`%`' },
      'SHOW GRANTS FOR CURRENT_USER() USING `cdc`@`%`, `audit`@`%`': Object.assign(new Error('`audit`@`%` is not granted to `sluice`@`%`'), { errno: 3530 }),
      'SHOW GRANTS FOR `cdc`@`%`': ['GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`'],
      'SHOW GRANTS FOR `audit`@`%`': ['GRANT USAGE ON *.* TO `audit`@`%`'],
    });
    await expect(checkGrants(conn, mysql84)).resolves.toBeUndefined();
    expect(asked).toContain('SHOW GRANTS FOR `cdc`@`%`');
  });

  it('MariaDB: SHOW GRANTS alone, as before (no CURRENT_ROLE, no USING), with the same message', async () => {
    const ok = fakeServer({ 'SHOW GRANTS': ["GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT ON *.* TO 'sluice'@'%' IDENTIFIED BY PASSWORD '*AB'"] });
    await expect(checkGrants(ok.conn, mariadb)).resolves.toBeUndefined();
    expect(ok.asked).toEqual(['SHOW GRANTS']);
    const all = fakeServer({ 'SHOW GRANTS': ['GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION'] });
    await expect(checkGrants(all.conn, mariadb)).resolves.toBeUndefined();
    const lacking = fakeServer({ 'SHOW GRANTS': ['GRANT SELECT ON *.* TO `sluice`@`%`', 'GRANT ALL PRIVILEGES ON `shop`.* TO `sluice`@`%`'] });
    await expect(checkGrants(lacking.conn, mariadb)).rejects.toThrow(
      "the MySQL user lacks REPLICATION SLAVE, REPLICATION CLIENT. Fix: GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '<user>'@'%';",
    );
  });

  it('doctor’s lock warning: MySQL without RELOAD or LOCK TABLES on *.* is told what stops (every snapshot too when gtid_mode is not ON); either grant, a role’s included, or MariaDB: none', async () => {
    const cdc = 'GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `sluice`@`%`';
    const gtidOn = fakeServer({ 'SHOW GRANTS': [cdc], ...noRoles, 'SELECT @@GLOBAL.gtid_mode AS mode': { mode: 'ON' } });
    const on = await mysql80.lockWarning(gtidOn.conn);
    expect(on).toMatch(/neither RELOAD nor LOCK TABLES on \*\.\*: keyless tables cannot be snapshotted \(SNAPSHOT_NO_KEY\).*GRANT LOCK TABLES ON \*\.\*/);
    expect(on).not.toMatch(/SNAPSHOT_NO_POINT/);
    const permissive = fakeServer({ 'SHOW GRANTS': [cdc], ...noRoles, 'SELECT @@GLOBAL.gtid_mode AS mode': { mode: 'OFF_PERMISSIVE' } });
    expect(await mysql80.lockWarning(permissive.conn)).toMatch(/gtid_mode is OFF_PERMISSIVE: every snapshot stops \(SNAPSHOT_NO_POINT\)/);
    for (const grants of [[cdc.replace('SELECT,', 'SELECT, LOCK TABLES,')], [cdc.replace('SELECT,', 'SELECT, RELOAD,')]]) {
      expect(await mysql84.lockWarning(fakeServer({ 'SHOW GRANTS': grants, ...noRoles }).conn)).toBeUndefined();
    }
    const viaRole = fakeServer({
      'SHOW GRANTS': [cdc, CDC_ROLE],
      'SELECT CURRENT_ROLE() AS roles': { roles: '`cdc`@`%`' },
      'SHOW GRANTS FOR CURRENT_USER() USING `cdc`@`%`': [cdc, 'GRANT LOCK TABLES ON *.* TO `sluice`@`%`'],
    });
    expect(await mysql84.lockWarning(viaRole.conn)).toBeUndefined();
    const maria = fakeServer({});
    expect(await mariadb.lockWarning(maria.conn)).toBeUndefined();
    expect(maria.asked).toEqual([]);
  });
});
