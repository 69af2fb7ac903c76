import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { startMariaDb } from '../../lib/local/mariadb.ts';
import { stopProcess } from '../../lib/local/process.ts';
import { connect, preflight } from '../../lib/source/mysql/server.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { tlsOptions } from '../../lib/source/mysql/tls.ts';
import { testSource } from '../support/source.ts';

describe('MySQL credentials from Secrets Manager (its API is a local stand-in)', () => {
  const secrets = new Map<string, string>();
  const api = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const { SecretId } = JSON.parse(body) as { SecretId: string };
      const value = secrets.get(SecretId);
      if (req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue' || value === undefined) {
        res
          .writeHead(400, { 'content-type': 'application/x-amz-json-1.1' })
          .end(JSON.stringify({ __type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." }));
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/x-amz-json-1.1' })
        .end(JSON.stringify({ ARN: `arn:aws:secretsmanager:us-east-1:1:secret:${SecretId}`, Name: SecretId, SecretString: value }));
    });
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  });
  afterAll(() => api.close());

  it('captures with only SLUICE_MYSQL_SECRET_ID set, and names a missing or malformed secret', async () => {
    await using source = await testSource('secret');
    const url = new URL(source.config.mysqlUrl ?? '');
    secrets.set(
      'prod/sluice',
      JSON.stringify({ username: url.username, password: decodeURIComponent(url.password), host: url.hostname, port: Number(url.port), engine: 'mariadb' }),
    );
    secrets.set('broken', 'not json');
    const base = {
      ...process.env,
      SLUICE_SOURCE_ID: source.db,
      SLUICE_PREFIX: source.db,
      SLUICE_INCLUDE: `${source.db}\\..*`,
      SLUICE_STARTUP: 'latest',
      SLUICE_MYSQL_URL: undefined,
    };
    const config = loadConfig({ ...base, SLUICE_MYSQL_SECRET_ID: 'prod/sluice' });
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY)');
    await source.capture({ config });
    await source.sql('INSERT INTO a VALUES (1)');
    expect((await source.capture({ config })).events).toBe(1);

    await expect(mysqlTarget(loadConfig({ ...base, SLUICE_MYSQL_SECRET_ID: 'missing' }))).rejects.toThrow(
      /cannot read secret missing from Secrets Manager.*secretsmanager:GetSecretValue/,
    );
    await expect(mysqlTarget(loadConfig({ ...base, SLUICE_MYSQL_SECRET_ID: 'broken' }))).rejects.toThrow(/secret broken is not JSON/);
    expect(() => loadConfig({ ...base })).toThrow(/SLUICE_MYSQL_URL: is required \(or SLUICE_MYSQL_SECRET_ID/);
  });
});

describe('TLS to MySQL with CA verification (private MariaDB with a test CA)', () => {
  let dir: string;
  let server: Awaited<ReturnType<typeof startMariaDb>>;
  const pem = (name: string) => join(dir, name);
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=sluice test CA', '-keyout', 'ca-key.pem', '-out', 'ca.pem');
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=other CA', '-keyout', 'other-key.pem', '-out', 'other.pem');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server-key.pem', '-out', 'server.csr');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    ssl(
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca-key.pem',
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      'san.ext',
      '-out',
      'server.pem',
    );
    server = await startMariaDb(join(dir, 'db'), () => {}, [
      `--ssl-ca=${pem('ca.pem')}`,
      `--ssl-cert=${pem('server.pem')}`,
      `--ssl-key=${pem('server-key.pem')}`,
    ]);
  });
  afterAll(async () => {
    await stopProcess(server?.pid);
    rmSync(dir, { recursive: true, force: true });
  });

  const config = (tls: string, ca?: string) =>
    loadConfig({
      SLUICE_SOURCE_ID: 'tls',
      SLUICE_MYSQL_URL: server.url,
      SLUICE_STATE_TABLE: 'x-table',
      SLUICE_BUCKET: 'x-bucket',
      SLUICE_MYSQL_TLS: tls,
      SLUICE_MYSQL_CA: ca,
    });

  it('verify connects with the right CA (file or inline PEM) and refuses a server it cannot verify', async () => {
    for (const ca of [pem('ca.pem'), execFileSync('cat', [pem('ca.pem')], { encoding: 'utf8' })]) {
      const conn = await connect(await mysqlTarget(config('verify', ca)));
      const [[row]] = (await conn.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")) as unknown as [[{ Value: string }]];
      expect(row.Value).not.toBe('');
      await preflight(conn);
      await conn.end();
    }
    // A server whose certificate no CA given vouches for is refused, the RDS bundle included.
    for (const ca of [pem('other.pem'), 'rds']) {
      await expect(mysqlTarget(config('verify', ca)).then(connect)).rejects.toThrow(
        /cannot connect to MySQL at mysql:\/\/sluice:\*\*\*@127\.0\.0\.1:\d+\/: .*(certificate|self[- ]signed)/i,
      );
    }
    await expect(mysqlTarget(config('verify'))).rejects.toThrow(/SLUICE_MYSQL_TLS=verify needs SLUICE_MYSQL_CA/);
  });
});

describe('grants (preflight reads SHOW GRANTS, roles included)', () => {
  it('refuses a user without the replication grants, naming them, and accepts them held through its default role', async () => {
    await using source = await testSource('grants');
    const tag = randomBytes(4).toString('hex');
    const user = `grants_${tag}`;
    const role = `cdc_${tag}`;
    // MySQL's new account takes caching_sha2_password: reached as sluice's own, over verified TLS.
    const onMysql = inject('stackServer') === 'mysql';
    const url = new URL(process.env.SLUICE_MYSQL_URL as string);
    const target = {
      uri: `mysql://${user}:pw-${tag}@${url.hostname}:${url.port}/`,
      label: user,
      ...(onMysql ? { ssl: tlsOptions('verify', process.env.SLUICE_MYSQL_CA) } : {}),
    };
    const hosts = onMysql ? ['%'] : ['localhost', '127.0.0.1'];
    for (const host of hosts) await source.sql(`CREATE USER '${user}'@'${host}' IDENTIFIED BY 'pw-${tag}'; GRANT SELECT ON *.* TO '${user}'@'${host}'`);
    try {
      const conn = await connect(target);
      await expect(preflight(conn).finally(() => conn.end())).rejects.toThrow(
        "the MySQL user lacks REPLICATION SLAVE, REPLICATION CLIENT. Fix: GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '<user>'@'%';",
      );
      // MariaDB 10.5 calls REPLICATION CLIENT BINLOG MONITOR; MySQL sets a default role TO a user, MariaDB FOR one.
      await source.sql(`CREATE ROLE ${role}; GRANT REPLICATION SLAVE, ${onMysql ? 'REPLICATION CLIENT' : 'BINLOG MONITOR'} ON *.* TO ${role}`);
      for (const host of hosts)
        await source.sql(`GRANT ${role} TO '${user}'@'${host}'; SET DEFAULT ROLE ${role} ${onMysql ? 'TO' : 'FOR'} '${user}'@'${host}'`);
      const again = await connect(target);
      await preflight(again).finally(() => again.end());
    } finally {
      for (const host of hosts) await source.sql(`DROP USER IF EXISTS '${user}'@'${host}'`);
      await source.sql(`DROP ROLE IF EXISTS ${role}`);
    }
  });
});
