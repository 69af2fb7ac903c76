import { type BinlogPosition, formatPosition } from '../../core/position.ts';
import { AssertionError, ErrorCode, SluiceError } from '../../errors.ts';
import { type NamedEvent, named, type ReaderEvent } from './binlog/events.ts';
import { EventOffsets } from './binlog-dump.ts';
import { StreamGuard } from './guards.ts';
import type { BinlogHistories } from './history.ts';
import { BinlogStream } from './reader/binlog-stream.ts';
import { ItemQueue } from './reader/item-queue.ts';
import type { BinlogItem } from './reader/items.ts';
import { RawFields } from './reader/raw-fields.ts';
import { TableShapes } from './reader/table-shapes.ts';
import { TransactionContext } from './reader/transaction-context.ts';
import type { MysqlTarget } from './target.ts';

export type { BinlogItem, SqlModeFlags, TableMapStructure } from './reader/items.ts';
export { type GtidCommit, gtidCommit, type QueryStatusVars, queryStatusVars, sqlModeFlags } from './reader/raw-fields.ts';

/*
 * A MySQL or MariaDB binlog stream as an async iterable of items (reader/items.ts), strictly in
 * binlog order, in four parts: the stream's wiring (reader/binlog-stream.ts: zongji, sluice's
 * decoders, the dump's start, errors), the transaction context (reader/transaction-context.ts: the
 * current group, its GTIDs and the positions made at its end), the table-shape builder
 * (reader/table-shapes.ts: each table's shape and decoding at its TABLE_MAP) and the item queue
 * between the connection and the consumer (reader/item-queue.ts: back-pressure, wake-ups, the
 * failure). Here, each event is checked (guards.ts) and handed to the part its kind concerns.
 */

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

export class BinlogReader implements AsyncIterable<BinlogItem> {
  /**
   * Where the stream has got to: its file, and the true end offset of the last event the server
   * sent, whatever it was (binlog-dump.ts: every packet's header, past 4 GiB too).
   */
  private readonly offsets: EventOffsets;
  private readonly stream: BinlogStream;
  private readonly queue: ItemQueue;
  private readonly transaction: TransactionContext;
  /** The tables' shapes and decoding, by TABLE_MAP. */
  private readonly shapes: TableShapes;
  /** Per-event checks of the stream's assumptions (lib/source/mysql/guards.ts). */
  private readonly guard: StreamGuard | undefined;

  constructor(private readonly options: BinlogReaderOptions) {
    const start = options.start;
    const offsets = new EventOffsets(start.file, start.pos);
    this.offsets = offsets;
    const sql = () => this.stream.sql();
    // 5,000 rows: decoding stays ahead of the consumer, and every scavenge copies fewer waiting rows
    // (20,000 took a 320k-row capture's peak RSS from ~180 to ~235 MB, docs/PERFORMANCE.md).
    this.queue = new ItemQueue(options.highWaterRows ?? 5_000, { pause: () => this.stream.pause(), resume: () => this.stream.resume() });
    const raw = new RawFields();
    this.transaction = new TransactionContext(start, { offsets, queue: this.queue, raw, purged: options.purged });
    this.shapes = new TableShapes(sql);
    const history = options.capture?.history ?? options.history;
    this.guard = history && new StreamGuard(start, { history: { check: history, sql }, accept: options.filter, historyOnly: !options.capture });
    this.stream = new BinlogStream({
      target: options.target,
      start,
      filter: options.filter,
      serverId: options.serverId,
      offsets,
      raw,
      onEvent: (ev) => this.onEvent(ev),
      onFailure: (error) => this.queue.fail(error),
    });
  }

  /** Each event zongji delivers: checked, then handed to the part its kind concerns. */
  private onEvent(ev: ReaderEvent): void {
    const type = ev.getTypeName();
    const event = named(ev, type);
    // The event's true end offset; undefined for one without its own (binlog-dump.ts `endOf`).
    let end = this.offsets.endOf();
    // Its log_pos may be 4 bytes of an offset past 4 GiB: the 8-byte sub-header (MariaDB) or the offset reached, unwrapped.
    if (event.type === 'Heartbeat')
      end = this.offsets.heartbeat(event.ev.binlogName, event.ev.nextPosition, typeof event.ev.position === 'number' ? event.ev.position : undefined);
    if (this.offsets.inconsistency && !this.queue.failure)
      this.queue.fail(new AssertionError(`the binlog stream of ${this.offsets.file} contradicts itself: ${this.offsets.inconsistency}`));
    if (this.stream.resumeAt !== undefined) {
      this.reread(ev, event, end);
      return;
    }
    const verdict = this.queue.failure ? 'drop' : this.guard?.check(ev, type, this.offsets.file, end);
    if (event.type === 'Rotate') this.offsets.rotate(event.ev.binlogName, Number(event.ev.position));
    if (verdict === 'drop') return;
    if (verdict) {
      this.queue.fail(verdict);
      return;
    }
    this.dispatch(event, end);
  }

  private dispatch(event: NamedEvent, end: number | undefined): void {
    const transaction = this.transaction;
    switch (event.type) {
      case 'MariadbGtid':
        transaction.onMariadbGtid(event.ev, end);
        return;
      case 'MariadbGtidList':
        transaction.onGtidList(event.ev, end);
        return;
      case 'Gtid':
        transaction.onGtid(event.ev, end);
        return;
      case 'PreviousGtids':
        transaction.onPreviousGtids(event.ev, end);
        return;
      case 'AnonymousGtid':
        transaction.onAnonymousGtid(event.ev, end);
        return;
      case 'TableMap':
        this.shapes.onTableMap(event.ev);
        return;
      case 'WriteRows':
      case 'UpdateRows':
      case 'DeleteRows':
        if (transaction.skipsRows) return;
        this.queue.push(this.shapes.rows(event, end ?? this.offsets.pos), event.ev.rows.length);
        return;
      case 'Xid':
        transaction.onXid(end);
        return;
      case 'TransactionPayload':
        transaction.onPayload(end, event.ev.timestamp);
        return;
      case 'Query':
        transaction.onQuery(event.ev, end);
        return;
      case 'Rotate':
        // The new file starts at ev.position (taken in onEvent); the rotate's own end belongs to the old file.
        transaction.onRotate(Number(event.ev.position));
        return;
      default:
        // A heartbeat's position is in the file its body names: one in another file than the
        // stream's (a server still naming the file before a ROTATE it sent) has none here.
        transaction.between(end, event.ev.timestamp);
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
    if (this.queue.failure) return;
    const foreign = (evidence: string) =>
      new SluiceError(
        ErrorCode.POSITION_FOREIGN,
        `the stored position ${formatPosition(start)} belongs to another binlog history: ${evidence}. Nothing was read. Re-snapshot: \`sluice state reset --to latest\`, then \`sluice snapshot --all\` (docs/RUNBOOK.md, POSITION_FOREIGN)`,
      );
    if (event.type === 'Format') {
      const verdict = this.guard?.check(ev, event.type, this.offsets.file, undefined);
      if (verdict && verdict !== 'drop') this.queue.fail(verdict);
    } else if (event.type === 'Rotate') {
      this.offsets.rotate(event.ev.binlogName, Number(event.ev.position));
      if (event.ev.binlogName !== start.file) this.queue.fail(foreign(`this server's ${start.file} ends before offset ${start.pos}`));
    } else if (end !== undefined && end >= start.pos) {
      if (end === start.pos) this.stream.resumeAt = undefined;
      else this.queue.fail(foreign(`no event of this server's ${start.file} ends at offset ${start.pos} (one ends at ${end})`));
    }
  }

  /**
   * The next item, if it is ready to be handed over without waiting (decoded, and nothing to look
   * up for it on the server); else undefined, and the async iterator takes it or waits. A consumer
   * takes what one socket read delivered in one synchronous pass this way, where the iterator costs
   * a few promises per item (a single-row transaction is three items). The order is the iterator's.
   */
  takeReady(): BinlogItem | undefined {
    if (this.queue.failure) return undefined;
    const item = this.queue.peek();
    if (!item || (item.kind === 'rows' && !this.shapes.ready(item))) return undefined;
    return this.queue.shift();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<BinlogItem> {
    while (true) {
      const failure = this.queue.failure;
      if (failure) throw await failure;
      const item = this.queue.shift();
      if (item) {
        if (item.kind === 'rows' && !this.shapes.ready(item)) await this.shapes.prepare(item);
        yield item;
        continue;
      }
      if (this.stream.stopped) return;
      if (await this.queue.idle(this.options.idleMs ?? 1000)) yield { kind: 'idle' };
    }
  }

  /**
   * Memory back-pressure as it happened: rows decoded and not yet read (now, and the most at any
   * time), and how often the connection was paused because they reached `highWaterRows`.
   */
  get backPressure(): { readonly queuedRows: number; readonly peakQueuedRows: number; readonly pauses: number } {
    return this.queue.backPressure;
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
    return { file: this.offsets.file, pos: this.offsets.pos };
  }

  /**
   * While the dump re-reads the start's file to reach the start (a position past 4 GiB, see
   * binlog-dump.ts): where it has got to and where it goes. A run that ends before the start was
   * reached made no progress.
   */
  get rereading(): { readonly at: BinlogPosition; readonly to: BinlogPosition } | undefined {
    return this.stream.resumeAt === undefined ? undefined : { at: this.streamPosition, to: this.options.start };
  }

  /** True when nothing decoded waits to be read: the consumer has everything the server sent so far. */
  get drained(): boolean {
    return this.queue.drained;
  }

  /**
   * Asks for an `idle` item within `ms` if nothing arrives before (once; a shorter idle interval
   * than `idleMs`): a consumer waiting for its batch to come of age acts on time in a quiet stream.
   */
  wakeWithin(ms: number): void {
    this.queue.wakeWithin(ms);
  }

  /** Ends the stream; takes milliseconds. */
  async stop(): Promise<void> {
    if (this.stream.stopped) return;
    await this.stream.stop();
    this.queue.wakeUp();
  }
}
