import ZongJi from '@vlasky/zongji';
import { type BinlogPosition, formatPosition, LOG_POS_MODULUS } from '../../core/position.ts';
import { AssertionError, ErrorCode, PositionLostError, SluiceError } from '../../errors.ts';
import { profiling, timed } from '../../profile.ts';
import { authRefusal } from './auth.ts';
import { registerDecoders } from './binlog/decoders.ts';
import { type NamedEvent, named, type ReaderEvent } from './binlog/events.ts';
import { type DumpPlan, dumpPlan, EventOffsets, extendDump } from './binlog-dump.ts';
import { StreamGuard } from './guards.ts';
import type { BinlogHistories } from './history.ts';
import { unreadablePositionReason } from './history.ts';
import { ItemQueue } from './reader/item-queue.ts';
import type { BinlogItem } from './reader/items.ts';
import { type Packet, RawFields } from './reader/raw-fields.ts';
import { TableShapes } from './reader/table-shapes.ts';
import { TransactionContext } from './reader/transaction-context.ts';
import { connect, type SqlConnection } from './server.ts';
import type { MysqlTarget } from './target.ts';
import { connectionOptions, scrub } from './target.ts';

export type { BinlogItem, SqlModeFlags, TableMapStructure } from './reader/items.ts';
export { type GtidCommit, gtidCommit, type QueryStatusVars, queryStatusVars, sqlModeFlags } from './reader/raw-fields.ts';

/*
 * A MySQL or MariaDB binlog stream as an async iterable of items (reader/items.ts), strictly in
 * binlog order. The stream's wiring (zongji, sluice's decoders, the dump's start, errors) is
 * here; the transaction context (reader/transaction-context.ts: the
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

export class BinlogReader implements AsyncIterable<BinlogItem> {
  /**
   * Where the stream has got to: its file, and the true end offset of the last event the server
   * sent, whatever it was (binlog-dump.ts: every packet's header, past 4 GiB too).
   */
  private readonly offsets: EventOffsets;
  private readonly zongji: ZongJi;
  private schemaConnection: SqlConnection | undefined;
  private stopped = false;
  /**
   * Set while the dump re-reads the start's file from its beginning to reach the start (a position
   * past 4 GiB a dump cannot start at, binlog-dump.ts): the start's offset, where the stream begins.
   */
  private resumeAt: number | undefined;
  /** What zongji does not keep of the packets (`keepRawFields`). */
  private readonly raw = new RawFields();
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
    const sql = () => this.sql();
    // 5,000 rows: decoding stays ahead of the consumer, and every scavenge copies fewer waiting rows
    // (20,000 took a 320k-row capture's peak RSS from ~180 to ~235 MB, docs/PERFORMANCE.md).
    this.queue = new ItemQueue(options.highWaterRows ?? 5_000, {
      pause: () => this.zongji.connection?.pause(),
      resume: () => this.zongji.connection?.resume(),
    });
    this.transaction = new TransactionContext(start, { offsets, queue: this.queue, raw: this.raw, purged: options.purged });
    this.shapes = new TableShapes(sql);
    const history = options.capture?.history ?? options.history;
    this.guard = history && new StreamGuard(start, { history: { check: history, sql }, accept: options.filter, historyOnly: !options.capture });
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
    // sluice decodes what zongji's own classes do not (binlog/decoders.ts).
    registerDecoders(this.zongji, { skipTable: this.tableFilter() });
    // sluice's own classes decode some events (binlog/decoders.ts): ReaderEvent, not zongji's declared union.
    this.zongji.on('binlog', (ev) => this.onEvent(ev as unknown as ReaderEvent));
    this.zongji.on('error', (error: Error & { errno?: number }) => this.fail(error));
    const serverId = options.serverId ?? randomServerId();
    // Past 4 GiB a dump starts by GTID when the server can (binlog-dump.ts): its gtid_mode decides.
    const byGtid = start.pos >= LOG_POS_MODULUS && start.gtidSet !== undefined;
    if (!byGtid) this.startDump(dumpPlan(start, false), serverId);
    else
      void gtidModeOn(() => this.sql())
        .then((on) => this.startDump(dumpPlan(start, on), serverId))
        .catch((error: Error) => this.fail(error));
  }

  /**
   * zongji's per-table filter takes exact names; ours are regexes. sluice's TABLE_MAP parser asks
   * it at each TABLE_MAP, so rows of filtered tables are never decoded. Remembered per table: it is
   * asked at every TABLE_MAP, and a single-row transaction has one.
   */
  private tableFilter(): (db: string, table: string) => boolean {
    const accepted = new Map<string, Map<string, boolean>>();
    return (db, table) => {
      // Re-reading up to the start: nothing before it is decoded.
      if (this.resumeAt !== undefined) return true;
      let tables = accepted.get(db);
      if (!tables) {
        tables = new Map();
        accepted.set(db, tables);
      }
      let accept = tables.get(table);
      if (accept === undefined) {
        accept = this.options.filter(db, table);
        tables.set(table, accept);
      }
      return !accept;
    };
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
   * Reads what zongji does not keep from each packet before it decodes it (raw-fields.ts): a Query
   * event's status variables (zongji decodes them as UTF-8, `sqlModeFlags`), a MySQL GTID event's
   * original commit time (zongji skips it).
   */
  private keepRawFields(): void {
    const connection = this.zongji.connection as unknown as { handlePacket: (packet: Packet | null) => void } | null;
    if (!connection) return;
    const handle = connection.handlePacket.bind(connection);
    const raw = this.raw;
    connection.handlePacket = (packet) => {
      if (packet) raw.see(packet);
      handle(packet);
    };
  }

  private profileDecoding(): void {
    const connection = this.zongji.connection as unknown as { handlePacket: (packet: unknown) => void };
    connection.handlePacket = timed('decode', connection.handlePacket.bind(connection));
  }

  private fail(error: Error & { errno?: number }): void {
    if (this.stopped || this.queue.failure) return; // the first failure is the cause; what follows is its echo
    this.queue.fail(
      error.errno === ER_SOURCE_FATAL_ERROR_READING_BINLOG
        ? new PositionLostError(
            `the binlog position ${this.offsets.file}:${this.options.start.pos} cannot be read from the server: ${unreadablePositionReason(error.message)}. ` +
              'Nothing was skipped. Re-snapshot the source or reset its position (see docs/RUNBOOK.md), and raise binlog retention.',
          )
        : (authRefusal(error) ??
            new SluiceError(ErrorCode.BINLOG_STREAM, `binlog stream failed: ${scrub(error.message, this.options.target.uri)}`, {
              cause: error,
              retriable: true,
            })),
    );
  }

  /** A connection for the lookups binlog decoding needs, opened on first use. */
  async sql(): Promise<SqlConnection> {
    this.schemaConnection ??= await connect(this.options.target);
    return this.schemaConnection;
  }

  /** Each event zongji delivers: checked, then handed to the part its kind concerns. */
  private onEvent(ev: ReaderEvent): void {
    const type = ev.getTypeName();
    const event = named(ev, type);
    // The event's true end offset; undefined for one without its own (binlog-dump.ts `endOf`).
    let end = this.offsets.endOf(type);
    // Its log_pos may be 4 bytes of an offset past 4 GiB: the 8-byte sub-header (MariaDB) or the offset reached, unwrapped.
    if (event.type === 'Heartbeat')
      end = this.offsets.heartbeat(event.ev.binlogName, event.ev.nextPosition, typeof event.ev.position === 'number' ? event.ev.position : undefined);
    if (this.offsets.inconsistency && !this.queue.failure)
      this.queue.fail(new AssertionError(`the binlog stream of ${this.offsets.file} contradicts itself: ${this.offsets.inconsistency}`));
    if (this.resumeAt !== undefined) {
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
      if (end === start.pos) this.resumeAt = undefined;
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
      if (this.stopped) return;
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
    return this.resumeAt === undefined ? undefined : { at: this.streamPosition, to: this.options.start };
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
    this.queue.wakeUp();
  }
}
