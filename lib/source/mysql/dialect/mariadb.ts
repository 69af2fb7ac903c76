import { grantLines, parseGrants } from '../grants.ts';
import type { SqlConnection } from '../server.ts';
import { rows, statusPosition } from './common.ts';
import type { Dialect, ServerFlavor, SnapshotPoint } from './dialect.ts';
import { checkMariadbStartupGtid, mariadbCoverage, mariadbGtidStart, mariadbStoredEvidence } from './mariadb-gtid.ts';

/** MariaDB's consistent-snapshot point: the transaction's own binlog_snapshot_file/position. */
async function mariadbSnapshotPoint(conn: SqlConnection): Promise<SnapshotPoint> {
  // https://mariadb.com/kb/en/enhancements-for-start-transaction-with-consistent-snapshot/
  await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
  const status = await rows<{ Variable_name: string; Value: string }>(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'");
  const vars = Object.fromEntries(status.map((r) => [r.Variable_name.toLowerCase(), r.Value]));
  if (!vars.binlog_snapshot_file) {
    await conn.query('ROLLBACK');
    return { refused: 'the server does not report binlog_snapshot_file (binary logging is off?)' };
  }
  return {
    position: { file: vars.binlog_snapshot_file, pos: Number(vars.binlog_snapshot_position) },
    how: 'binlog_snapshot_file',
    end: async () => void (await conn.query('COMMIT')),
  };
}

/** MariaDB 10.5+ (the table in dialect.ts). */
export function mariadbDialect(flavor: ServerFlavor): Dialect {
  const binlogStatus = 'SHOW MASTER STATUS';
  const dialect: Dialect = {
    binlogStatus,
    resetStatement: 'RESET MASTER',
    // `/*M!` runs; `/*!` of MySQL-only versions (50700–99999) does not.
    comments: { version: flavor.version, mariadbComments: true, sixDigitVersions: true, mysqlOnlyVersions: false },
    // INVISIBLE columns (10.3+) are always listed in information_schema.
    prepareSession: async () => {},
    binlogEnd: (conn) => statusPosition(conn, binlogStatus),
    async settledEnd(conn) {
      // The binlog position of a consistent snapshot is exact (taken with the engine's commit
      // order); SHOW MASTER STATUS is not: a group's binlog write precedes its engine commit.
      const point = await mariadbSnapshotPoint(conn);
      if ('refused' in point) return statusPosition(conn, binlogStatus);
      await point.end();
      return point.position;
    },
    async gtidsBefore(conn, file) {
      // https://mariadb.com/kb/en/binlog_gtid_pos/
      const [row] = await rows<{ gtid: string | null }>(conn, 'SELECT BINLOG_GTID_POS(?, 4) AS gtid', [file]);
      return String(row?.gtid ?? '');
    },
    async gtidsAt(conn, position) {
      const [row] = await rows<{ gtid: string | null }>(conn, 'SELECT BINLOG_GTID_POS(?, ?) AS gtid', [position.file, position.pos]);
      return row?.gtid ?? undefined;
    },
    async withGtids(conn, position) {
      if (position.gtidPos !== undefined) return position;
      const [row] = await rows<{ gtid: string | null }>(conn, 'SELECT BINLOG_GTID_POS(?, ?) AS gtid', [position.file, position.pos]);
      return row?.gtid ? { ...position, gtidPos: row.gtid } : position;
    },
    gtidState: async () => undefined,
    async retentionSeconds(conn) {
      // binlog_expire_logs_seconds exists from 10.6.1; expire_logs_days everywhere.
      const [result] = await conn
        .query('SELECT @@expire_logs_days AS days, @@binlog_expire_logs_seconds AS seconds')
        .catch(() => conn.query('SELECT @@expire_logs_days AS days, 0 AS seconds'));
      const row = (result as { days: number | string | null; seconds: number | string | null }[])[0];
      return Number(row?.seconds ?? 0) || Math.round(Number(row?.days ?? 0) * 86_400);
    },
    snapshotPoint: (conn) => mariadbSnapshotPoint(conn),
    // SHOW GRANTS includes the current (default) role's grants: one statement says it all.
    sessionGrants: async (conn) => ({ ...parseGrants(await grantLines(conn, 'SHOW GRANTS')), activeRoles: [] }),
    privilegesWithRoles: async () => undefined,
    lockWarning: async () => undefined,
    checkStartupGtid: (text) => checkMariadbStartupGtid(text, flavor.text),
    gtidStart: (conn, scan, text, identity) => mariadbGtidStart(dialect, conn, scan, text, identity),
    gtidCoverage: (conn, position) => mariadbCoverage(dialect, conn, position),
    storedPositionEvidence: (conn, position, history, server) => mariadbStoredEvidence(dialect, conn, position, history, server),
  };
  return dialect;
}
