import { startMariaDb } from '../../lib/local/mariadb.ts';
import { startMySql } from '../../lib/local/mysql.ts';
import type { LocalServer } from '../../lib/local/stack.ts';
import type { MysqlTarget } from '../../lib/source/mysql/target.ts';
import { tlsOptions } from '../../lib/source/mysql/tls.ts';

/** A private server for a test that changes server-wide state, of the suite's flavor, and how sluice reaches it. */
export interface PrivateServer {
  pid: number;
  port: number;
  url: string;
  adminUrl: string;
  /** The variables pointing sluice at it: SLUICE_MYSQL_URL, and on MySQL the verified TLS its account needs. */
  env: Record<string, string>;
  /** The same, as a target for connect(). */
  target: MysqlTarget;
}

/**
 * Starts a server of the kind the stack runs (`inject('stackServer')`: MariaDB, or MySQL under
 * `npm run test:live-mysql`) in `dir`, so a test of RESET MASTER, PURGE, SET GLOBAL or killed
 * connections never disturbs the shared one (`args`: more server options, e.g. another `--server-id`).
 */
export async function startPrivateServer(dir: string, kind: LocalServer, args: string[] = []): Promise<PrivateServer> {
  if (kind === 'mariadb') {
    const server = await startMariaDb(dir, () => {}, args);
    return { ...server, env: { SLUICE_MYSQL_URL: server.url }, target: { uri: server.url, label: 'private' } };
  }
  const server = await startMySql(dir, () => {}, args);
  return {
    ...server,
    env: { SLUICE_MYSQL_URL: server.url, SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: server.ca },
    target: { uri: server.url, ssl: tlsOptions('verify', server.ca), label: 'private' },
  };
}
