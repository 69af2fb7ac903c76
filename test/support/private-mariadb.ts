import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { type MariaDbInstance, startMariaDb } from '../../lib/local/mariadb.ts';
import { stopProcess } from '../../lib/local/process.ts';

/** A MariaDB of a test's own, for what rewrites the binlog for everyone reading a server (RESET MASTER, replication). */
export interface PrivateServer {
  instance: MariaDbInstance;
  admin: mysql.Connection;
  dir: string;
}

/** Starts one (extra `mariadbd` arguments in `args`, e.g. another `--server-id`). */
export async function privateMariaDb(args: string[] = []): Promise<PrivateServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-private-'));
  const instance = await startMariaDb(join(dir, 'db'), () => {}, args);
  const admin = await mysql.createConnection({ uri: instance.adminUrl, multipleStatements: true, dateStrings: true });
  return { instance, admin, dir };
}

/** Stops it and deletes its files. */
export async function stopPrivate(s: PrivateServer | undefined): Promise<void> {
  if (!s) return;
  await s.admin.end().catch(() => undefined);
  await stopProcess(s.instance.pid);
  rmSync(s.dir, { recursive: true, force: true });
}
