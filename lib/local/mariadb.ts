import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { LocalStackError } from '../errors.ts';
import { freePort, spawnDetached, stopProcess, waitFor } from './process.ts';

export interface MariaDbInstance {
  pid: number;
  port: number;
  /** Admin URL (all privileges), for demos and tests that write to the source. */
  adminUrl: string;
  /** The URL sluice uses: a replication user with only REPLICATION SLAVE, REPLICATION CLIENT, SELECT. */
  url: string;
}

const REPL_USER = 'sluice';
const REPL_PASSWORD = 'sluice-local';
const ADMIN_USER = 'sluice_admin';
const ADMIN_PASSWORD = 'sluice-admin';

function which(binary: string): string | undefined {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin', ...(process.env.PATH ?? '').split(':')]) {
    const path = join(dir, binary);
    if (dir && existsSync(path)) return path;
  }
  return undefined;
}

/** Finds mariadbd, installing Debian's mariadb-server when we are root on Debian/Ubuntu. */
function ensureMariaDbInstalled(log: (line: string) => void): { mariadbd: string; installDb: string } {
  let mariadbd = which('mariadbd');
  if (!mariadbd) {
    const canApt = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get');
    if (!canApt) {
      throw new LocalStackError(
        'mariadbd was not found. Install MariaDB (Debian/Ubuntu: `sudo apt-get install -y mariadb-server mariadb-client`, macOS: `brew install mariadb`) and run `sluice local up` again.',
      );
    }
    log('mariadbd not found: installing Debian mariadb-server (about 20 s)…');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    for (const args of [
      ['update', '-qq'],
      ['install', '-y', '-qq', 'mariadb-server', 'mariadb-client'],
    ]) {
      const result = spawnSync('apt-get', args, { stdio: 'inherit', env });
      if (result.status !== 0) throw new LocalStackError(`apt-get ${args.join(' ')} failed (exit ${result.status}); install mariadb-server by hand.`);
    }
    mariadbd = which('mariadbd');
    if (!mariadbd) throw new LocalStackError('mariadb-server was installed but mariadbd is still not on the PATH.');
  }
  const installDb = which('mariadb-install-db') ?? which('mysql_install_db');
  if (!installDb) throw new LocalStackError('mariadb-install-db was not found next to mariadbd; reinstall mariadb-server.');
  return { mariadbd, installDb };
}

/**
 * Starts a private MariaDB with the settings CDC needs (ROW format, FULL row image, FULL row
 * metadata) on a free loopback port. It never touches a system instance.
 */
export async function startMariaDb(dir: string, log: (line: string) => void, extraArgs: string[] = []): Promise<MariaDbInstance> {
  const { mariadbd, installDb } = ensureMariaDbInstalled(log);
  const datadir = join(dir, 'data');
  const fresh = !existsSync(join(datadir, 'mysql'));
  // A tmpdir of its own: every mariadbd deletes the #sql* files it finds in its tmpdir at start, so
  // instances sharing /tmp broke each other's bootstrap ("Unknown table 'mysql.tmp_proxies_priv'")
  // when a test or the chaos harness started one while another was being installed.
  const tmpdir = join(dir, 'tmp');
  mkdirSync(tmpdir, { recursive: true });
  if (fresh) {
    mkdirSync(datadir, { recursive: true });
    execFileSync(
      installDb,
      ['--no-defaults', `--datadir=${datadir}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db', `--tmpdir=${tmpdir}`],
      { stdio: 'pipe' },
    );
  }
  // The datadir is ours alone: an instance still holding it (e.g. after an interrupted `up`) is stale.
  const pidFile = join(dir, 'mariadb.pid');
  if (existsSync(pidFile)) await stopProcess(Number(readFileSync(pidFile, 'utf8').trim()));
  const port = await freePort();
  const errLog = join(dir, 'error.log');
  const socket = join(dir, 'mariadb.sock');
  const pid = spawnDetached(
    mariadbd,
    [
      '--no-defaults',
      `--datadir=${datadir}`,
      `--tmpdir=${tmpdir}`,
      `--socket=${socket}`,
      `--pid-file=${pidFile}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      '--user=root',
      `--log-bin=${join(datadir, 'binlog')}`,
      '--binlog-format=ROW',
      '--binlog-row-image=FULL',
      '--binlog-row-metadata=FULL',
      '--server-id=1',
      '--character-set-server=utf8mb4',
      '--collation-server=utf8mb4_unicode_ci',
      '--max-allowed-packet=64M',
      '--innodb-buffer-pool-size=256M',
      '--innodb-flush-log-at-trx-commit=2',
      '--sync-binlog=0',
      `--log-error=${errLog}`,
      ...extraArgs,
    ],
    join(dir, 'stdout.log'),
  );
  const rootSocket = { socketPath: socket, user: 'root' };
  await waitFor(
    'MariaDB',
    async () => {
      const conn = await mysql.createConnection(rootSocket);
      await conn.end();
      return true;
    },
    30_000,
    errLog,
  );
  if (fresh) {
    const conn = await mysql.createConnection({ ...rootSocket, multipleStatements: true });
    const statements: string[] = [];
    for (const host of ['localhost', '127.0.0.1']) {
      statements.push(
        `CREATE USER IF NOT EXISTS '${REPL_USER}'@'${host}' IDENTIFIED BY '${REPL_PASSWORD}'`,
        `GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '${REPL_USER}'@'${host}'`,
        `CREATE USER IF NOT EXISTS '${ADMIN_USER}'@'${host}' IDENTIFIED BY '${ADMIN_PASSWORD}'`,
        `GRANT ALL PRIVILEGES ON *.* TO '${ADMIN_USER}'@'${host}' WITH GRANT OPTION`,
      );
    }
    await conn.query(`${statements.join(';\n')};`);
    await conn.end();
  }
  return {
    pid,
    port,
    adminUrl: `mysql://${ADMIN_USER}:${ADMIN_PASSWORD}@127.0.0.1:${port}/`,
    url: `mysql://${REPL_USER}:${REPL_PASSWORD}@127.0.0.1:${port}/`,
  };
}
