import type { SqlConnection } from './server.ts';

/**
 * Which server sluice talks to, decided once per connection from `VERSION()` and
 * `@@version_comment`: every difference between MySQL and MariaDB (statement names, GTID shapes,
 * version comments, default collations) is asked of this value, never found by trying statements.
 */
export interface ServerFlavor {
  readonly kind: 'mysql' | 'mariadb';
  /** major·10000 + minor·100 + patch, as `/*!NNNNN … *\/` comments compare it: 8.0.46 → 80046, 10.11.19 → 101119. */
  readonly version: number;
  /** `VERSION()` as the server reports it, for messages. */
  readonly text: string;
}

/**
 * Reads the flavor from `VERSION()` and `@@version_comment`: MySQL `8.4.3` (Aurora MySQL 3 reports
 * its MySQL version, `8.0.39`), MariaDB `10.11.19-MariaDB-0+deb12u1`, or `5.5.5-10.11.19-MariaDB`
 * through old proxies.
 */
export function parseServerFlavor(version: string, versionComment = ''): ServerFlavor {
  const mariadb = /mariadb/i.test(version) || /mariadb/i.test(versionComment);
  // Old MariaDB clients' protocol prefix: the real version follows it.
  const text = mariadb ? version.replace(/^5\.5\.5-/, '') : version;
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(text);
  const [major, minor, patch] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
  return { kind: mariadb ? 'mariadb' : 'mysql', version: major * 10000 + minor * 100 + patch, text: version };
}

/** Asks the server for its flavor: one round trip. */
export async function serverFlavor(conn: SqlConnection): Promise<ServerFlavor> {
  const [rows] = await conn.query('SELECT VERSION() AS version, @@version_comment AS comment');
  const row = (rows as { version: string; comment: string | null }[])[0];
  return parseServerFlavor(row?.version ?? '', row?.comment ?? '');
}
