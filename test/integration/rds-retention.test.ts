import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stopProcess } from '../../lib/local/process.ts';
import { sourceStatus } from '../../lib/ops/status.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { type PrivateServer, startPrivateServer } from '../support/private-server.ts';
import { testSource } from '../support/source.ts';

/*
 * `sluice doctor` and `sluice status` on a server that has RDS's mysql.rds_show_configuration: a
 * private server (MariaDB, or MySQL under test:live-mysql) given a procedure answering as the
 * RDS/Aurora user guides show (rows name / value / description). Everything else about the server
 * is its own; the point is what sluice makes of the answer.
 */
describe('RDS / Aurora binlog retention hours in doctor and status', () => {
  let dir: string;
  let server: PrivateServer;
  const admin = (sql: string) =>
    mysql.createConnection({ uri: server.adminUrl, multipleStatements: true }).then((conn) => conn.query(sql).finally(() => conn.end()));
  // The value lives in a table, so changing it keeps the procedure (and the EXECUTE granted on it).
  const answer = (value: string | null) => admin(`UPDATE rds_fake.configuration SET value = ${value === null ? 'NULL' : `'${value}'`}`);
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-rds-'));
    server = await startPrivateServer(join(dir, 'db'), inject('stackServer'));
  });
  afterAll(async () => {
    await stopProcess(server?.pid);
    rmSync(dir, { recursive: true, force: true });
  });

  it('warns about NULL and short retention with the statement that sets it, and is quiet at 24 h and more and on a server that is not RDS', async () => {
    await using source = await testSource('rds');
    const env = cliEnv(source, { ...server.env, SLUICE_INCLUDE: '' });
    const config = { ...source.configWith(server.env), include: [] };
    const doctor = async () => {
      const run = await sluice(['doctor'], env);
      expect(run.code).toBe(0); // a warning, not a failure
      return run.stdout.split('\n').filter((line) => line.startsWith('WARN'));
    };

    // Not RDS: no procedure. The server tells the sluice user (no EXECUTE on mysql.*) "execute command
    // denied" all the same, which @@basedir settles.
    expect(await doctor()).toEqual([]);
    expect((await sourceStatus(config, source.clients.store)).rdsRetentionHours).toBeUndefined();

    await admin(
      "CREATE DATABASE rds_fake; CREATE TABLE rds_fake.configuration (value VARCHAR(10)); INSERT INTO rds_fake.configuration VALUES (NULL); CREATE PROCEDURE mysql.rds_show_configuration() SQL SECURITY DEFINER SELECT 'binlog retention hours' AS name, value, 'binlog retention hours specifies the duration in hours before binary logs are automatically deleted.' AS description FROM rds_fake.configuration",
    );
    // The stack's accounts: MariaDB's per loopback host, MySQL's for any host (lib/local/).
    const hosts = inject('stackServer') === 'mysql' ? ['%'] : ['localhost', '127.0.0.1'];
    await admin(hosts.map((host) => `GRANT EXECUTE ON PROCEDURE mysql.rds_show_configuration TO 'sluice'@'${host}'`).join('; '));
    const nullWarning =
      /RDS\/Aurora binlog retention hours is NULL: binlogs are purged as soon as possible.*CALL mysql\.rds_set_configuration\('binlog retention hours', 168\);/;
    expect(await doctor()).toEqual([expect.stringMatching(nullWarning)]);
    const status = await sourceStatus(config, source.clients.store);
    expect(status.rdsRetentionHours).toBeNull();
    expect(status.warnings).toEqual([expect.stringMatching(nullWarning)]);
    const printed = await sluice(['status'], env);
    expect(printed.stdout).toMatch(/WARNING +RDS\/Aurora binlog retention hours is NULL/);

    await answer('12');
    expect(await doctor()).toEqual([expect.stringMatching(/binlog retention hours is 12, below 24 h/)]);
    await answer('168');
    expect(await doctor()).toEqual([]);
    expect((await sourceStatus(config, source.clients.store)).rdsRetentionHours).toBe(168);
  });
});
