import ZongJi, { type MariadbGtidEvent, type QueryEvent } from '@vlasky/zongji';
import { GtidPosition, GtidSet } from '../../core/gtid-set.ts';
import { type BinlogPosition, formatPosition, LOG_POS_MODULUS } from '../../core/position.ts';
import { AssertionError, ErrorCode, PositionLostError, SluiceError } from '../../errors.ts';
import { profiling, timed } from '../../profile.ts';
import { authRefusal } from './auth.ts';
import { registerDecoders } from './binlog/decoders.ts';
import { type NamedEvent, named, type ReaderEvent } from './binlog/events.ts';
import { type DumpPlan, dumpPlan, EventOffsets, extendDump } from './binlog-dump.ts';
import { isAtomicCreateSelect } from './ddl/atomic-create-select.ts';
import { StreamGuard } from './guards.ts';
import { type BinlogHistories, unreadablePositionReason } from './history.ts';
import type { BinlogItem } from './reader/items.ts';
import { type Packet, RawFields, sqlModeFlags } from './reader/raw-fields.ts';
import { TableShapes } from './reader/table-shapes.ts';
import { connect, type SqlConnection } from './server.ts';
import { connectionOptions, type MysqlTarget, scrub } from './target.ts';

export type { BinlogItem, SqlModeFlags, TableMapStructure } from './reader/items.ts';
export { type GtidCommit, gtidCommit, type QueryStatusVars, queryStatusVars, sqlModeFlags } from './reader/raw-fields.ts';

export interface BinlogReaderOptions {
  target: MysqlTarget;
  start: BinlogPosition;
  /**
   * Tables to decode; events of other tables are skipped before their rows are parsed. Asked once
   * per table and remembered for the stream: its answer must not change while the stream runs.
   */
  filter: (db: string, table: string) => boolean;
  /** Replica id for this connection; two connections with one id make the server kill the first. */
  serverId?: number;
  /** Pause the connection when this many rows wait unconsumed (memory back-pressure). */
  highWaterRows?: number;
  /** Emit an `idle` item after this long without events. */
  idleMs?: number;
  /**
   * A capture run's stream: every event is checked against what decoding assumes (guards.ts) and
   * against the stored position's binlog history, which records each file's. Scans go without.
   */
  capture?: { history: BinlogHistories };
  /** A scan that must read the stored position's binlog history (the check alone, no guards). */
  history?: BinlogHistories;
  /**
   * MySQL: the server's gtid_purged when the stream opened. A file's Previous_gtids leaves out the
   * GTIDs that are in no binlog file because SET gtid_purged put them there (a server built from a
   * dump, restored from a snapshot): they were executed before every file, so a set learned from
   * Previous_gtids takes them in, or the history check would find them purged after the position.
   */
  purged?: string;
}

const ER_SOURCE_FATAL_ERROR_READING_BINLOG = 1236;

/** Whether the server's gtid_mode is ON: false on MariaDB (which has no such variable) and when it cannot be read. */
async function gtidModeOn(sql: () => Promise<SqlConnection>): Promise<boolean> {
  try {
    const [rows] = await (await sql()).query('SELECT @@GLOBAL.gtid_mode AS mode');
    return String((rows as { mode?: unknown }[])[0]?.mode).toUpperCase() === 'ON';
  } catch {
    return false;
  }
}

/** A fresh id per run, away from the small ids real replicas use. */
const randomServerId = () => 100_000 + Math.floor(Math.random() * 2_000_000_000);

/** A set with its text; unknown (undefined) when the server's text does not parse: positions then go without one. */
function knownSet(make: () => GtidSet | undefined): { set: GtidSet; text: string } | undefined {
  try {
    const set = make();
    return set && { set, text: set.toString() };
  } catch {
    return undefined;
  }
}

export class BinlogReader implements AsyncIterable<BinlogItem> {
  private readonly zongji: ZongJi;
  private readonly queue: BinlogItem[] = [];
  private head = 0;
  private queuedRows = 0;
  private peakQueuedRows = 0;
  private pauses = 0;
  private paused = false;
  private wake: (() => void) | undefined;
  private failure: Error | Promise<Error> | undefined;
  /** Per-event checks of the stream's assumptions (lib/source/mysql/guards.ts). */
  private readonly guard: StreamGuard | undefined;
  private stopped = false;
  /** The tables' shapes and decoding, by TABLE_MAP (reader/table-shapes.ts). */
  private readonly shapes = new TableShapes(() => this.sql());
  private schemaConnection: SqlConnection | undefined;
  /**
   * Where the stream has got to: its file, and the true end offset of the last event the server
   * sent, whatever it was (binlog-dump.ts: every packet's header, past 4 GiB too).
   */
  private readonly offsets: EventOffsets;
  /**
   * Set while the dump re-reads the start's file from its beginning to reach the start (a position
   * past 4 GiB a dump cannot start at, binlog-dump.ts): the start's offset, where the stream begins.
   */
  private resumeAt: number | undefined;
  private gtid: string | null;
  /** When `gtid` was written (its GTID event's timestamp), for positions (`BinlogPosition.gtidTime`). */
  private gtidTime: number | undefined;
  /** MySQL: when `gtid` was first committed, in µs (`BinlogPosition.gtidCommitUs`). */
  private gtidCommitUs: number | undefined;
  /**
   * MariaDB: every domain's last transaction at the stream's point, once known (the stored
   * position's, or a file's Gtid_list); the open group's GTID joins it at the group's end.
   */
  private domains: Map<number, string> | undefined;
  /** `domains` as a position's text, made when a boundary needs it after a change (a plain Map and one string: this runs per transaction). */
  private domainsText: string | undefined;
  private pendingDomainGtid: { domain: number; text: string } | undefined;
  /**
   * MariaDB: the domains whose last transaction read lies further on in this binlog (a position
   * moved by GTID to a server that logged the domains in another order): their transactions are
   * moved past without being emitted up to and including that GTID, as a replica skips them.
   */
  private skipTo: GtidPosition = GtidPosition.EMPTY;
  /** A Gtid_list here is the state before the file's first transaction (the stream entered the file at its start). */
  private atFileStart: boolean;
  /**
   * MySQL: the GTID set executed at the stream's point, once known (the stored position's, or a
   * file's Previous_gtids), with its text for positions; the open group's GTID joins it at the
   * group's end.
   */
  private executed: { set: GtidSet; text: string } | undefined;
  private pendingGtid: string | undefined;
  /**
   * MySQL: the open group's GTID is already in `executed` (a gap the start set filled: another
   * source's transactions, commits out of order), so it is moved past without being emitted, as a
   * replica's COM_BINLOG_DUMP_GTID skips what its set holds; its end is a `progress`, with its time.
   */
  private skipping: { tsMs: number } | undefined;
  private inTxn = false;
  /**
   * How the current group ends: `transaction` at its Xid or COMMIT, `standalone` after its one
   * statement (a DDL), `open` until its first event says (a MySQL GTID: BEGIN follows, or a DDL).
   */
  private group: 'open' | 'transaction' | 'standalone' = 'transaction';
  /** The current group is a DDL statement's (MariaDB's GTID flag; a standalone statement or an atomic CREATE TABLE … SELECT on MySQL). */
  private ddlGroup = false;
  /**
   * The current transaction ended inside a compressed transaction (MySQL TRANSACTION_PAYLOAD), whose
   * events carry log_pos 0: its end is the payload event's, which zongji delivers after them.
   */
  private endsWithPayload = false;
  /** What zongji does not keep of the packets (`keepRawFields`). */
  private readonly raw = new RawFields();
  private readonly highWater: number;
  /** When (epoch ms) the consumer wants an `idle` item at the latest if nothing arrives (see wakeWithin). */
  private wakeBy: number | undefined;

  constructor(private readonly options: BinlogReaderOptions) {
    this.offsets = new EventOffsets(options.start.file, options.start.pos);
    this.gtid = options.start.gtid ?? null;
    this.gtidTime = options.start.gtidTime;
    this.gtidCommitUs = options.start.gtidCommitUs;
    if (options.start.gtidSet !== undefined) this.executed = { set: GtidSet.parse(options.start.gtidSet), text: options.start.gtidSet };
    if (options.start.gtidPos) this.setDomains(GtidPosition.parse(options.start.gtidPos));
    if (options.start.gtidSkip) this.skipTo = GtidPosition.parse(options.start.gtidSkip);
    this.atFileStart = options.start.pos <= 4;
    // 5,000 rows: decoding stays ahead of the consumer, and every scavenge copies fewer waiting rows
    // (20,000 took a 320k-row capture's peak RSS from ~180 to ~235 MB, docs/PERFORMANCE.md).
    this.highWater = options.highWaterRows ?? 5_000;
    const history = options.capture?.history ?? options.history;
    this.guard =
      history && new StreamGuard(options.start, { history: { check: history, sql: () => this.sql() }, accept: options.filter, historyOnly: !options.capture });
    // dateStrings + timezone 'Z': temporal values arrive as MySQL text, TIMESTAMP rendered in UTC,
    // independent of the process time zone. Big numbers arrive as exact strings. jsonStrings: MySQL's
    // binary JSON arrives as text, as the snapshot reads it (MariaDB's JSON is text anyway).
    this.zongji = new ZongJi({
      ...connectionOptions(options.target),
      dateStrings: true,
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
      jsonStrings: true,
    });
    // zongji's per-table filter takes exact names; ours are regexes. sluice's TABLE_MAP parser asks
    // it at each TABLE_MAP, so rows of filtered tables are never decoded.
    // Remembered per table: it is asked at every TABLE_MAP, and a single-row transaction has one.
    const accepted = new Map<string, Map<string, boolean>>();
    const skipTable = (db: string, table: string) => {
      // Re-reading up to the start: nothing before it is decoded.
      if (this.resumeAt !== undefined) return true;
      let tables = accepted.get(db);
      if (!tables) {
        tables = new Map();
        accepted.set(db, tables);
      }
      let accept = tables.get(table);
      if (accept === undefined) {
        accept = options.filter(db, table);
        tables.set(table, accept);
      }
      return !accept;
    };
    // sluice decodes what zongji's own classes do not (binlog/decoders.ts).
    registerDecoders(this.zongji, { skipTable });
    // sluice's own classes decode some events (binlog/decoders.ts): ReaderEvent, not zongji's declared union.
    this.zongji.on('binlog', (ev) => this.onEvent(ev as unknown as ReaderEvent));
    this.zongji.on('error', (error: Error & { errno?: number }) => this.fail(error));
    const serverId = options.serverId ?? randomServerId();
    // Past 4 GiB a dump starts by GTID when the server can (binlog-dump.ts): its gtid_mode decides.
    const start = options.start;
    const byGtid = start.pos >= LOG_POS_MODULUS && start.gtidSet !== undefined;
    if (!byGtid) this.startDump(dumpPlan(start, false), serverId);
    else
      void gtidModeOn(() => this.sql())
        .then((on) => this.startDump(dumpPlan(start, on), serverId))
        .catch((error: Error) => this.fail(error));
  }

  private startDump(plan: DumpPlan, serverId: number): void {
    if (this.stopped) return;
    this.resumeAt = plan.kind === 'reread' ? plan.resumeAt : undefined;
    this.offsets.rotate(plan.file, plan.pos);
    this.zongji.once('ready', () => {
      extendDump(this.zongji, plan, serverId, this.offsets);
      // SLUICE_PROFILE=1: time parsing binlog packets (mysql2 + zongji) as decoding.
      if (profiling) this.profileDecoding();
    });
    this.zongji.start({ serverId, filename: plan.file, position: plan.pos });
    this.keepRawFields();
  }

  /**
   * Reads what zongji does not keep from each packet before it decodes it: a Query event's status
   * variables (zongji decodes them as UTF-8, `sqlModeFlags`), a MySQL GTID event's original
   * commit time (zongji skips it). The dump connection hands each packet to zongji synchronously,
   * and again when it replays the packets it queued while paused, so the last one read is the
   * event's being delivered; `statusVarsOf` and `commitUsOf` still check that by its log_pos.
   */
  private keepRawFields(): void {
    const connection = this.zongji.connection as unknown as { handlePacket: (packet: Packet | null) => void } | null;
    if (!connection) return;
    const handle = connection.handlePacket.bind(connection);
    connection.handlePacket = (packet) => {
      if (packet) this.raw.see(packet);
      handle(packet);
    };
  }

  /** The binlog file the stream is in. */
  private get file(): string {
    return this.offsets.file;
  }

  private profileDecoding(): void {
    const connection = this.zongji.connection as unknown as { handlePacket: (packet: unknown) => void };
    connection.handlePacket = timed('decode', connection.handlePacket.bind(connection));
  }

  private push(item: BinlogItem, rows = 0): void {
    this.queue.push(item);
    this.queuedRows += rows;
    if (this.queuedRows > this.peakQueuedRows) this.peakQueuedRows = this.queuedRows;
    if (!this.paused && this.queuedRows >= this.highWater) {
      this.paused = true;
      this.pauses++;
      this.zongji.connection?.pause();
    }
    // Once: the other events of this socket read find the waiting iterator already woken.
    const wake = this.wake;
    if (wake) {
      this.wake = undefined;
      wake();
    }
  }

  private fail(error: Error & { errno?: number }): void {
    if (this.stopped || this.failure) return; // the first failure is the cause; what follows is its echo
    this.failure =
      error.errno === ER_SOURCE_FATAL_ERROR_READING_BINLOG
        ? new PositionLostError(
            `the binlog position ${this.file}:${this.options.start.pos} cannot be read from the server: ${unreadablePositionReason(error.message)}. ` +
              'Nothing was skipped. Re-snapshot the source or reset its position (see docs/RUNBOOK.md), and raise binlog retention.',
          )
        : (authRefusal(error) ??
          new SluiceError(ErrorCode.BINLOG_STREAM, `binlog stream failed: ${scrub(error.message, this.options.target.uri)}`, {
            cause: error,
            retriable: true,
          }));
    this.wake?.();
  }

  /** A connection for the lookups binlog decoding needs, opened on first use. */
  private async sql(): Promise<SqlConnection> {
    this.schemaConnection ??= await connect(this.options.target);
    return this.schemaConnection;
  }

  /** The ended (or superseded) group's GTID joins the executed set (MySQL), or becomes its domain's last (MariaDB). */
  private foldGtid(): void {
    const domainGtid = this.pendingDomainGtid;
    if (domainGtid) {
      this.pendingDomainGtid = undefined;
      if (this.domains && this.domains.get(domainGtid.domain) !== domainGtid.text) {
        this.domains.set(domainGtid.domain, domainGtid.text);
        this.domainsText = undefined;
      }
    }
    if (this.pendingGtid === undefined) return;
    if (this.executed) this.executed = knownSet(() => this.executed?.set.add(this.pendingGtid as string));
    this.pendingGtid = undefined;
  }

  private setDomains(position: GtidPosition): void {
    this.domains = new Map(position.gtids().map((g) => [g.domain, g.text]));
    this.domainsText = undefined;
  }

  /** Every domain's last GTID as a position's text (by domain), when known. */
  private gtidPos(): string | undefined {
    const domains = this.domains;
    if (!domains?.size) return undefined;
    this.domainsText ??=
      domains.size === 1
        ? (domains.values().next().value as string)
        : [...domains]
            .sort(([a], [b]) => a - b)
            .map(([, text]) => text)
            .join(',');
    return this.domainsText;
  }

  /** A transaction boundary at `pos`; a commit without one is inside a compressed transaction, which ends with its payload event. */
  private boundary(kind: 'commit' | 'progress', pos: number | undefined, tsMs = 0): void {
    if (pos === undefined) {
      if (kind === 'commit') this.endsWithPayload = true;
      return;
    }
    this.inTxn = false;
    this.endsWithPayload = false;
    this.foldGtid();
    const skipped = this.skipping;
    this.skipping = undefined;
    const position: BinlogPosition = {
      file: this.file,
      pos,
      gtid: this.gtid ?? undefined,
      ...(this.gtid && this.gtidTime !== undefined ? { gtidTime: this.gtidTime } : {}),
      ...(this.gtid && this.gtidCommitUs !== undefined ? { gtidCommitUs: this.gtidCommitUs } : {}),
      ...(this.executed?.text ? { gtidSet: this.executed.text } : {}),
      ...(this.domains?.size ? { gtidPos: this.gtidPos() } : {}),
      ...(this.skipTo.isEmpty ? {} : { gtidSkip: this.skipTo.toString() }),
    };
    if (skipped) this.push({ kind: 'progress', position, tsMs: skipped.tsMs });
    else this.push(kind === 'progress' ? { kind, position, tsMs } : { kind, position });
  }

  /** Whether a MySQL GTID is in the set executed at the stream's point (false while that set is unknown). */
  private holds(gtid: unknown): boolean {
    if (typeof gtid !== 'string' || !this.executed) return false;
    try {
      return this.executed.set.contains(gtid);
    } catch {
      return false;
    }
  }

  private begin(
    ev: { readonly timestamp: number; readonly nextPosition: number },
    end: number | undefined,
    gtid: string | null,
    serverId: number | null,
    group: BinlogReader['group'],
    ddl: boolean,
  ): void {
    this.inTxn = true;
    this.group = group;
    this.ddlGroup = ddl;
    this.skipping = undefined;
    this.atFileStart = false;
    const commitUs = this.raw.commitUsOf(ev);
    if (gtid) {
      this.gtid = gtid;
      this.gtidTime = ev.timestamp;
      this.gtidCommitUs = commitUs;
    }
    this.push({
      kind: 'begin',
      file: this.file,
      pos: end ?? this.offsets.pos,
      gtid,
      serverId,
      tsMs: ev.timestamp,
      ...(commitUs === undefined ? {} : { commitUs }),
    });
  }

  /**
   * A MariaDB group starts. A domain still to be skipped (`skipTo`) has its transactions moved past
   * up to and including the GTID read before; its end is a `progress`. The group's GTID becomes
   * its domain's last at the group's end.
   */
  private onMariadbGtid(ev: MariadbGtidEvent, end: number | undefined): void {
    this.foldGtid();
    const text = String(ev.gtid);
    const domain = Number(ev.domainId);
    const until = this.skipTo.isEmpty ? undefined : this.skipTo.get(domain);
    if (until) {
      if (until.text === text) this.skipTo = this.skipTo.without(domain);
      this.inTxn = true;
      this.group = ev.standalone ? 'standalone' : 'transaction';
      this.ddlGroup = false;
      this.gtid = text;
      this.gtidTime = ev.timestamp;
      this.gtidCommitUs = undefined;
      this.atFileStart = false;
      this.skipping = { tsMs: ev.timestamp };
      return;
    }
    this.begin(ev, end, text, ev.serverId ?? null, ev.standalone ? 'standalone' : 'transaction', ev.isDdl === true);
    this.pendingDomainGtid = { domain, text };
  }

  /** A Query event: transaction control, or a statement (DDL, or DML logged as text) for the consumer to judge. */
  private onQuery(ev: QueryEvent, end: number | undefined): void {
    const query = String(ev.query).trim();
    const upper = query.slice(0, 16).toUpperCase();
    if (upper === 'BEGIN' || upper.startsWith('XA START')) {
      if (!this.inTxn) this.begin(ev, end, null, null, 'transaction', false);
      else if (this.group === 'open') this.group = 'transaction';
      return;
    }
    if (upper === 'COMMIT' || upper === 'ROLLBACK') {
      this.boundary('commit', end);
      return;
    }
    if (upper.startsWith('SAVEPOINT') || upper.startsWith('XA END')) return;
    if (this.skipping) {
      // A held DDL (MySQL: its own group) ends with its statement, which is not emitted.
      if (this.group === 'open') this.group = 'standalone';
      if (this.group === 'standalone') this.boundary('commit', end);
      return;
    }
    // A statement outside any group (no GTID events, old servers) stands alone.
    if (!this.inTxn) this.begin(ev, end, null, null, 'standalone', true);
    if (this.group === 'open') {
      this.group = 'standalone';
      this.ddlGroup = true;
    }
    // MySQL's atomic CREATE TABLE … SELECT: BEGIN, this DDL, its rows, COMMIT (MariaDB flags the group in its GTID).
    if (!this.ddlGroup && isAtomicCreateSelect(query)) this.ddlGroup = true;
    this.push({
      kind: 'query',
      ddl: this.ddlGroup,
      db: ev.schema ?? '',
      query,
      sqlMode: sqlModeFlags(this.raw.statusVarsOf(ev)),
      position: { file: this.file, pos: end ?? this.offsets.pos },
      tsMs: ev.timestamp,
    });
    if (this.group === 'standalone') this.boundary('commit', end);
  }

  private onEvent(ev: ReaderEvent): void {
    const type = ev.getTypeName();
    const event = named(ev, type);
    // The event's true end offset; undefined for one without its own (binlog-dump.ts `endOf`).
    let end = this.offsets.endOf(type);
    // Its log_pos may be 4 bytes of an offset past 4 GiB: the 8-byte sub-header (MariaDB) or the offset reached, unwrapped.
    if (event.type === 'Heartbeat')
      end = this.offsets.heartbeat(event.ev.binlogName, event.ev.nextPosition, typeof event.ev.position === 'number' ? event.ev.position : undefined);
    if (this.offsets.inconsistency && !this.failure) {
      this.failure = new AssertionError(`the binlog stream of ${this.file} contradicts itself: ${this.offsets.inconsistency}`);
      this.wake?.();
    }
    if (this.resumeAt !== undefined) {
      this.reread(ev, event, end);
      return;
    }
    const verdict = this.failure ? 'drop' : this.guard?.check(ev, type, this.file, end);
    if (event.type === 'Rotate') this.offsets.rotate(event.ev.binlogName, Number(event.ev.position));
    if (verdict === 'drop') return;
    if (verdict) {
      this.failure = verdict;
      this.wake?.();
      return;
    }
    switch (event.type) {
      case 'MariadbGtid':
        this.onMariadbGtid(event.ev, end);
        return;
      case 'MariadbGtidList':
        // A file read from its start: the state before it, exact from here on. The domains still
        // skipped keep the GTID read on the other server, which this one logs further on.
        if (this.atFileStart) {
          let position = GtidPosition.ofState((event.ev.gtids ?? []).map((g) => g.gtid));
          for (const gtid of this.skipTo.gtids()) position = position.with(gtid);
          this.setDomains(position);
        }
        if (!this.inTxn) this.boundary('progress', end, ev.timestamp);
        return;
      case 'Gtid':
        // A group that ended without a commit this reader sees (XA PREPARE, a compressed payload) was still executed.
        this.foldGtid();
        this.skipping = undefined;
        if (this.holds(event.ev.gtid)) {
          this.inTxn = true;
          this.group = 'open';
          this.gtid = String(event.ev.gtid);
          this.gtidTime = ev.timestamp;
          this.gtidCommitUs = this.raw.commitUsOf(event.ev);
          this.skipping = { tsMs: ev.timestamp };
          return;
        }
        this.begin(event.ev, end, typeof event.ev.gtid === 'string' ? event.ev.gtid : String(event.ev.gtid ?? ''), null, 'open', false);
        this.pendingGtid = this.gtid ?? undefined;
        return;
      case 'PreviousGtids': {
        // A file read from its start: the set executed before it is exact from here on. United with
        // the set known so far: a start set's gap-filled transactions after it stay held.
        // With the server's gtid_purged, which the event leaves out when SET gtid_purged put it there.
        const text = String(event.ev.gtidSet ?? '');
        this.executed = knownSet(() =>
          GtidSet.parse(text)
            .union(this.executed?.set ?? GtidSet.EMPTY)
            .union(GtidSet.parse(this.options.purged ?? '')),
        );
        if (!this.inTxn) this.boundary('progress', end, ev.timestamp);
        return;
      }
      case 'AnonymousGtid':
        this.begin(event.ev, end, null, null, 'open', false);
        return;
      case 'TableMap':
        this.shapes.onTableMap(event.ev);
        return;
      case 'WriteRows':
      case 'UpdateRows':
      case 'DeleteRows':
        if (this.skipping) return;
        this.push(this.shapes.rows(event, end ?? this.offsets.pos), event.ev.rows.length);
        return;
      case 'Xid':
        this.boundary('commit', end);
        return;
      case 'TransactionPayload':
        // After its events (zongji delivers them first): the only resumable point of the transaction.
        if (this.endsWithPayload) this.boundary('commit', end);
        else if (!this.inTxn) this.boundary('progress', end, ev.timestamp);
        return;
      case 'Query':
        this.onQuery(event.ev, end);
        return;
      case 'Rotate':
        // The new file starts at ev.position (taken above); the rotate's own end belongs to the old
        // file. No progress here: the new file's Format_description follows, and a position in a file
        // is exposed only once its creation time (its history, see history.ts) is known.
        this.atFileStart = Number(event.ev.position) <= 4;
        return;
      case 'Heartbeat':
        // Its position is in the file its body names: one in another file than the stream's (a
        // server still naming the file before a ROTATE it sent) has none here.
        if (!this.inTxn) this.boundary('progress', end, ev.timestamp);
        return;
      default:
        if (!this.inTxn) this.boundary('progress', end, ev.timestamp);
    }
  }

  /**
   * Re-reading the start's file from its beginning up to the start, a position past 4 GiB a dump
   * cannot start at (binlog-dump.ts). Nothing before it is emitted or checked, but the file's
   * creation time (its FORMAT_DESCRIPTION, which history.ts compares with the stored one); the
   * stream begins after the event that ends exactly at the start. None does, or the file ends
   * first: the position is not an event boundary of this file, so it belongs to another history.
   */
  private reread(ev: ReaderEvent, event: NamedEvent, end: number | undefined): void {
    const start = this.options.start;
    if (this.failure) return;
    const foreign = (evidence: string) =>
      new SluiceError(
        ErrorCode.POSITION_FOREIGN,
        `the stored position ${formatPosition(start)} belongs to another binlog history: ${evidence}. Nothing was read. Re-snapshot: \`sluice state reset --to latest\`, then \`sluice snapshot --all\` (docs/RUNBOOK.md, POSITION_FOREIGN)`,
      );
    if (event.type === 'Format') {
      const verdict = this.guard?.check(ev, event.type, this.file, undefined);
      if (verdict && verdict !== 'drop') this.failure = verdict;
    } else if (event.type === 'Rotate') {
      this.offsets.rotate(event.ev.binlogName, Number(event.ev.position));
      if (event.ev.binlogName !== start.file) this.failure = foreign(`this server's ${start.file} ends before offset ${start.pos}`);
    } else if (end !== undefined && end >= start.pos) {
      if (end === start.pos) this.resumeAt = undefined;
      else this.failure = foreign(`no event of this server's ${start.file} ends at offset ${start.pos} (one ends at ${end})`);
    }
    if (this.failure) this.wake?.();
  }

  /** Takes the first queued item; resumes the connection once few rows wait. */
  private shift(): BinlogItem {
    const item = this.queue[this.head] as BinlogItem;
    this.queue[this.head++] = undefined as unknown as BinlogItem;
    if (this.head > 4096) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    if (item.kind === 'rows') this.queuedRows -= item.rows.length;
    if (this.paused && this.queuedRows < this.highWater / 4) {
      this.paused = false;
      this.zongji.connection?.resume();
    }
    return item;
  }

  /**
   * The next item, if it is ready to be handed over without waiting (decoded, and nothing to look
   * up for it on the server); else undefined, and the async iterator takes it or waits. A consumer
   * takes what one socket read delivered in one synchronous pass this way, where the iterator costs
   * a few promises per item (a single-row transaction is three items). The order is the iterator's.
   */
  takeReady(): BinlogItem | undefined {
    if (this.failure || this.head >= this.queue.length) return undefined;
    const item = this.queue[this.head] as BinlogItem;
    if (item.kind === 'rows' && !this.shapes.ready(item)) return undefined;
    return this.shift();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<BinlogItem> {
    while (true) {
      if (this.failure) throw await this.failure;
      if (this.head < this.queue.length) {
        const item = this.shift();
        if (item.kind === 'rows' && !this.shapes.ready(item)) await this.shapes.prepare(item);
        yield item;
        continue;
      }
      if (this.stopped) return;
      let timer: NodeJS.Timeout | undefined;
      const idleMs = Math.min(this.options.idleMs ?? 1000, this.wakeBy === undefined ? Number.POSITIVE_INFINITY : Math.max(0, this.wakeBy - Date.now()));
      const idle = await new Promise<boolean>((resolve) => {
        this.wake = () => resolve(false);
        timer = setTimeout(() => resolve(true), idleMs);
      });
      clearTimeout(timer);
      this.wake = undefined;
      if (idle) {
        this.wakeBy = undefined;
        yield { kind: 'idle' };
      }
    }
  }

  /**
   * Memory back-pressure as it happened: rows decoded and not yet read (now, and the most at any
   * time), and how often the connection was paused because they reached `highWaterRows`.
   */
  get backPressure(): { readonly queuedRows: number; readonly peakQueuedRows: number; readonly pauses: number } {
    return { queuedRows: this.queuedRows, peakQueuedRows: this.peakQueuedRows, pauses: this.pauses };
  }

  /** TABLE_MAP events found byte-identical to their table id's previous one, so not mapped again. */
  get reusedTableMaps(): number {
    return this.shapes.reused;
  }

  /**
   * How far the server's stream has got, past any event (filtered or not, inside a group or not):
   * a scan up to a known end is through once this reaches it, though no commit or progress item
   * lands on it exactly (a group left open at the end: XA PREPARE, a compressed transaction).
   */
  get streamPosition(): BinlogPosition {
    return { file: this.file, pos: this.offsets.pos };
  }

  /**
   * While the dump re-reads the start's file to reach the start (a position past 4 GiB, see
   * binlog-dump.ts): where it has got to and where it goes. A run that ends before the start was
   * reached made no progress.
   */
  get rereading(): { readonly at: BinlogPosition; readonly to: BinlogPosition } | undefined {
    return this.resumeAt === undefined ? undefined : { at: this.streamPosition, to: this.options.start };
  }

  /** True when nothing decoded waits to be read: the consumer has everything the server sent so far. */
  get drained(): boolean {
    return this.head >= this.queue.length;
  }

  /**
   * Asks for an `idle` item within `ms` if nothing arrives before (once; a shorter idle interval
   * than `idleMs`): a consumer waiting for its batch to come of age acts on time in a quiet stream.
   */
  wakeWithin(ms: number): void {
    const at = Date.now() + ms;
    this.wakeBy = this.wakeBy === undefined ? at : Math.min(this.wakeBy, at);
  }

  /** Ends the stream; takes milliseconds. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // zongji emits `stopped` within its own 1 s KILL timeout; the 2 s bound only guards against a
    // release that does not. Cleared either way: a pending timer keeps the process alive.
    let timer: NodeJS.Timeout | undefined;
    const stopped = new Promise<void>((resolve) => this.zongji.once('stopped', () => resolve()));
    this.zongji.stop();
    await Promise.race([stopped, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    // A helper connection; an error closing it changes nothing.
    await this.schemaConnection?.end().catch(() => undefined);
    this.wake?.();
  }
}
