import type { GtidEvent, MariadbGtidEvent, MariadbGtidListEvent, PreviousGtidsEvent, QueryEvent } from '@vlasky/zongji';
import type { BinlogPosition } from '../../../core/position.ts';
import type { EventOffsets } from '../binlog-dump.ts';
import { isAtomicCreateSelect } from '../ddl/atomic-create-select.ts';
import { ExecutedGtids } from './executed-gtids.ts';
import type { ItemQueue } from './item-queue.ts';
import { type RawFields, sqlModeFlags } from './raw-fields.ts';

/*
 * The stream's current event group (a transaction, or a DDL statement standing alone) and the
 * items that mark it: `begin` at its start, `commit` at its end, `progress` between groups. A
 * position is made only at a group's end, with the GTIDs executed up to it (executed-gtids.ts):
 * resuming inside a group would silently drop its rows. Groups the stored position already holds
 * (a MySQL GTID in its set, a MariaDB domain still skipped) are moved past without items but their
 * end's `progress`.
 */

/** A GTID, AnonymousGtid or Query event, which may open a group. */
type Opener = { readonly timestamp: number; readonly nextPosition: number };

export class TransactionContext {
  private gtid: string | null;
  /** When `gtid` was written (its GTID event's timestamp), for positions (`BinlogPosition.gtidTime`). */
  private gtidTime: number | undefined;
  /** MySQL: when `gtid` was first committed, in µs (`BinlogPosition.gtidCommitUs`). */
  private gtidCommitUs: number | undefined;
  private readonly gtids: ExecutedGtids;
  /** A Gtid_list here is the state before the file's first transaction (the stream entered the file at its start). */
  private atFileStart: boolean;
  /**
   * The open group's GTID is already executed at the stream's point (MySQL: a gap the start set
   * filled, another source's transactions, commits out of order; MariaDB: a domain still skipped),
   * so it is moved past without being emitted, as a replica's dump skips what its set holds; its
   * end is a `progress`, with its time.
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
   * events carry log_pos 0: its end is the payload event's, delivered after them.
   */
  private endsWithPayload = false;

  constructor(
    start: BinlogPosition,
    private readonly stream: {
      /** Where the stream has got to (its file, the last event's end). */
      readonly offsets: EventOffsets;
      readonly queue: ItemQueue;
      /** The GTID events' commit times and the Query events' status variables, as the server sent them. */
      readonly raw: RawFields;
      /** The server's gtid_purged when the stream opened (MySQL). */
      readonly purged?: string;
    },
  ) {
    this.gtid = start.gtid ?? null;
    this.gtidTime = start.gtidTime;
    this.gtidCommitUs = start.gtidCommitUs;
    this.gtids = new ExecutedGtids(start, stream.purged);
    this.atFileStart = start.pos <= 4;
  }

  /** The open group's rows are moved past, not emitted. */
  get skipsRows(): boolean {
    return this.skipping !== undefined;
  }

  /**
   * A MariaDB group starts. A domain still to be skipped has its transactions moved past up to and
   * including the GTID read before; its end is a `progress`. The group's GTID becomes its domain's
   * last at the group's end.
   */
  onMariadbGtid(ev: MariadbGtidEvent, end: number | undefined): void {
    this.gtids.fold();
    const text = String(ev.gtid);
    const domain = Number(ev.domainId);
    if (this.gtids.skips(domain, text)) {
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
    this.gtids.openedInDomain(domain, text);
  }

  /** A MariaDB Gtid_list: at a file's start, the state before it. */
  onGtidList(ev: MariadbGtidListEvent, end: number | undefined): void {
    if (this.atFileStart) this.gtids.stateBeforeFile((ev.gtids ?? []).map((g) => g.gtid));
    this.between(end, ev.timestamp);
  }

  /** A MySQL group starts; one the executed set holds is moved past. */
  onGtid(ev: GtidEvent, end: number | undefined): void {
    // A group that ended without a commit this reader sees (XA PREPARE, a compressed payload) was still executed.
    this.gtids.fold();
    this.skipping = undefined;
    if (this.gtids.holds(ev.gtid)) {
      this.inTxn = true;
      this.group = 'open';
      this.gtid = String(ev.gtid);
      this.gtidTime = ev.timestamp;
      this.gtidCommitUs = this.stream.raw.commitUsOf(ev);
      this.skipping = { tsMs: ev.timestamp };
      return;
    }
    this.begin(ev, end, typeof ev.gtid === 'string' ? ev.gtid : String(ev.gtid ?? ''), null, 'open', false);
    this.gtids.opened(this.gtid ?? undefined);
  }

  /** A MySQL group without a GTID starts. */
  onAnonymousGtid(ev: Opener, end: number | undefined): void {
    this.begin(ev, end, null, null, 'open', false);
  }

  /** A MySQL Previous_gtids: at a file's start, the set executed before it. */
  onPreviousGtids(ev: PreviousGtidsEvent, end: number | undefined): void {
    this.gtids.executedBeforeFile(String(ev.gtidSet ?? ''));
    this.between(end, ev.timestamp);
  }

  /** A Query event: transaction control, or a statement (DDL, or DML logged as text) for the consumer to judge. */
  onQuery(ev: QueryEvent, end: number | undefined): void {
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
    this.stream.queue.push({
      kind: 'query',
      ddl: this.ddlGroup,
      db: ev.schema ?? '',
      query,
      sqlMode: sqlModeFlags(this.stream.raw.statusVarsOf(ev)),
      position: { file: this.stream.offsets.file, pos: end ?? this.stream.offsets.pos },
      tsMs: ev.timestamp,
    });
    if (this.group === 'standalone') this.boundary('commit', end);
  }

  /** An Xid: the transaction commits. */
  onXid(end: number | undefined): void {
    this.boundary('commit', end);
  }

  /** A TRANSACTION_PAYLOAD, after its events (delivered first, binlog/transaction-payload.ts): the only resumable point of the transaction. */
  onPayload(end: number | undefined, tsMs: number): void {
    if (this.endsWithPayload) this.boundary('commit', end);
    else this.between(end, tsMs);
  }

  /**
   * A ROTATE to `position` in the next file. No progress here: the new file's
   * Format_description follows, and a position in a file is exposed only once its creation time
   * (its history, see history.ts) is known.
   */
  onRotate(position: number): void {
    this.atFileStart = position <= 4;
  }

  /** Any other event: between groups, the position moved. */
  between(end: number | undefined, tsMs: number): void {
    if (!this.inTxn) this.boundary('progress', end, tsMs);
  }

  private begin(ev: Opener, end: number | undefined, gtid: string | null, serverId: number | null, group: TransactionContext['group'], ddl: boolean): void {
    this.inTxn = true;
    this.group = group;
    this.ddlGroup = ddl;
    this.skipping = undefined;
    this.atFileStart = false;
    const commitUs = this.stream.raw.commitUsOf(ev);
    if (gtid) {
      this.gtid = gtid;
      this.gtidTime = ev.timestamp;
      this.gtidCommitUs = commitUs;
    }
    this.stream.queue.push({
      kind: 'begin',
      file: this.stream.offsets.file,
      pos: end ?? this.stream.offsets.pos,
      gtid,
      serverId,
      tsMs: ev.timestamp,
      ...(commitUs === undefined ? {} : { commitUs }),
    });
  }

  /** A transaction boundary at `pos`; a commit without one is inside a compressed transaction, which ends with its payload event. */
  private boundary(kind: 'commit' | 'progress', pos: number | undefined, tsMs = 0): void {
    if (pos === undefined) {
      if (kind === 'commit') this.endsWithPayload = true;
      return;
    }
    this.inTxn = false;
    this.endsWithPayload = false;
    this.gtids.fold();
    const skipped = this.skipping;
    this.skipping = undefined;
    const position: BinlogPosition = {
      file: this.stream.offsets.file,
      pos,
      gtid: this.gtid ?? undefined,
      ...(this.gtid && this.gtidTime !== undefined ? { gtidTime: this.gtidTime } : {}),
      ...(this.gtid && this.gtidCommitUs !== undefined ? { gtidCommitUs: this.gtidCommitUs } : {}),
      ...this.gtids.fields(),
    };
    const queue = this.stream.queue;
    if (skipped) queue.push({ kind: 'progress', position, tsMs: skipped.tsMs });
    else queue.push(kind === 'progress' ? { kind, position, tsMs } : { kind, position });
  }
}
