import ZongJi from '@vlasky/zongji';
import { type BinlogPosition, LOG_POS_MODULUS } from '../../../core/position.ts';
import { ErrorCode, PositionLostError, SluiceError } from '../../../errors.ts';
import { profiling, timed } from '../../../profile.ts';
import { authRefusal } from '../auth.ts';
import { registerDecoders } from '../binlog/decoders.ts';
import type { ReaderEvent } from '../binlog/events.ts';
import { type DumpPlan, dumpPlan, type EventOffsets, extendDump } from '../binlog-dump.ts';
import { unreadablePositionReason } from '../history.ts';
import { connect, type SqlConnection } from '../server.ts';
import { connectionOptions, type MysqlTarget, scrub } from '../target.ts';
import type { Packet, RawFields } from './raw-fields.ts';

/*
 * The reader's connection to the server: zongji with sluice's decoders registered, the dump
 * started where the stored position says (by GTID, or re-reading the file, past 4 GiB:
 * binlog-dump.ts), each packet's fields zongji loses read before it decodes it, the stream's errors
 * classified, and the helper connection for the lookups decoding needs.
 */

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

export interface BinlogStreamOptions {
  readonly target: MysqlTarget;
  readonly start: BinlogPosition;
  /** Tables to decode (asked once per table). */
  readonly filter: (db: string, table: string) => boolean;
  readonly serverId?: number;
  /** Where the stream has got to, kept up to date from every packet's header. */
  readonly offsets: EventOffsets;
  /** Where each packet's raw fields go, before zongji decodes it. */
  readonly raw: RawFields;
  /** Each event zongji delivers, in order. */
  readonly onEvent: (ev: ReaderEvent) => void;
  /** The stream failed (the first failure only; none after `stop`). */
  readonly onFailure: (error: Error) => void;
}

export class BinlogStream {
  private readonly zongji: ZongJi;
  private schemaConnection: SqlConnection | undefined;
  private stoppedFlag = false;
  private failed = false;
  /**
   * Set while the dump re-reads the start's file from its beginning to reach the start (a position
   * past 4 GiB a dump cannot start at, binlog-dump.ts): the start's offset, where the stream begins.
   */
  resumeAt: number | undefined;

  constructor(private readonly options: BinlogStreamOptions) {
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
    this.zongji.on('binlog', (ev) => options.onEvent(ev as unknown as ReaderEvent));
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
    if (this.stoppedFlag) return;
    this.resumeAt = plan.kind === 'reread' ? plan.resumeAt : undefined;
    this.options.offsets.rotate(plan.file, plan.pos);
    this.zongji.once('ready', () => {
      extendDump(this.zongji, plan, serverId, this.options.offsets);
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
    const raw = this.options.raw;
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
    if (this.stoppedFlag || this.failed) return; // the first failure is the cause; what follows is its echo
    this.failed = true;
    this.options.onFailure(
      error.errno === ER_SOURCE_FATAL_ERROR_READING_BINLOG
        ? new PositionLostError(
            `the binlog position ${this.options.offsets.file}:${this.options.start.pos} cannot be read from the server: ${unreadablePositionReason(error.message)}. ` +
              'Nothing was skipped. Re-snapshot the source or reset its position (see docs/RUNBOOK.md), and raise binlog retention.',
          )
        : (authRefusal(error) ??
            new SluiceError(ErrorCode.BINLOG_STREAM, `binlog stream failed: ${scrub(error.message, this.options.target.uri)}`, {
              cause: error,
              retriable: true,
            })),
    );
  }

  /** Stops reading from the socket (memory back-pressure). */
  pause(): void {
    this.zongji.connection?.pause();
  }

  resume(): void {
    this.zongji.connection?.resume();
  }

  /** A connection for the lookups binlog decoding needs, opened on first use. */
  async sql(): Promise<SqlConnection> {
    this.schemaConnection ??= await connect(this.options.target);
    return this.schemaConnection;
  }

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  /** Ends the stream and closes the helper connection; takes milliseconds. */
  async stop(): Promise<void> {
    if (this.stoppedFlag) return;
    this.stoppedFlag = true;
    // zongji emits `stopped` within its own 1 s KILL timeout; the 2 s bound only guards against a
    // release that does not. Cleared either way: a pending timer keeps the process alive.
    let timer: NodeJS.Timeout | undefined;
    const stopped = new Promise<void>((resolve) => this.zongji.once('stopped', () => resolve()));
    this.zongji.stop();
    await Promise.race([stopped, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    // A helper connection; an error closing it changes nothing.
    await this.schemaConnection?.end().catch(() => undefined);
  }
}
