import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { connect } from '../../lib/source/mysql/server.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { expectExactlyOnce, testSource } from '../support/source.ts';

/*
 * The stack's MySQL (lib/local/mysql.ts), as `npm run test:live-mysql` starts it: the settings CDC
 * needs, and sluice's account as docs/RUNBOOK.md creates it — caching_sha2_password, MySQL's
 * default — reached only over TLS whose certificate chain and name are checked.
 */
describe('the local stack’s MySQL 8.0.31', () => {
  const stackEnv = inject('stackEnv');
  const admin = () => mysql.createConnection({ uri: stackEnv.SLUICE_LOCAL_ADMIN_URL });
  const configWith = (changes: Record<string, string>) => loadConfig({ ...stackEnv, ...changes });

  it('runs with GTIDs, ROW format, FULL row image and FULL row metadata', async () => {
    const conn = await admin();
    try {
      const [[settings]] = (await conn.query(
        'SELECT @@version AS version, @@log_bin AS log_bin, @@gtid_mode AS gtid_mode, @@enforce_gtid_consistency AS enforce, @@binlog_format AS format, @@binlog_row_image AS image, @@binlog_row_metadata AS metadata, @@bind_address AS bind',
      )) as unknown as [[Record<string, unknown>]];
      expect(settings).toEqual({
        version: '8.0.31',
        log_bin: 1,
        gtid_mode: 'ON',
        enforce: 'ON',
        format: 'ROW',
        image: 'FULL',
        metadata: 'FULL',
        bind: '127.0.0.1',
      });
    } finally {
      await conn.end();
    }
  });

  it('sluice’s account uses caching_sha2_password with the runbook’s grants, and connects over verified TLS, its cache cold', async () => {
    expect(stackEnv.SLUICE_MYSQL_TLS).toBe('verify');
    const conn = await admin();
    try {
      const [[account]] = (await conn.query("SELECT plugin FROM mysql.user WHERE user = 'sluice'")) as unknown as [[{ plugin: string }]];
      expect(account.plugin).toBe('caching_sha2_password');
      const [grants] = (await conn.query("SHOW GRANTS FOR 'sluice'@'%'")) as unknown as [Record<string, string>[]];
      expect(Object.values(grants[0] ?? {})[0]).toBe('GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `sluice`@`%`');
      // An empty cache: the login is a full authentication, which sends the password itself.
      await conn.query('FLUSH PRIVILEGES');
    } finally {
      await conn.end();
    }
    const sluice = await connect(await mysqlTarget(configWith({})));
    try {
      const [[session]] = (await sluice.query(
        "SELECT CURRENT_USER() AS user, (SELECT VARIABLE_VALUE FROM performance_schema.session_status WHERE VARIABLE_NAME = 'Ssl_cipher') AS cipher",
      )) as unknown as [[{ user: string; cipher: string }]];
      expect(session.user).toBe('sluice@%');
      expect(session.cipher).toMatch(/^TLS_/);
    } finally {
      await sluice.end();
    }
  });

  it('refuses the server under another CA, and the password without a certificate check', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-ca-'));
    try {
      // A CA that did not sign the server's certificate.
      const other = join(dir, 'other-ca.pem');
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=other', '-keyout', join(dir, 'k.pem'), '-out', other],
        {
          stdio: 'pipe',
        },
      );
      await expect(connect(await mysqlTarget(configWith({ SLUICE_MYSQL_CA: other })))).rejects.toMatchObject({ code: 'MYSQL_CONNECT' });
      await expect(connect(await mysqlTarget(configWith({ SLUICE_MYSQL_TLS: 'required' })))).rejects.toMatchObject({ code: 'MYSQL_AUTH_INSECURE' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('captures a table exactly once through that account (the binlog connection authenticates the same way)', async () => {
    await using source = await testSource('live_mysql');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))');
    await source.capture();
    await source.sql(`INSERT INTO t VALUES (1, 'a'), (2, 'b')`);
    await source.sql(`UPDATE t SET v = 'c' WHERE id = 1`);
    await source.sql('DELETE FROM t WHERE id = 2');
    const result = await source.capture();
    expect(result.events).toBe(4);
    const { duplicates, differences, events } = await expectExactlyOnce(source, ['t']);
    expect({ duplicates, differences }).toEqual({ duplicates: 0, differences: [] });
    expect(events.filter((e) => e.table === 't').map((e) => [e.op, e.source.gtid !== null])).toEqual([
      ['c', true],
      ['c', true],
      ['u', true],
      ['d', true],
    ]);
  });
});
