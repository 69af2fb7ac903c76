import type ZongJi from '@vlasky/zongji';
import { GtidSet as ZongjiGtidSet } from '@vlasky/zongji';
import { type BinlogPosition, LOG_POS_MODULUS, unwrapLogPos } from '../../core/position.ts';
import { isPayloadEvent } from './binlog/transaction-payload.ts';

/*
 * What sluice adds to zongji's binlog dump: the command that starts it, and the true offset of
 * every event the server sends.
 *
 * Offsets past 4 GiB. A binlog file grows past max_binlog_size by a whole transaction (the size is
 * checked between transactions), so one large transaction takes it past 4 GiB. Two fields of the
 * replication protocol are 32 bits wide:
 *
 *   - an event header's log_pos (the event's end offset): servers write the true end modulo 2^32.
 *     MySQL keeps it in a uint32 while copying a transaction into the file (sql/binlog.cc,
 *     Binlog_event_writer: `uint32 end_log_pos`, `int4store(header + LOG_POS_OFFSET, end_log_pos)`),
 *     MariaDB adds the file offset to the cached event's and int4stores the sum (sql/log.cc,
 *     MYSQL_BIN_LOG::write_cache). Both read their files by byte offset, never by log_pos, so
 *     nothing on the server notices: SHOW BINLOG EVENTS prints the true `Pos` and the wrapped
 *     `End_log_pos`. Heartbeats: MySQL sends `static_cast<uint32>(log_pos)` (v1; v2, type 41, only
 *     to a replica that asks); MariaDB sends log_pos 0 and the 8-byte position in a sub-header
 *     (sql/sql_repl.cc send_heartbeat_event, HB_SUB_HEADER_LEN), which zongji reads.
 *   - COM_BINLOG_DUMP's start position, 4 bytes in MySQL (sql/rpl_source.cc com_binlog_dump: "4 bytes
 *     is too little, but changing the protocol would break compatibility") and MariaDB
 *     (sql/sql_parse.cc: "TODO: The following has to be changed to an 8 byte integer").
 *     COM_BINLOG_DUMP_GTID carries a file name, an 8-byte position and a GTID set, and the server
 *     starts at that file and position, skipping transactions in the set (MySQL only, gtid_mode ON:
 *     sql/rpl_binlog_sender.cc check_start_file). MariaDB has no such command: its GTID start
 *     (@slave_connect_state) ignores file and position and needs the last GTID of every domain,
 *     which a position does not carry.
 *
 * So every event's end is its log_pos unwrapped past the end of the event before it
 * (`unwrapLogPos`), read from the header of every packet the server sends (`EventOffsets`) — also
 * of events zongji filters out and never hands over. Between two packets lie one event and the
 * events the server leaves out (MariaDB omits those a client did not ask for, ANNOTATE_ROWS: "holes",
 * sql/sql_repl.cc send_event_to_slave): far less than 4 GiB, an event being at most 1 GiB. Some
 * events have no offset of their own: a ROTATE (it names where the next one starts), a heartbeat
 * (where the server has got to), what the server makes up (LOG_EVENT_ARTIFICIAL_F) or sends out of
 * sequence at a dump's start (the file's FORMAT_DESCRIPTION, at offset 4, unless the dump starts
 * there; MariaDB's START_ENCRYPTION with log_pos 0), and the events inside a compressed transaction
 * (MySQL TRANSACTION_PAYLOAD), which zongji is handed as packets of their own
 * (binlog/transaction-payload.ts) and carry log_pos 0. An event that ends at a
 * multiple of 4 GiB exactly writes log_pos 0 too: it is told from those by its length.
 *
 * And a dump starts (`dumpPlan`):
 *   - below 4 GiB, with COM_BINLOG_DUMP at the position;
 *   - past 4 GiB with the position's GTID set (MySQL, gtid_mode ON), with COM_BINLOG_DUMP_GTID at
 *     the file and position, excluding the set: everything before the position is in it, so the
 *     server skips nothing after it but what the reader would skip anyway (BinlogReader `holds`);
 *   - past 4 GiB otherwise, with COM_BINLOG_DUMP at the file's start: the reader drops every event
 *     up to the position (their ends tracked as above) and starts where one ends exactly there. The
 *     file's first bytes up to the position are read again: as long as reading the large
 *     transaction took.
 */

/** Event type codes this module acts on (the same in MySQL and MariaDB). */
const ROTATE_EVENT = 4;
const FORMAT_DESCRIPTION_EVENT = 15;
const HEARTBEAT_LOG_EVENT = 27;
const HEARTBEAT_LOG_EVENT_V2 = 41;
/** LOG_EVENT_ARTIFICIAL_F: an event the server made up for the stream (a ROTATE naming the file, MariaDB's Gtid_list for a GTID start). */
const ARTIFICIAL_FLAG = 0x20;
/** More than the server leaves out between two events it sends (events of at most 1 GiB each, one at a time). */
const MAX_GAP = 2 ** 31;
/** The start of every binlog file's first event (after its 4 magic bytes). */
export const FILE_START = 4;
const COM_BINLOG_DUMP_GTID = 0x1e;

/** How a dump starts at `start` (see the header). */
export type DumpPlan =
  | { readonly kind: 'position'; readonly file: string; readonly pos: number }
  | { readonly kind: 'gtid'; readonly file: string; readonly pos: number; readonly gtidSet: string }
  | { readonly kind: 'reread'; readonly file: string; readonly pos: typeof FILE_START; readonly resumeAt: number };

/**
 * The dump that starts at `start`: by position below 4 GiB; past it by GTID when the position
 * carries its set and the server's gtid_mode is ON, else from the file's start.
 */
export function dumpPlan(start: BinlogPosition, gtidModeOn: boolean): DumpPlan {
  if (start.pos < LOG_POS_MODULUS) return { kind: 'position', file: start.file, pos: start.pos };
  if (gtidModeOn && start.gtidSet && !ZongjiGtidSet.parse(start.gtidSet).isEmpty())
    return { kind: 'gtid', file: start.file, pos: start.pos, gtidSet: start.gtidSet };
  return { kind: 'reread', file: start.file, pos: FILE_START, resumeAt: start.pos };
}

/** A binlog event's common header, as the server sent it. */
export interface EventHeader {
  readonly type: number;
  /** The whole event's length, header and checksum included. */
  readonly length: number;
  /** The end offset modulo 2^32 (0 for most of the server's made-up events and a compressed transaction's). */
  readonly logPos: number;
  readonly flags: number;
}

/** Reads the common header of an event packet: after the packet's OK byte, 19 bytes (timestamp, type, server_id, length, log_pos, flags). */
export function eventHeader(packet: Buffer, at: number, end: number): EventHeader | undefined {
  if (packet[at] !== 0 || end < at + 20) return undefined;
  return { type: packet[at + 5] as number, length: packet.readUInt32LE(at + 10), logPos: packet.readUInt32LE(at + 14), flags: packet.readUInt16LE(at + 18) };
}

/**
 * The true offsets of a dump's events (see the header): fed every packet's header before zongji
 * decodes it (`onHeader`), then asked about the event zongji delivers from it (`endOf`).
 */
export class EventOffsets {
  /** Where the events of `file` the stream has passed end. */
  pos: number;
  /** The packet being delivered: its type and its end, when it has one. */
  private current: { type: number; end: number | undefined } | undefined;
  /** Set when an event's header contradicts the ones before it: the stream cannot be trusted. */
  inconsistency: string | undefined;

  constructor(
    public file: string,
    pos: number,
  ) {
    this.pos = pos;
  }

  /** `inPayload`: one of a compressed transaction's events, which has no offset of its own. */
  onHeader(header: EventHeader, inPayload = false): void {
    let end: number | undefined;
    if (inPayload) {
      // Inside the transaction, which ends with its TRANSACTION_PAYLOAD.
    } else if (
      header.flags & ARTIFICIAL_FLAG ||
      header.type === ROTATE_EVENT ||
      header.type === HEARTBEAT_LOG_EVENT ||
      header.type === HEARTBEAT_LOG_EVENT_V2
    ) {
      // Made up for the stream: no offset of its own.
    } else if (header.type === FORMAT_DESCRIPTION_EVENT) {
      // The file's own, at offset 4: in sequence when the dump starts at the file's start.
      if (this.pos === FILE_START) end = header.logPos;
    } else if (header.logPos === 0) {
      // Sent out of sequence (MariaDB's START_ENCRYPTION after a FORMAT_DESCRIPTION of a dump
      // starting mid-file, sql/sql_repl.cc), unless the event ends at a multiple of 4 GiB exactly.
      if ((this.pos + header.length) % LOG_POS_MODULUS === 0) end = this.pos + header.length;
    } else {
      end = unwrapLogPos(header.logPos, this.pos);
      // It starts at the end of the event before it, or after a hole of less than 2 GiB.
      const gap = end - header.length - this.pos;
      if ((gap < 0 || gap >= MAX_GAP) && !this.inconsistency)
        this.inconsistency = `an event of type ${header.type} and ${header.length} bytes with log_pos ${header.logPos} does not follow the event before it, which ends at ${this.pos}`;
    }
    if (end !== undefined) this.pos = end;
    this.current = { type: header.type, end };
  }

  /**
   * The end offset of the event zongji delivers now (its type name), or undefined when it has none
   * of its own: a ROTATE, a heartbeat, an out-of-sequence FORMAT_DESCRIPTION, an event inside a
   * compressed transaction (delivered while its TRANSACTION_PAYLOAD's packet is).
   */
  endOf(): number | undefined {
    return this.current?.end;
  }

  /** A ROTATE (the server's made-up one before each file, or a file's last event): `file` starts at `pos`. */
  rotate(file: string, pos: number): void {
    this.file = file;
    this.pos = pos;
  }

  /** A heartbeat: the server has got to `pos` in `file` (the 8-byte one when it sent it, else its log_pos unwrapped). */
  heartbeat(file: string | undefined, logPos: number, pos: number | undefined): number | undefined {
    if (file && file !== this.file) return undefined;
    this.pos = pos ?? unwrapLogPos(logPos, this.pos);
    return this.pos;
  }
}

/** The parts of mysql2's packet and connection the dump command uses. */
interface Packet {
  buffer: Buffer;
  offset: number;
  end: number;
  isEOF(): boolean;
  isError(): boolean;
}
interface Connection {
  writePacket(packet: { buffer: Buffer; length(): number; writeHeader(sequenceId: number): void }): void;
}
type State = (packet: Packet, connection: Connection) => State | null;
/** zongji's binlog command class (lib/sequence/binlog.js): `start` sends the dump, `binlogData` takes each packet. */
type BinlogCommand = new (
  ...args: unknown[]
) => {
  start: State;
  binlogData: State;
};

/** COM_BINLOG_DUMP_GTID: flags u16, server_id u32, file name length u32 and name, position u64, GTID set length u32 and set. */
function dumpGtidPacket(plan: Extract<DumpPlan, { kind: 'gtid' }>, serverId: number) {
  const name = Buffer.from(plan.file, 'utf8');
  const set = (ZongjiGtidSet.parse(plan.gtidSet) as unknown as { encode(): Buffer }).encode();
  const payload = Buffer.alloc(1 + 2 + 4 + 4 + name.length + 8 + 4 + set.length);
  let at = payload.writeUInt8(COM_BINLOG_DUMP_GTID, 0);
  at = payload.writeUInt16LE(0, at);
  at = payload.writeUInt32LE(serverId, at);
  at = payload.writeUInt32LE(name.length, at);
  at += name.copy(payload, at);
  at = payload.writeBigUInt64LE(BigInt(plan.pos), at);
  at = payload.writeUInt32LE(set.length, at);
  set.copy(payload, at);
  const buffer = Buffer.concat([Buffer.alloc(4), payload]);
  return {
    buffer,
    length: () => buffer.length,
    writeHeader(sequenceId: number) {
      buffer.writeUIntLE(buffer.length - 4, 0, 3);
      buffer[3] = sequenceId;
    },
  };
}

/**
 * Extends zongji's binlog command for one dump: it starts as `plan` says (zongji itself sends
 * COM_BINLOG_DUMP at the file and position it was started with, 4 bytes) and hands every event
 * packet's header to `offsets` before zongji decodes it. zongji creates the command from
 * `BinlogClass` right after it emits `ready`; call this from a `ready` listener.
 */
export function extendDump(zongji: ZongJi, plan: DumpPlan, serverId: number, offsets: EventOffsets): void {
  const host = zongji as unknown as { BinlogClass: BinlogCommand };
  const Base = host.BinlogClass;
  const base = Base.prototype;
  class Dump extends Base {}
  // zongji's states name each other (start returns Binlog.prototype.binlogData): each is mapped to this class's.
  const own = (next: State | null): State | null => (next === base.binlogData ? Dump.prototype.binlogData : next);
  Dump.prototype.start = function (this: unknown, packet, connection) {
    if (plan.kind !== 'gtid') return own(base.start.call(this, packet, connection));
    connection.writePacket(dumpGtidPacket(plan, serverId));
    return Dump.prototype.binlogData;
  };
  Dump.prototype.binlogData = function (this: unknown, packet, connection) {
    if (!packet.isEOF() && !packet.isError()) {
      const header = eventHeader(packet.buffer, packet.offset, packet.end);
      if (header) offsets.onHeader(header, isPayloadEvent(packet));
    }
    return own(base.binlogData.call(this, packet, connection));
  };
  host.BinlogClass = Dump;
}
