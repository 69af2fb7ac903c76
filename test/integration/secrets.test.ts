import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { cliEnv, sluice } from '../support/cli.ts';
import { testSource } from '../support/source.ts';

const exec = promisify(execFile);

/** Everything a process printed, stdout and stderr, whatever its exit code. */
async function output(args: string[], env: Record<string, string | undefined>): Promise<string> {
  try {
    const { stdout, stderr } = await exec(process.execPath, args, { env });
    return stdout + stderr;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}

describe('no secrets or row values in any output', () => {
  it('passwords in users, grants, statement-based DML, DDL defaults and the MySQL URL never reach the poller’s or the CLI’s output', async () => {
    await using source = await testSource('secrets');
    const tag = randomBytes(4).toString('hex');
    const secrets = {
      createUser: `CrUsr-${tag}-pw`,
      alterUser: `AlUsr-${tag}-pw`,
      grant: `GrPw-${tag}-x`,
      statementValue: `StmtVal-${tag}-v`,
      capturedStatementValue: `CapStmt-${tag}-v`,
      ddlDefault: `DdlDef-${tag}-d`,
    };
    const excludedDb = `secretdb_${tag}`;
    // The password of the MySQL user sluice connects as: @ / : % in it, percent-encoded in the URL.
    const password = `Top@Sec/ret:%41${tag}`;
    const user = `sluice_pw_${tag}`;
    const urlPieces = [password, 'Top@Sec', 'Sec/ret', `ret:%41${tag}`, encodeURIComponent(password), 'Top%40Sec', 'Sec%2Fret', `%2541${tag}`];
    const port = new URL(process.env.SLUICE_MYSQL_URL as string).port;
    const url = `mysql://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/`;
    for (const host of ['localhost', '127.0.0.1']) {
      await source.sql(
        `CREATE USER '${user}'@'${host}' IDENTIFIED BY '${password}'; GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '${user}'@'${host}'`,
      );
    }
    const env = cliEnv(source, { SLUICE_MYSQL_URL: url, SLUICE_STOP_WHEN_CAUGHT_UP: 'true', SLUICE_SAFETY_MARGIN_SECONDS: '2' });
    delete env.POWERTOOLS_LOG_LEVEL;
    delete env.AWS_LAMBDA_LOG_LEVEL;
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(64))');
    const printed: string[] = [await output(['--import', 'tsx', 'test/support/poller-process.ts'], env)];

    await source.sql(`CREATE USER 'u1_${tag}'@'%' IDENTIFIED BY '${secrets.createUser}'`);
    await source.sql(`ALTER USER 'u1_${tag}'@'%' IDENTIFIED BY '${secrets.alterUser}'`);
    // MySQL 8 took IDENTIFIED BY out of GRANT: there the other statement that names a password.
    if (inject('stackServer') === 'mysql') await source.sql(`CREATE USER 'u2_${tag}'@'%'; SET PASSWORD FOR 'u2_${tag}'@'%' = '${secrets.grant}'`);
    else await source.sql(`GRANT SELECT ON *.* TO 'u2_${tag}'@'%' IDENTIFIED BY '${secrets.grant}'`);
    await source.sql(`CREATE DATABASE ${excludedDb}; CREATE TABLE ${excludedDb}.s (id INT PRIMARY KEY, v VARCHAR(64))`);
    await source.sql(`CREATE TABLE t2 (id INT PRIMARY KEY, v VARCHAR(64) DEFAULT '${secrets.ddlDefault}')`);
    await source.sql("INSERT INTO t VALUES (1, 'plain')");
    // The poller as Lambda runs it (Powertools logger at INFO), then the CLI at its default level.
    printed.push(await output(['--import', 'tsx', 'test/support/poller-process.ts'], env));
    // Statement-based DML with values: the runs after this may stop on it (STATEMENT_DML), and must
    // not print the values either way.
    await source.sql(
      `SET SESSION binlog_format = 'STATEMENT'; INSERT INTO ${excludedDb}.s VALUES (1, '${secrets.statementValue}'); SET SESSION binlog_format = 'ROW'`,
    );
    await source.sql(
      `SET SESSION binlog_format = 'STATEMENT'; INSERT INTO t VALUES (2, '${secrets.capturedStatementValue}'); SET SESSION binlog_format = 'ROW'`,
    );
    printed.push(await output(['--import', 'tsx', 'test/support/poller-process.ts'], env));
    for (const args of [['capture', '--once'], ['status'], ['status', '--json'], ['doctor'], ['state', 'export']]) {
      const run = await sluice(args, env);
      printed.push(run.stdout + run.stderr);
    }
    // Errors that could echo the URL: a server that is not there, a wrong password.
    const closed = `mysql://${user}:${encodeURIComponent(password)}@127.0.0.1:1/`;
    printed.push(await output(['bin/sluice.js', 'doctor'], { ...env, SLUICE_MYSQL_URL: closed }));
    printed.push(await output(['bin/sluice.js', 'capture', '--once'], { ...env, SLUICE_MYSQL_URL: closed }));
    printed.push(
      await output(['bin/sluice.js', 'status'], { ...env, SLUICE_MYSQL_URL: `mysql://${user}:${encodeURIComponent(`${password}x`)}@127.0.0.1:${port}/` }),
    );
    // The password written raw in the URL is refused without being repeated.
    printed.push(await output(['bin/sluice.js', 'status'], { ...env, SLUICE_MYSQL_URL: `mysql://${user}:${password}@127.0.0.1:${port}/` }));
    const all = printed.join('\n');

    // The runs did log at INFO, did capture, and the schema change of a captured table was logged by name.
    expect(all).toContain('"message":"capture run finished"');
    expect(all).toMatch(new RegExp(`"message":"schema change".*"db":"${source.db}".*"table":"t2".*"kind":`));
    expect(all).toMatch(/"message":"committed batch".*"events":1\b/);
    expect(all).toContain(`${user}:***@127.0.0.1`);
    expect(all).toMatch(/MYSQL_CONNECT: cannot connect to MySQL at mysql:\/\/sluice_pw_\w+:\*\*\*@127\.0\.0\.1:1\//);
    expect(all).toMatch(/SLUICE_MYSQL_URL: the credentials hold a character a URL cannot carry as written/);
    for (const secret of [...Object.values(secrets), ...urlPieces]) expect(all, `"${secret}" was printed`).not.toContain(secret);
    expect(all).not.toContain(excludedDb);
    await source.sql(`DROP DATABASE ${excludedDb}; DROP USER 'u1_${tag}'@'%', 'u2_${tag}'@'%', '${user}'@'localhost', '${user}'@'127.0.0.1'`);
  });
});
