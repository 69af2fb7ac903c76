import { type GtidPosition, parseGtid, parseMariadbGtid } from '../../core/gtid-set.ts';
import type { BinlogHistory } from '../../core/history.ts';
import { type BinlogPosition, fileNumber, formatPosition } from '../../core/position.ts';
import { ErrorCode, PositionForeignError, SluiceError } from '../../errors.ts';
import { dialectOf, type GtidCoverage } from './dialect/dialect.ts';
import { judgedDomains } from './dialect/mariadb-gtid.ts';
import { readSet } from './dialect/mysql-gtid.ts';
import { binaryLogs, checkPositionReadable, type SqlConnection } from './server.ts';

/*
 * Resuming only on the binlog history a stored position belongs to.
 *
 * A stored position is `file:pos`. After RESET MASTER, a restore, a Blue/Green switchover or a
 * failover, a file of that name can exist with unrelated content: read from there, the stream
 * either fails by luck (the offset falls inside an event) or silently reads another history (it
 * falls on a boundary, e.g. the first transaction of a fresh file). Server id and file names do not
 * tell the histories apart (both are the same after RESET MASTER or on a second fresh server); what
 * does:
 *
 *   - the file's creation time: its Format_description timestamp, which the server sends at every
 *     stream start before anything else, also when starting mid-file and before its own error for
 *     a bad offset. Stored with every commit and heartbeat (`BinlogHistory`), compared with the
 *     stream's first Format_description;
 *   - the position's GTIDs (MariaDB `d-s-n`, every domain's last in `position.gtidPos`, else the
 *     last GTID alone): the first later GTID of each domain from the same server must have a
 *     higher sequence number (sequence numbers restart at 1 after RESET MASTER and on a fresh
 *     server);
 *   - the offset itself: it must be an event boundary (`SHOW BINLOG EVENTS … FROM pos`, one seek).
 *
 * Items written before the history was stored, and positions moved by GTID, have none: they are
 * checked once by GTID (`BINLOG_GTID_POS(file, pos)`, which reads the file up to `pos`, must name
 * each domain's last GTID read there) and get it at the next commit.
 *
 * On MySQL with GTIDs a position also carries the set executed at it (`position.gtidSet`), which
 * the server's own sets are asked about before reading (`@@gtid_executed`, `@@gtid_purged`):
 *
 *   - the set must be inside gtid_executed: a server lacking transactions the position has read
 *     was reset (RESET MASTER / RESET BINARY LOGS AND GTIDS), restored from an older backup, or is
 *     another server (a failover or Blue/Green target that never got them): POSITION_FOREIGN;
 *   - the transactions after it (gtid_executed minus the set) must not be in gtid_purged: they are
 *     gone from the binlog, however the files are named: POSITION_LOST;
 *   - the first transaction the stream reads must not be one the position has read: in its set
 *     and not later than its last GTID of the same source (a held transaction after that is a
 *     gap the set filled, which the stream skips);
 *   - `@@server_uuid` must be the one recorded with the history, unless the stored creation time
 *     of the position's file is there to prove the file is the same one (shared storage keeps the
 *     files across a change of instance); a different server's files with the same names are
 *     another history. (MariaDB, which has no uuid: `@@server_id` must be the one recorded.)
 *
 * A position without a set (gtid_mode OFF, or stored before sets were recorded) is checked by its
 * last GTID alone (it must be in gtid_executed) and by the file timestamps, as on MariaDB.
 */

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** Who a server is, for histories and messages: `@@server_id`, and `@@server_uuid` on MySQL. */
export interface ServerIdentity {
  serverId?: number;
  serverUuid?: string;
}

/** What was found wrong with the history, before the server is asked how to recover. */
interface Mismatch {
  position: BinlogPosition;
  /** What differs, as a sentence part. */
  evidence: string;
}

/**
 * The binlog history of one capture run: checks the stored position's before and while reading,
 * and gives every position the run stores its history (`of`).
 */
export class BinlogHistories {
  /** Creation time of each binlog file the stream has entered. */
  private readonly created = new Map<string, number>();
  /** A start the run took from the server, with its history read there (`know`): what its stream must find. */
  private known: { readonly position: BinlogPosition; readonly history: BinlogHistory } | undefined;
  private server: ServerIdentity = {};
  private gtidChecked = false;
  /** MariaDB: the domains whose first later transaction has been judged. */
  private readonly domainsChecked = new Set<number>();
  /** MariaDB: the stored position's GTIDs the stream judges (every domain's last read, but those it skips to). */
  private readonly storedDomains: GtidPosition | undefined;

  constructor(
    /** The stored state: the position to resume from and its history, if recorded. */
    private readonly stored: { readonly position?: BinlogPosition; readonly history?: BinlogHistory } = {},
  ) {
    this.storedDomains = stored.position ? judgedDomains(stored.position) : undefined;
  }

  /** The history to store with `position`: known once the stream has entered its file (or read at a start the run took, `know`). */
  readonly of = (position: BinlogPosition): BinlogHistory | undefined => {
    const created = this.created.get(position.file);
    if (created !== undefined) return { file: position.file, created, ...this.server };
    const before = this.expected();
    return before?.history.file === position.file ? before.history : undefined;
  };

  /**
   * `history` is that of `position`, a start the run took from the server, read there before its
   * stream starts (historyAt): stored with it at once, and what the stream's first event must show
   * (a binlog reset in between is another history).
   */
  know(position: BinlogPosition, history: BinlogHistory): void {
    this.known = { position, history };
  }

  /** The position whose history the stream checks, with that history: the stored one's, else a start's the run took. */
  private expected(): { readonly position: BinlogPosition; readonly history: BinlogHistory } | undefined {
    const { position, history } = this.stored;
    return position && history ? { position, history } : this.known;
  }

  /**
   * Before reading: the stored position's file is on the server and `pos` is an event boundary in
   * it; a position stored without its history is checked by GTID. Throws POSITION_LOST or
   * POSITION_FOREIGN.
   */
  async checkStored(conn: SqlConnection): Promise<void> {
    const { position, history } = this.stored;
    this.server = await serverIdentity(conn);
    if (!position) return;
    const logs = await binaryLogs(conn);
    const last = logs[logs.length - 1];
    // Purging removes old files, never the newest: a position beyond the last file's end was never written here.
    if (last && fileNumber(position.file) > fileNumber(last.file)) {
      throw await foreignError(async () => conn, { position, evidence: `this server's binlog ends with ${last.file}, before ${position.file}` });
    }
    if (last?.file === position.file && position.pos > last.size) {
      throw await foreignError(async () => conn, { position, evidence: `this server's ${last.file} ends at ${last.size}, before the position` });
    }
    await checkPositionReadable(conn, position);
    if (!(await isEventBoundary(conn, position))) {
      throw await foreignError(async () => conn, {
        position,
        evidence: `offset ${position.pos} is not the start of an event in this server's ${position.file}`,
      });
    }
    const evidence = await (await dialectOf(conn)).storedPositionEvidence(conn, position, history, this.server);
    if (evidence) throw await foreignError(async () => conn, { position, evidence });
  }

  /**
   * A stream event: records a file's creation time and compares it, and the first GTID of the
   * stored GTID's domain and server, with the stored position's. Returns the mismatch, if any.
   */
  onEvent(ev: { timestamp: number; gtid?: string }, type: string, file: string): Mismatch | undefined {
    const { position } = this.stored;
    if (type === 'Format') {
      if (this.created.has(file)) return undefined;
      this.created.set(file, ev.timestamp);
      const expected = this.expected();
      const history = expected?.history;
      if (expected && history && history.file === file && file === expected.position.file && history.created !== ev.timestamp) {
        const server =
          history.serverId === undefined ? '' : `, on server_id ${history.serverId}${history.serverUuid ? ` (server_uuid ${history.serverUuid})` : ''}`;
        const now =
          this.server.serverId === undefined
            ? ''
            : ` (server_id ${this.server.serverId}${this.server.serverUuid ? `, server_uuid ${this.server.serverUuid}` : ''})`;
        return {
          position: expected.position,
          evidence: `the position was recorded in a ${file} created at ${iso(history.created)}${server}; this server's${now} ${file} was created at ${iso(ev.timestamp)}`,
        };
      }
      return undefined;
    }
    if (type === 'Gtid' && !this.gtidChecked && position?.gtidSet) {
      // MySQL: the first transaction after a position must not be one it has read. One its set
      // holds may be a gap the set filled (a start set with holes: the reader skips it); it is
      // another history when it is not later than the position's own last transaction of the
      // same source (this file of that name is at an earlier point), or that one is unknown.
      this.gtidChecked = true;
      const seen = typeof ev.gtid === 'string' ? ev.gtid : undefined;
      if (seen && readSet(position)?.contains(seen) && !afterLast(seen, position.gtid))
        return { position, evidence: `the first transaction after it, ${seen}, is one the position had already read` };
      return undefined;
    }
    if (type !== 'MariadbGtid' || !position || !this.storedDomains) return undefined;
    // MariaDB: the first later transaction of each domain the position has read, from the same
    // server, must have a higher sequence number. Another server's proves nothing either way (a
    // replica's own writes, a domain's earlier primary); a domain the position skips to comes later.
    const seen = parseMariadbGtid(typeof ev.gtid === 'string' ? ev.gtid : undefined);
    if (!seen || this.domainsChecked.has(seen.domain)) return undefined;
    const stored = this.storedDomains.get(seen.domain);
    if (!stored || stored.server !== seen.server) return undefined;
    this.domainsChecked.add(seen.domain);
    if (seen.seq > stored.seq) return undefined;
    return { position, evidence: `the first transaction after it is ${seen.text}, which is not later than the position's ${stored.text}` };
  }

  /** The POSITION_FOREIGN error for a mismatch the stream found, with the recovery the server allows. */
  explain(sql: () => Promise<SqlConnection>, mismatch: Mismatch): Promise<SluiceError> {
    return foreignError(sql, mismatch);
  }
}

/** The server's id (and uuid, on MySQL). */
export async function serverIdentity(conn: SqlConnection): Promise<ServerIdentity> {
  const [rows] = await conn.query("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'server_uuid')");
  const vars = Object.fromEntries((rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, r.Value]));
  return { ...(vars.server_id ? { serverId: Number(vars.server_id) } : {}), ...(vars.server_uuid ? { serverUuid: vars.server_uuid } : {}) };
}

/** Binlog events a transaction (event group) can start with, as SHOW BINLOG EVENTS names them. */
// MySQL 8.3+ names a tagged GTID event Gtid_tagged_log_event (sql/log_event.cc get_type_str).
const GROUP_STARTS = new Set([
  'Gtid',
  'Gtid_tagged_log_event',
  'Anonymous_Gtid',
  'Format_desc',
  'Gtid_list',
  'Previous_gtids',
  'Binlog_checkpoint',
  'Rotate',
  'Stop',
]);

/** The type of the event at `position` (SHOW BINLOG EVENTS names), null at the file's end, undefined when `pos` is not an event boundary. */
async function eventAt(conn: SqlConnection, position: BinlogPosition): Promise<string | null | undefined> {
  if (position.pos < 4) return undefined;
  try {
    const [rows] = await conn.query(`SHOW BINLOG EVENTS IN ${quote(position.file)} FROM ${Math.trunc(position.pos)} LIMIT 1`);
    const [event] = rows as { Event_type: string }[];
    return event ? event.Event_type : null;
  } catch (error) {
    // 1220 ER_ERROR_WHEN_EXECUTING_COMMAND: "Wrong offset or I/O error" (not a boundary) or "Invalid pos".
    if ((error as { errno?: number }).errno === 1220) return undefined;
    throw error;
  }
}

const quote = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

async function isEventBoundary(conn: SqlConnection, position: BinlogPosition): Promise<boolean> {
  return (await eventAt(conn, position)) !== undefined;
}

/**
 * Validates a position given by a person (`SLUICE_STARTUP=position:…`, `state reset --to
 * position:…`) before anything is stored: its file is on the server, and a transaction starts at
 * `pos` (or the file ends there). Resuming inside a transaction would silently drop its rows.
 */
export async function checkStartPosition(conn: SqlConnection, position: BinlogPosition): Promise<void> {
  await checkPositionReadable(conn, position, 'the requested position');
  const at = formatPosition(position);
  const event = await eventAt(conn, position);
  const fix = `Take a position from \`SHOW BINLOG EVENTS IN '${position.file}'\` (the Pos of a Gtid event, or of the event after an Xid: past 4 GiB End_log_pos is the offset modulo 2^32), or use gtid:/timestamp: instead.`;
  if (event === undefined) {
    throw new SluiceError(
      ErrorCode.POSITION_INVALID,
      `${at} is not the start of an event in ${position.file}${position.pos < 4 ? ' (a binlog file starts at 4)' : ''}; nothing was stored. ${fix}`,
    );
  }
  if (event !== null && !GROUP_STARTS.has(event)) {
    throw new SluiceError(
      ErrorCode.POSITION_INVALID,
      `${at} is inside a transaction (a ${event} event starts there): resuming there would lose the transaction's first rows; nothing was stored. ${fix}`,
    );
  }
}

/**
 * Whether the server holds every transaction a position has read and still has every one after it,
 * by its GTID state alone (Dialect.gtidCoverage): `gtid` is what to reposition by, `missing` says
 * what is not there.
 */
export async function gtidCoverage(conn: SqlConnection, position: BinlogPosition): Promise<GtidCoverage> {
  return (await dialectOf(conn)).gtidCoverage(conn, position);
}

/**
 * POSITION_FOREIGN with its recovery: by GTID when the server's GTID state holds every transaction
 * read and what follows (a promoted replica, a Blue/Green target, a restore that kept its binlogs),
 * else a copy of the tables, naming what the server lacks.
 */
async function foreignError(sql: () => Promise<SqlConnection>, mismatch: Mismatch): Promise<SluiceError> {
  const { position, evidence } = mismatch;
  const snapshot = 'copy the tables again: `sluice state reset --to latest` (the next run resets every table and copies it again)';
  const coverage = await sql()
    .then((conn) => gtidCoverage(conn, position))
    .catch((error: Error) => ({ held: false as const, missing: `its GTID state could not be read (${error.message})` }));
  const recovery = coverage.held
    ? `If this server carries the old one's transactions (a promoted replica, a Blue/Green target, a restore with its binlogs), reposition by GTID: \`sluice state reset --to gtid:${coverage.gtid}\` (this server's GTID state holds every transaction sluice read and what follows). If its binlog was reset or it is another server, ${snapshot}.`
    : `This server cannot be repositioned by GTID: ${coverage.missing}. Recover: ${snapshot}.`;
  return new PositionForeignError(
    `the stored position ${formatPosition(position)} belongs to another binlog history: ${evidence}. The binlog was reset (RESET MASTER, RESET BINARY LOGS AND GTIDS), restored, or this is another server (failover, Blue/Green); nothing was read. ${recovery} (docs/RUNBOOK.md, POSITION_FOREIGN)`,
    evidence,
  );
}

/** MySQL: whether `gtid` can follow a position whose last transaction is `last`: another source's, or a later one of the same. */
function afterLast(gtid: string, last: string | undefined): boolean {
  try {
    if (!last) return false;
    const [seen, own] = [parseGtid(gtid), parseGtid(last)];
    return seen.source !== own.source || seen.gno > own.gno;
  } catch {
    return false;
  }
}

/**
 * What a server's "cannot read the binlog here" error (errno 1236) means, in words: its text can
 * carry raw bytes of the binlog, and for an offset inside an event it blames max_allowed_packet.
 */
export function unreadablePositionReason(message: string): string {
  if (/could not find first log file/i.test(message)) return 'its file is not on the server (purged, or another server)';
  if (/impossible position|greater than|beyond/i.test(message)) return 'the offset lies beyond the end of its file';
  if (/max_allowed_packet|bogus data|truncated in the middle|wrong offset|event entry|checksum/i.test(message))
    return 'the offset is not the start of an event (another binlog history, or a mistyped position)';
  if (/purged|gtid/i.test(message)) return 'the binlog it needs was purged';
  // Anything else: the server's words, without control characters or bytes that are not text.
  const readable = message
    .replace(/[^\x20-\x7e]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
  return `the server says: ${readable}`;
}
