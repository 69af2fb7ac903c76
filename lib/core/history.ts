/**
 * What identifies the binlog history a stored position belongs to, kept next to the position.
 *
 * A position is `file:pos`; the same file name exists again after `RESET MASTER`, a restore, a
 * Blue/Green switchover or a failover, with unrelated content. What tells the histories apart is
 * when the file was created: its Format_description event's timestamp, which the server sends at
 * every stream start (lib/source/mysql/history.ts checks it, and the last GTID of the position).
 */
export interface BinlogHistory {
  /** The binlog file `created` belongs to: the position's file when it was recorded. */
  readonly file: string;
  /** The file's Format_description timestamp (ms since the epoch, second precision): its creation time. */
  readonly created: number;
  /** `@@server_id` of the server that was read: on MariaDB, which has no uuid, what tells another server (lib/source/mysql/history.ts). */
  readonly serverId?: number;
  /** `@@server_uuid` (MySQL only): what tells another server, and the one a position must not be followed on (lib/capture/follow.ts). */
  readonly serverUuid?: string;
}
