import { GtidSet } from '../../../core/gtid-set.ts';
import type { BinlogHistory } from '../../../core/history.ts';
import { type BinlogPosition, formatPosition } from '../../../core/position.ts';
import { ConfigError, ErrorCode, PositionLostError, SluiceError } from '../../../errors.ts';
import type { ServerIdentity } from '../history.ts';
import type { SqlConnection } from '../server.ts';
import { binaryLogs } from './common.ts';
import type { Dialect, GtidCoverage, GtidIdentity, GtidStart, TransactionScan } from './dialect.ts';

/* MySQL's GTIDs: `uuid[:tag]:n-m` sets, a position as the set executed at it (history.ts has the argument). */

/** MySQL: the transactions a position has read — its set, else its last GTID alone; undefined for other shapes. */
export function readSet(position: BinlogPosition): GtidSet | undefined {
  try {
    if (position.gtidSet) return GtidSet.parse(position.gtidSet);
    return position.gtid && GtidSet.is(position.gtid) ? GtidSet.EMPTY.add(position.gtid) : undefined;
  } catch {
    return undefined;
  }
}

/** `SLUICE_STARTUP=gtid:` must be a MySQL GTID set. */
export function checkMysqlStartupGtid(text: string, server: string): void {
  if (!GtidSet.is(text))
    throw new ConfigError(
      `SLUICE_STARTUP=gtid:${text} is a MariaDB GTID position, but the server is ${server} (MySQL: uuid:n-m, e.g. gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5)`,
    );
}

/**
 * Where a MySQL GTID set's transactions end, as a file and offset: the newest file whose
 * Previous_gtids (the set executed before the file) the set includes, scanned from its start to
 * the first transaction the set lacks. The server must hold every transaction of the set and still
 * have those after it (not in gtid_purged); else nothing is stored and the error says what differs.
 */
export async function mysqlGtidStart(
  conn: SqlConnection,
  dialect: Dialect,
  text: string,
  identity?: GtidIdentity,
): Promise<{ from: string | undefined; covered: GtidSet }> {
  const covered = GtidSet.parse(text);
  const state = await dialect.gtidState(conn);
  if (state && !state.executed.includes(covered)) {
    throw new SluiceError(
      ErrorCode.POSITION_FOREIGN,
      `gtid:${text} holds transactions this server never executed (${covered.subtract(state.executed)}; its gtid_executed is "${state.executed}"): the set comes from another server or history; nothing was stored. Take the set from this server's history (a savepoint, or @@gtid_executed at the point wanted).`,
    );
  }
  const lost = state?.executed.subtract(covered).intersect(state.purged);
  if (lost && !lost.isEmpty) {
    throw new PositionLostError(
      `the transactions after gtid:${text} are partly purged from this server's binlog (${lost} is in gtid_purged); nothing was stored. Re-snapshot the source (SLUICE_STARTUP=initial, or \`sluice state reset --to latest\`, after which the next run copies every table again).`,
    );
  }
  const logs = await binaryLogs(conn);
  for (const log of [...logs].reverse()) {
    const before = GtidSet.parse(await dialect.gtidsBefore(conn, log.file));
    // With `identity`, a file that starts before its transaction, so that the scan passes it.
    if (covered.includes(before) && !(identity && before.contains(identity.gtid))) return { from: log.file, covered };
  }
  return { from: logs[0]?.file, covered };
}

/**
 * `gtid:<uuid:1-5,...>` (MySQL): the boundary before the first transaction the set does not hold,
 * carrying the set itself (with what the scan found before it) as executed there. A set with a gap
 * holds transactions after that boundary; the stream skips them, as a replica does (BinlogReader).
 */
export async function mysqlGtidPosition(
  dialect: Dialect,
  conn: SqlConnection,
  scan: TransactionScan,
  text: string,
  identity?: GtidIdentity,
): Promise<GtidStart> {
  const end = await dialect.binlogEnd(conn);
  const { from, covered } = await mysqlGtidStart(conn, dialect, text, identity);
  let found: BinlogPosition | undefined;
  let identityAt: number | undefined;
  let identityCommitUs: number | undefined;
  const last = from
    ? await scan({ file: from, pos: 4 }, end, (txn, before) => {
        if (txn.gtid !== null && !covered.contains(txn.gtid)) found ??= before;
        else if (identity && txn.gtid === identity.gtid) {
          identityAt = txn.tsMs;
          identityCommitUs = txn.commitUs;
        }
        return found !== undefined && (!identity || identityAt !== undefined);
      })
    : end;
  const start = found ?? last;
  const scanned = start.gtidSet && GtidSet.is(start.gtidSet) ? GtidSet.parse(start.gtidSet) : GtidSet.EMPTY;
  const executed = covered.union(scanned);
  return {
    position: executed.isEmpty ? start : { ...start, gtidSet: executed.toString() },
    ...(identityAt === undefined ? {} : { identityAt }),
    ...(identityCommitUs === undefined ? {} : { identityCommitUs }),
  };
}

/**
 * MySQL (`Dialect.gtidCoverage`): `@@gtid_executed` must include the position's set and nothing
 * after the set may be in `@@gtid_purged`, whatever the server's uuid, file names and offsets.
 */
export async function mysqlCoverage(dialect: Dialect, conn: SqlConnection, position: BinlogPosition): Promise<GtidCoverage> {
  const read = position.gtidSet ? readSet(position) : undefined;
  if (!read || read.isEmpty)
    return { held: false, missing: 'the stored position records no GTID set (gtid_mode OFF, or stored by a sluice that did not record sets)' };
  const state = await dialect.gtidState(conn);
  if (!state?.on && state?.executed.isEmpty) return { held: false, missing: "this server's gtid_mode is OFF" };
  const lacking = state ? read.subtract(state.executed) : read;
  if (!lacking.isEmpty)
    return {
      held: false,
      missing: `this server's gtid_executed lacks ${lacking}, which sluice had read (the transactions the old server had that this one never got)`,
    };
  const lost = state ? state.executed.subtract(read).intersect(state.purged) : GtidSet.EMPTY;
  if (!lost.isEmpty)
    return { held: false, missing: `the transactions after the position are partly purged from this server's binlog (${lost} is in gtid_purged)` };
  return { held: true, gtid: read.toString() };
}

/**
 * MySQL (`Dialect.storedPositionEvidence`): the position's set inside gtid_executed, what follows
 * it not in gtid_purged (POSITION_LOST), then the server_uuid recorded with the history.
 */
export async function mysqlStoredEvidence(
  dialect: Dialect,
  conn: SqlConnection,
  position: BinlogPosition,
  history: BinlogHistory | undefined,
  server: ServerIdentity,
): Promise<string | undefined> {
  const state = await dialect.gtidState(conn);
  const read = readSet(position);
  if (state && read && !read.isEmpty) {
    const missing = read.subtract(state.executed);
    if (!missing.isEmpty)
      return `this server's gtid_executed (${state.executed.isEmpty ? 'empty' : `"${state.executed}"`}) lacks ${missing}, which sluice had already read`;
    const lost = position.gtidSet ? state.executed.subtract(read).intersect(state.purged) : GtidSet.EMPTY;
    if (!lost.isEmpty) {
      throw new PositionLostError(
        `the transactions after the stored position ${formatPosition(position)} were partly purged from this server's binlog: ${lost} is in gtid_purged. ` +
          'Nothing was skipped silently: `sluice state reset --to latest` (the next run copies every table again), and keep binlogs longer than your longest outage (docs/RUNBOOK.md, POSITION_LOST).',
      );
    }
  }
  const was = history?.serverUuid;
  const now = server.serverUuid;
  if (was && now && was !== now && history?.file !== position.file)
    return `it was recorded on server_uuid ${was}; this server is ${now}, and nothing recorded shows that its ${position.file} is the same file`;
  return undefined;
}
