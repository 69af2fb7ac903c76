import type { BinlogHistory } from '../core/history.ts';
import { type BinlogPosition, formatPosition } from '../core/position.ts';
import { ErrorCode, PositionForeignError, type SluiceError } from '../errors.ts';
import { noMetrics } from '../log.ts';
import { transactionScan } from '../source/mysql/binlog-scan.ts';
import { dialectOf } from '../source/mysql/dialect/dialect.ts';
import { gtidCoverage, type ServerIdentity, serverIdentity } from '../source/mysql/history.ts';
import { connect } from '../source/mysql/server.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { Reposition, SourceState } from '../state/store.ts';
import type { CaptureDeps } from './run.ts';

/*
 * Following the transactions, not the server.
 *
 * A run finds its stored position P on another binlog history than the one it was read in
 * (POSITION_FOREIGN: the endpoint leads to a promoted replica, a Blue/Green target, a restore; or
 * the binlog was reset). P stands for the transactions read up to it, which its GTIDs name (MySQL:
 * the set executed, `gtidSet`; MariaDB: every domain's last GTID, `gtidPos`). When the server now
 * read carries every one of them and every transaction after them, the run moves the position to
 * the boundary B on this server after which exactly the unread transactions come, and goes on:
 *
 *   1. The server's GTID state holds what was read and has not purged what follows
 *      (`gtidCoverage`). MySQL: gtid_executed ⊇ the set, and (gtid_executed − set) ∩ gtid_purged
 *      is empty, whatever the server's uuid, file names and offsets. MariaDB: every domain's last
 *      GTID read is in the server's binlog state and its oldest binlog does not start after it.
 *      And it is another server than the one P was read on (server_uuid; MariaDB server_id): on
 *      the same one a new history is its own binlog started again, whose GTIDs are numbered from 1
 *      again — a set or a sequence number it reaches again names other transactions, and the
 *      time of one can match by chance, to the second.
 *   2. A scan of its binlog finds B as `state reset --to gtid:` does (lib/source/mysql/binlog-scan.ts):
 *      MySQL, the boundary before the first transaction outside the set, the stream skipping any
 *      later one the set holds; MariaDB, per domain in this server's binlog order (a replica's):
 *      everything up to and including the domain's last GTID read is read, the boundary is before
 *      the first transaction after one of those, and a domain whose GTID comes later here is
 *      skipped by the stream up to it (`gtidSkip`). The scan must find every domain's GTID, and a
 *      domain this server had before its oldest binlog that nothing read is refused.
 *   3. The last transaction read (P's `gtid`) is in this binlog, written at the time recorded with
 *      P (`gtidTime`; on MySQL also first committed at the microsecond recorded, `gtidCommitUs`):
 *      replicas log both as their primary did, and a GTID alone is given again to another
 *      transaction after RESET MASTER (MariaDB sequence numbers, MySQL's GNOs of the server's own
 *      uuid restart at 1), which a second-precision time can match by chance.
 *
 * Then every transaction emitted after B is one that was not read before, and every one not read
 * before is emitted: exactly once. B starts a new history epoch, so everything read from it sorts
 * after everything written before (lib/format/seq.ts); nothing was skipped, so nothing is copied
 * again (`resync` stays as it was); the catalog the state points at describes the tables after P's
 * transactions, which are the same transactions here, so it is kept. The move is one conditional
 * write under the run's own lease (`store.overwrite` fenced with the run as owner) and records what
 * happened (`lastReposition`, shown by `sluice status`). It is taken only before anything read from
 * the other history is committed: the check before reading, or the stream's first events (the
 * file's creation time, the first GTID of a domain) before a commit or heartbeat of the run moved
 * the position. What cannot be proven — no GTID recorded or gtid_mode OFF, a RESET MASTER, a
 * server lacking transactions the old one had (the asynchronous replication gap) — stays
 * POSITION_FOREIGN, naming what is missing; SLUICE_ON_HISTORY_CHANGE=stop keeps every case there.
 */

/** Whether an error is the stored position's history found to be another one. */
export function isForeign(error: unknown): error is SluiceError {
  return (error as SluiceError | undefined)?.code === ErrorCode.POSITION_FOREIGN;
}

/** The same POSITION_FOREIGN, saying why the run did not move by itself. */
function notFollowed(foreign: SluiceError, why: string): PositionForeignError {
  const evidence = foreign instanceof PositionForeignError ? foreign.evidence : foreign.message;
  return new PositionForeignError(`${foreign.message} sluice did not move by itself: ${why}.`, evidence);
}

/**
 * Whether `server` is the one `history` was recorded on: the same server_uuid (MySQL), else the
 * same server_id (MariaDB, whose replicas must have another one). Its binlog history changing
 * means its own binlog was started again, never a failover.
 */
function sameServer(history: BinlogHistory | undefined, server: ServerIdentity): boolean {
  if (!history) return false;
  if (history.serverUuid || server.serverUuid) return history.serverUuid === server.serverUuid;
  return history.serverId !== undefined && history.serverId === server.serverId;
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
/** A time in µs since the epoch, to the microsecond. */
const isoUs = (us: number) => new Date(Math.floor(us / 1000)).toISOString().replace(/\.(\d{3})Z$/, (_, ms) => `.${ms}${String(us % 1000).padStart(3, '0')}Z`);

/**
 * After `foreign` (POSITION_FOREIGN) and before anything read from the other history was
 * committed: moves the position by GTID under the run's lease (`owner`) and returns the new state,
 * or throws POSITION_FOREIGN saying what is not proven (see the header).
 */
export async function followHistory(deps: CaptureDeps, state: SourceState, owner: string, foreign: SluiceError): Promise<SourceState> {
  const { config, log, store } = deps;
  const clock = deps.clock ?? Date.now;
  const stored = state.position;
  if (config.onHistoryChange === 'stop' || !stored) throw foreign;
  const target = await mysqlTarget(config);
  const conn = await connect(target);
  let moved: BinlogPosition;
  let gtid: string;
  let server: Awaited<ReturnType<typeof serverIdentity>>;
  try {
    const coverage = await gtidCoverage(conn, stored);
    // The error already says what the server lacks (it asked the same of the same server).
    if (!coverage.held) throw foreign;
    gtid = coverage.gtid;
    server = await serverIdentity(conn);
    if (sameServer(state.history, server))
      throw notFollowed(
        foreign,
        `this is the server the position was read on (${server.serverUuid ? `server_uuid ${server.serverUuid}` : `server_id ${server.serverId}`}), and its binlog started again (RESET MASTER, RESET BINARY LOGS AND GTIDS): the GTIDs it has logged since are numbered anew and name other transactions`,
      );
    if (!stored.gtid || stored.gtidTime === undefined)
      throw notFollowed(
        foreign,
        "the stored position does not record when its last transaction was written (it was stored by an earlier sluice), so nothing shows that this server's transaction of that GTID is the one read",
      );
    const identity = { gtid: stored.gtid, at: stored.gtidTime };
    const found = await (await dialectOf(conn)).gtidStart(conn, transactionScan(target), gtid, identity);
    if (found.missing) throw notFollowed(foreign, `this server's binlog does not hold ${found.missing}, which sluice had read`);
    if (found.unnamed)
      throw notFollowed(
        foreign,
        `this server's oldest binlog starts after transactions of domains sluice never read (${found.unnamed}): they are purged here, and were not on the server read before`,
      );
    if (found.identityAt === undefined)
      throw notFollowed(foreign, `the last transaction read, ${stored.gtid}, is not in this server's binlog (purged?), so nothing shows it is the one read`);
    if (found.identityAt !== identity.at)
      throw notFollowed(
        foreign,
        `this server's ${stored.gtid} was written at ${iso(found.identityAt)}, the one sluice read at ${iso(identity.at)}: another transaction under the same GTID (RESET MASTER, or a server that numbers its own transactions alike)`,
      );
    const readUs = stored.gtidCommitUs;
    if (readUs !== undefined && found.identityCommitUs !== undefined && found.identityCommitUs !== readUs)
      throw notFollowed(
        foreign,
        `this server's ${stored.gtid} was first committed at ${isoUs(found.identityCommitUs)}, the one sluice read at ${isoUs(readUs)}: another transaction under the same GTID (RESET MASTER, or a server that numbers its own transactions alike)`,
      );
    moved = { ...found.position, gtid: stored.gtid, gtidTime: stored.gtidTime, ...(readUs === undefined ? {} : { gtidCommitUs: readUs }) };
  } finally {
    await conn.end();
  }
  const now = clock();
  const reposition: Reposition = {
    at: now,
    evidence: foreign instanceof PositionForeignError ? foreign.evidence : foreign.message,
    gtid,
    epoch: state.epoch + 1,
    from: {
      position: stored,
      ...(state.history?.serverId === undefined ? {} : { serverId: state.history.serverId }),
      ...(state.history?.serverUuid ? { serverUuid: state.history.serverUuid } : {}),
    },
    to: { position: moved, ...server },
  };
  const next = await store.overwrite(
    { sourceId: config.sourceId, owner, expectVersion: state.version, now },
    { position: moved, commitSeq: state.commitSeq, epoch: state.epoch + 1, ...(state.resync ? { resync: state.resync } : {}), reposition },
  );
  (deps.metrics ?? noMetrics).addMetric('Repositions', 'Count', 1);
  log.info('the binlog history changed and this server carries every transaction read: following them by GTID', {
    evidence: reposition.evidence,
    from: formatPosition(stored),
    to: formatPosition(moved),
    gtid,
    fromServer: reposition.from.serverUuid ?? reposition.from.serverId,
    toServer: reposition.to.serverUuid ?? reposition.to.serverId,
    epoch: next.epoch,
  });
  return next;
}
