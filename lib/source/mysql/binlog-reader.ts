import ZongJi from '@vlasky/zongji';
import { AssertionError, PositionLostError, SluiceError } from '../../errors.ts';
import { binlogColumn, type ZongjiColumn } from '../../format/binlog-columns.ts';
import { type EncodedShape, encodeShape, type Row } from '../../format/event.ts';
import { profiling, timed } from '../../profile.ts';
import type { BinlogPosition } from './position.ts';
import type { MysqlTarget } from './target.ts';

/**
 * What the reader emits, strictly in binlog order. Only `commit` and `progress` carry a position,
 * and both are transaction boundaries: resuming inside a transaction silently drops rows, so no
 * other point is ever exposed.
 */
export type BinlogItem =
  | { kind: 'begin'; file: string; pos: number; gtid: string | null; serverId: number | null; tsMs: number }
  | { kind: 'rows'; op: 'insert' | 'delete'; shape: EncodedShape; rows: Row[]; pos: number; tsMs: number }
  | { kind: 'rows'; op: 'update'; shape: EncodedShape; rows: { before: Row; after: Row }[]; pos: number; tsMs: number }
  /** A transaction (or a DDL statement) ended; `position` is right after it. */
  | { kind: 'commit'; position: BinlogPosition; ddl?: { db: string; query: string } }
  /** A non-transactional event between transactions (rotate, checkpoint, heartbeat): the position moved. */
  | { kind: 'progress'; position: BinlogPosition; tsMs: number }
  /** Nothing arrived for `idleMs`: lets an idle consumer stop or heartbeat on time. */
  | { kind: 'idle' };

export interface BinlogReaderOptions {
  target: MysqlTarget;
  start: BinlogPosition;
  /** Tables to decode; events of other tables are skipped before their rows are parsed. */
  filter: (db: string, table: string) => boolean;
  /** Replica id for this connection; two connections with one id make the server kill the first. */
  serverId?: number;
  /** Pause the connection when this many rows wait unconsumed (memory back-pressure). */
  highWaterRows?: number;
  /** Emit an `idle` item after this long without events. */
  idleMs?: number;
}

const ROWS_OP = { WriteRows: 'insert', UpdateRows: 'update', DeleteRows: 'delete' } as const;
const ER_SOURCE_FATAL_ERROR_READING_BINLOG = 1236;

/** A fresh id per run, away from the small ids real replicas use. */
const randomServerId = () => 100_000 + Math.floor(Math.random() * 2_000_000_000);

// biome-ignore lint/suspicious/noExplicitAny: zongji events are untyped
type Ev = any;

export class BinlogReader implements AsyncIterable<BinlogItem> {
  private readonly zongji: ZongJi;
  private readonly queue: BinlogItem[] = [];
  private head = 0;
  private queuedRows = 0;
  private paused = false;
  private wake: (() => void) | undefined;
  private failure: Error | undefined;
  private stopped = false;
  private readonly shapes = new Map<number, { signature: string; shape: EncodedShape }>();
  private file: string;
  private gtid: string | null;
  private inTxn = false;
  private readonly highWater: number;

  constructor(private readonly options: BinlogReaderOptions) {
    this.file = options.start.file;
    this.gtid = options.start.gtid ?? null;
    this.highWater = options.highWaterRows ?? 20_000;
    // dateStrings + timezone 'Z': temporal values arrive as MySQL text, TIMESTAMP rendered in UTC,
    // independent of the process time zone. Big numbers arrive as exact strings.
    this.zongji = new ZongJi({
      uri: options.target.uri,
      ssl: options.target.ssl,
      dateStrings: true,
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    // zongji's per-table filter takes exact names; ours are regexes. Its hook is consulted at each
    // TableMap, so rows of filtered tables are never decoded.
    (this.zongji as unknown as { _skipSchema: (db: string, table: string) => boolean })._skipSchema = (db, table) => !options.filter(db, table);
    // SLUICE_PROFILE=1: time parsing binlog packets (mysql2 + zongji) as decoding.
    if (profiling) this.zongji.once('ready', () => this.profileDecoding());
    this.zongji.on('binlog', (ev: Ev) => this.onEvent(ev));
    this.zongji.on('error', (error: Error & { errno?: number }) => this.fail(error));
    this.zongji.start({ serverId: options.serverId ?? randomServerId(), filename: options.start.file, position: options.start.pos });
  }

  private profileDecoding(): void {
    const connection = this.zongji.connection as unknown as { handlePacket: (packet: unknown) => void };
    connection.handlePacket = timed('decode', connection.handlePacket.bind(connection));
  }

  private push(item: BinlogItem, rows = 0): void {
    this.queue.push(item);
    this.queuedRows += rows;
    if (!this.paused && this.queuedRows >= this.highWater) {
      this.paused = true;
      this.zongji.connection?.pause();
    }
    this.wake?.();
  }

  private fail(error: Error & { errno?: number }): void {
    if (this.stopped) return;
    this.failure =
      error.errno === ER_SOURCE_FATAL_ERROR_READING_BINLOG
        ? new PositionLostError(
            `the binlog position ${this.file}:${this.options.start.pos} is no longer readable on the server (${error.message}). ` +
              'The binlog was purged or the position is invalid; nothing was skipped. Re-snapshot the source or reset its position (see docs/RUNBOOK.md), and raise binlog retention.',
            error,
          )
        : new SluiceError('BINLOG_STREAM', `binlog stream failed: ${error.message}`, { cause: error, retriable: true });
    this.wake?.();
  }

  /** Builds (or reuses) the table's shape at its TABLE_MAP event, which alone carries the key and signedness. */
  private mapTable(ev: Ev): void {
    const map = ev.tableMap[ev.tableId];
    const columns: ZongjiColumn[] = map.columns;
    const key: number[] | null = Array.isArray(ev.primaryKey) && ev.primaryKey.length > 0 ? ev.primaryKey : null;
    const unsigned: boolean[] = ev.signedness ?? [];
    const signature = `${map.parentSchema}.${map.tableName}:${columns.map((c, i) => `${c.name}/${c.type}/${c.charset}/${unsigned[i] ? 'u' : ''}`).join(',')}:${key}`;
    if (this.shapes.get(ev.tableId)?.signature === signature) return;
    const shape = encodeShape({
      db: map.parentSchema,
      table: map.tableName,
      columns: columns.map((c, i) => binlogColumn(c, unsigned[i] === true)),
      key,
    });
    this.shapes.set(ev.tableId, { signature, shape });
  }

  private shapeOf(ev: Ev): EncodedShape {
    const shape = this.shapes.get(ev.tableId)?.shape;
    if (!shape) throw new AssertionError(`row event for table id ${ev.tableId} without a preceding TABLE_MAP`);
    return shape;
  }

  private boundary(kind: 'commit' | 'progress', pos: number, ddl?: { db: string; query: string }, tsMs = 0): void {
    this.inTxn = false;
    if (kind === 'progress') {
      this.push({ kind, position: { file: this.file, pos, gtid: this.gtid ?? undefined }, tsMs });
      return;
    }
    this.push(
      ddl
        ? { kind, position: { file: this.file, pos, gtid: this.gtid ?? undefined }, ddl }
        : { kind, position: { file: this.file, pos, gtid: this.gtid ?? undefined } },
    );
  }

  private begin(ev: Ev, gtid: string | null, serverId: number | null): void {
    this.inTxn = true;
    if (gtid) this.gtid = gtid;
    this.push({ kind: 'begin', file: this.file, pos: ev.nextPosition, gtid, serverId, tsMs: ev.timestamp });
  }

  private onEvent(ev: Ev): void {
    const type: string = ev.getTypeName();
    switch (type) {
      case 'MariadbGtid':
        this.begin(ev, ev.gtid, ev.serverId ?? null);
        return;
      case 'Gtid':
        this.begin(ev, typeof ev.gtid === 'string' ? ev.gtid : String(ev.gtid ?? ''), null);
        return;
      case 'AnonymousGtid':
        this.begin(ev, null, null);
        return;
      case 'TableMap':
        this.mapTable(ev);
        return;
      case 'WriteRows':
      case 'UpdateRows':
      case 'DeleteRows': {
        const shape = this.shapeOf(ev);
        this.push({ kind: 'rows', op: ROWS_OP[type], shape, rows: ev.rows, pos: ev.nextPosition, tsMs: ev.timestamp }, ev.rows.length);
        return;
      }
      case 'Xid':
        this.boundary('commit', ev.nextPosition);
        return;
      case 'Query': {
        const query = String(ev.query).trim();
        const upper = query.slice(0, 16).toUpperCase();
        if (upper === 'BEGIN' || upper.startsWith('XA START') || upper.startsWith('SAVEPOINT')) {
          if (!this.inTxn) this.begin(ev, null, null);
          return;
        }
        if (upper === 'COMMIT' || upper === 'ROLLBACK') {
          this.boundary('commit', ev.nextPosition);
          return;
        }
        // Anything else is DDL (or another standalone statement): it ends its group.
        this.boundary('commit', ev.nextPosition, { db: ev.schema ?? '', query });
        return;
      }
      case 'Rotate':
        // The new file starts at ev.position; the rotate's own nextPosition belongs to the old file.
        this.file = ev.binlogName;
        if (!this.inTxn) this.boundary('progress', Number(ev.position), undefined, ev.timestamp);
        return;
      default:
        if (!this.inTxn && ev.nextPosition > 0) this.boundary('progress', ev.nextPosition, undefined, ev.timestamp);
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<BinlogItem> {
    while (true) {
      if (this.failure) throw this.failure;
      if (this.head < this.queue.length) {
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
        yield item;
        continue;
      }
      if (this.stopped) return;
      let timer: NodeJS.Timeout | undefined;
      const idle = await new Promise<boolean>((resolve) => {
        this.wake = () => resolve(false);
        timer = setTimeout(() => resolve(true), this.options.idleMs ?? 1000);
      });
      clearTimeout(timer);
      this.wake = undefined;
      if (idle) yield { kind: 'idle' };
    }
  }

  /** Ends the stream; takes milliseconds. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const stopped = new Promise<void>((resolve) => this.zongji.once('stopped', () => resolve()));
    this.zongji.stop();
    await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 2000))]);
    this.wake?.();
  }
}
