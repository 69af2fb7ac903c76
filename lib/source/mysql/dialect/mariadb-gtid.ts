import { GtidPosition, isMariadbGtidPosition, type MariadbGtid, parseMariadbGtid } from '../../../core/gtid-set.ts';
import type { BinlogHistory } from '../../../core/history.ts';
import { type BinlogPosition, formatPosition, LOG_POS_MODULUS } from '../../../core/position.ts';
import { ConfigError } from '../../../errors.ts';
import type { ServerIdentity } from '../history.ts';
import type { SqlConnection } from '../server.ts';
import { binaryLogs } from './common.ts';
import type { Dialect, GtidCoverage, GtidIdentity, GtidStart, TransactionScan } from './dialect.ts';

/* MariaDB's GTIDs: `d-s-n` per replication domain, a position as every domain's last (history.ts has the argument). */

/**
 * MariaDB: every domain's last transaction a position has read — its `gtidPos`, else its last GTID
 * alone (positions stored before every domain's was recorded); undefined without either.
 */
function readPosition(position: BinlogPosition): GtidPosition | undefined {
  try {
    if (position.gtidPos) return GtidPosition.parse(position.gtidPos);
    const last = parseMariadbGtid(position.gtid);
    return last ? GtidPosition.EMPTY.with(last) : undefined;
  } catch {
    return undefined;
  }
}

/** MariaDB: the domains a position still skips further on in its binlog (`gtidSkip`). */
function skipped(position: BinlogPosition): GtidPosition {
  try {
    return GtidPosition.parse(position.gtidSkip ?? '');
  } catch {
    return GtidPosition.EMPTY;
  }
}

/** MariaDB: the stored position's GTIDs a stream judges: every domain's last read, but those it still skips to (`gtidSkip`). */
export function judgedDomains(position: BinlogPosition): GtidPosition | undefined {
  let domains = readPosition(position);
  if (domains) for (const gtid of skipped(position).gtids()) domains = domains.without(gtid.domain);
  return domains;
}

/** `SLUICE_STARTUP=gtid:` must be a MariaDB GTID position. */
export function checkMariadbStartupGtid(text: string, server: string): void {
  if (!isMariadbGtidPosition(text))
    throw new ConfigError(`SLUICE_STARTUP=gtid:${text} is a MySQL GTID set, but the server is ${server} (MariaDB: d-s-n, e.g. gtid:0-1-1234)`);
}

/** Whether a file's starting GTID state (a domain's last GTID before it) lies at or before the domain's last GTID wanted: the same one, or an earlier one of its server. */
function startsBefore(state: GtidPosition, wanted: GtidPosition): boolean {
  return state.gtids().every((g) => {
    const w = wanted.get(g.domain);
    return w !== undefined && (w.text === g.text || (w.server === g.server && g.seq < w.seq));
  });
}

/**
 * `gtid:<d-s-n,...>` (MariaDB), as a replica resumes from its gtid_slave_pos: every listed domain's
 * transactions up to and including its GTID were read, in this server's binlog order (which is
 * the domain's order; sequence numbers alone do not order it), and a domain not listed is read from
 * the oldest binlog on. The scan starts in the newest file that begins before every listed GTID
 * (and before `identity`'s transaction, to see it), and the position is the boundary before the
 * first transaction not read; a domain whose GTID this server logs after that boundary (another
 * order of the domains than the old server's) is skipped up to it by the stream (`gtidSkip`).
 */
export async function mariadbGtidStart(
  dialect: Dialect,
  conn: SqlConnection,
  scan: TransactionScan,
  text: string,
  identity?: GtidIdentity,
): Promise<GtidStart> {
  const wanted = GtidPosition.parse(text);
  const known = identity && parseMariadbGtid(identity.gtid);
  const end = await dialect.binlogEnd(conn);
  const logs = await binaryLogs(conn);
  let from: { file: string; before: GtidPosition } | undefined;
  for (const log of [...logs].reverse()) {
    const before = GtidPosition.ofState((await dialect.gtidsBefore(conn, log.file)).split(','));
    from = { file: log.file, before };
    if (startsBefore(before, wanted) && !(known && before.holds(known))) break;
  }
  if (!from) return { position: end, missing: wanted };
  let pending = wanted;
  for (const gtid of from.before.gtids()) if (wanted.holds(gtid)) pending = pending.without(gtid.domain);
  let start: { before: BinlogPosition; skip: GtidPosition } | undefined;
  let identityAt: number | undefined;
  const last = await scan({ file: from.file, pos: 4 }, end, (txn, before) => {
    const gtid = parseMariadbGtid(txn.gtid);
    const until = gtid && pending.get(gtid.domain);
    if (gtid && until) {
      // A transaction of a domain before its last GTID read: read already.
      if (until.text === gtid.text) {
        pending = pending.without(gtid.domain);
        if (known?.text === gtid.text) identityAt = txn.tsMs;
      }
    } else start ??= { before, skip: pending };
    return start !== undefined && pending.isEmpty && (!known || identityAt !== undefined);
  });
  const at = start ?? { before: last, skip: pending };
  const unnamed = from.before.gtids().filter((g) => !wanted.get(g.domain));
  return {
    position: { ...at.before, gtidPos: wanted.toString(), ...(at.skip.isEmpty ? {} : { gtidSkip: at.skip.toString() }) },
    ...(pending.isEmpty ? {} : { missing: pending }),
    ...(unnamed.length ? { unnamed: GtidPosition.ofState(unnamed.map((g) => g.text)) } : {}),
    ...(identityAt === undefined ? {} : { identityAt }),
  };
}

/**
 * MariaDB (`Dialect.gtidCoverage`): for every domain the position has read, the server's binlog
 * state must reach that domain's last GTID read (its server's sequence number at least as high),
 * and its oldest binlog must not start after it.
 */
export async function mariadbCoverage(dialect: Dialect, conn: SqlConnection, position: BinlogPosition): Promise<GtidCoverage> {
  const read = readPosition(position);
  if (!read || read.isEmpty) return { held: false, missing: 'the stored position records no GTID (it was stored before GTIDs were, or the server logs none)' };
  const [state] = await conn.query('SELECT @@gtid_binlog_state AS state');
  const logged = String((state as { state: string | null }[])[0]?.state ?? '')
    .split(',')
    .map((part) => parseMariadbGtid(part))
    .filter((g): g is MariadbGtid => g !== undefined);
  const [oldest] = await binaryLogs(conn);
  const before = oldest ? GtidPosition.ofState(((await dialect.gtidsBefore(conn, oldest.file)) || '').split(',')) : GtidPosition.EMPTY;
  const problems: string[] = [];
  for (const gtid of read.gtids()) {
    const last = logged.find((g) => g.domain === gtid.domain && g.server === gtid.server);
    if (!last) problems.push(`it has no transaction of server ${gtid.server} in domain ${gtid.domain}, so none up to ${gtid.text}`);
    else if (last.seq < gtid.seq)
      problems.push(
        `it lacks ${last.seq + 1n === gtid.seq ? gtid.text : `${gtid.domain}-${gtid.server}-${last.seq + 1n} to ${gtid.text}`} (its binlog state ends that domain and server at ${last.text})`,
      );
    else {
      const first = before.get(gtid.domain);
      if (first && first.text !== gtid.text && first.seq >= gtid.seq)
        problems.push(`its oldest binlog ${oldest?.file} starts after ${gtid.text} (at ${first.text}): what follows ${gtid.text} is purged`);
    }
  }
  if (problems.length) return { held: false, missing: `of the transactions sluice had read (${read}), ${problems.join('; ')}` };
  return { held: true, gtid: read.toString() };
}

/**
 * MariaDB (`Dialect.storedPositionEvidence`): the server_id recorded with the history, then, for a
 * position stored without its history, each domain's last GTID read must be where
 * BINLOG_GTID_POS(file, pos) says the server's binlog is there.
 */
export async function mariadbStoredEvidence(
  dialect: Dialect,
  conn: SqlConnection,
  position: BinlogPosition,
  history: BinlogHistory | undefined,
  server: ServerIdentity,
): Promise<string | undefined> {
  // MariaDB has no uuid: a server_id other than the one recorded is another server, whose files
  // of the same names may have been created in the same second (a replica built with its primary).
  const was = history?.serverId;
  const now = server.serverId;
  if (was !== undefined && now !== undefined && was !== now) return `it was recorded on server_id ${was}; this server is server_id ${now}`;
  const expected = judgedDomains(position);
  // BINLOG_GTID_POS answers NULL past 4 GiB (sql/item_strfunc.cc: pos > UINT_MAX32): such a
  // position is checked by the stream's first GTIDs alone (BinlogHistories.onEvent).
  if (history || !expected || expected.isEmpty || position.pos >= LOG_POS_MODULUS) return undefined;
  const here = (await dialect.gtidsAt(conn, position)) ?? '';
  const at = GtidPosition.ofState(here.split(','));
  const differing = expected.gtids().filter((gtid) => !at.holds(gtid));
  if (!differing.length) return undefined;
  return `this server's GTID position at ${formatPosition({ ...position, gtid: undefined })} is ${here ? `"${here}"` : 'empty'}, not ${differing.map((g) => g.text).join(',')}`;
}
