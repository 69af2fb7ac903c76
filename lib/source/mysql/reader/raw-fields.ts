import type { QueryEvent } from '@vlasky/zongji';
import type { SqlModeFlags } from './items.ts';

/*
 * Fields of binlog packets zongji loses or skips, read from the packets' bytes before zongji decodes
 * them: a Query event's status variables, a MySQL GTID event's original commit time.
 */

/**
 * sql_mode from a Query event's status variables: Q_SQL_MODE_CODE = 1 and 8 bytes, low byte first
 * (REAL_AS_FLOAT = 0x1, ANSI_QUOTES = 0x4, NO_BACKSLASH_ESCAPES = 0x100000, STRICT_TRANS_TABLES = 0x200000,
 * STRICT_ALL_TABLES = 0x400000, in MySQL and MariaDB alike; MariaDB's ORACLE = 0x200 and MAXDB =
 * 0x1000, bits MySQL 8 no longer has), right after Q_FLAGS2_CODE = 0 and its
 * 4 bytes, which servers write first (`Query_log_event::write`; both checked against what
 * `mariadb-binlog` prints of events written under each mode).
 * The reader passes the bytes as the server sent them (`queryStatusVars`). zongji's own copy is
 * decoded as UTF-8, so there a byte above 0x7f is lost, and with it the position of every byte
 * after it: the flags those would hold are then unknown (MySQL's default mode sets NO_ZERO_IN_DATE,
 * 0x800000, in STRICT_TRANS_TABLES' byte).
 */
export function sqlModeFlags(statusVars: Uint8Array | string | undefined): SqlModeFlags {
  if (statusVars === undefined) return {};
  const decoded = typeof statusVars === 'string';
  // Of a decoded string, the bytes before the first one above 0x7f are known.
  let known = 0;
  while (known < statusVars.length && !(decoded && statusVars.charCodeAt(known) > 0x7f)) known++;
  const byte = (i: number) => (i >= known ? undefined : decoded ? statusVars.charCodeAt(i) : statusVars[i]);
  const at = byte(0) === 0 ? 5 : 0;
  if (byte(at) !== 1) return {};
  const b0 = byte(at + 1);
  const b1 = byte(at + 2);
  const b2 = byte(at + 3);
  return {
    ...(b0 === undefined ? {} : { ansiQuotes: (b0 & 0x4) !== 0, realAsFloat: (b0 & 0x1) !== 0 }),
    foreignTypes: b1 === undefined || (b1 & 0x12) !== 0,
    ...(b2 === undefined ? {} : { noBackslashEscapes: (b2 & 0x10) !== 0, strict: (b2 & 0x60) !== 0 }),
  };
}

/** A binlog packet as mysql2 hands the dump connection's packets over: a 4-byte packet header at `start`, then the event. */
export interface Packet {
  readonly buffer: Buffer;
  readonly start: number;
  readonly end: number;
}

/** A Query event's status variables as the server sent them, and the event's end (log_pos) to match it with zongji's event. */
export interface QueryStatusVars {
  readonly nextPosition: number;
  readonly bytes: Buffer;
}

const QUERY_EVENT = 2;
const QUERY_COMPRESSED_EVENT = 165; // MariaDB log_bin_compress: the same header and status variables
/** The OK marker, then the event header: timestamp 4, type 1, server id 4, length 4, log_pos 4, flags 2. */
const EVENT_HEADER = 1 + 19;
/** Query post-header: thread id 4, exec time 4, db length 1, error code 2, status variables length 2. */
const QUERY_POST_HEADER = 13;

/** A MySQL GTID event's original commit time (µs since the epoch), and the event's end (log_pos) to match it with zongji's event. */
export interface GtidCommit {
  readonly nextPosition: number;
  readonly us: number;
}

const GTID_EVENT = 33;
/** GTID post-header: flags 1, source uuid 16, gno 8, logical clock type 1 (2), last_committed 8, sequence_number 8. */
const GTID_POST_HEADER = 42;
const LOGICAL_TIMESTAMP_TYPECODE = 2;

/**
 * The original commit time of a binlog packet holding a MySQL GTID event (8.0.1+), undefined for
 * any other packet: the time its first server committed it, in microseconds, which every replica
 * logs unchanged (libbinlogevents Gtid_event: the immediate commit time, 7 bytes, whose top bit
 * says that the original one follows in 7 more; without it, the two are the same). Read here
 * because zongji skips it. With the GTID it identifies a transaction across servers, where a GTID
 * alone does not (GNOs restart after RESET MASTER) and its second-precision header time may match
 * by chance.
 */
export function gtidCommit(packet: Packet): GtidCommit | undefined {
  const event = packet.start + 4;
  const body = event + EVENT_HEADER;
  const at = body + GTID_POST_HEADER;
  const buffer = packet.buffer;
  if (at + 7 > packet.end || buffer[event] !== 0 || buffer[event + 5] !== GTID_EVENT || buffer[body + 25] !== LOGICAL_TIMESTAMP_TYPECODE) return undefined;
  const read56 = (offset: number) => buffer.readUIntLE(offset, 6) + ((buffer[offset + 6] as number) & 0x7f) * 2 ** 48;
  const hasOriginal = ((buffer[at + 6] as number) & 0x80) !== 0;
  if (hasOriginal && at + 14 > packet.end) return undefined;
  const us = read56(hasOriginal ? at + 7 : at);
  // 0: committed first on a server older than 8.0.1, which did not record it.
  return us === 0 ? undefined : { nextPosition: buffer.readUInt32LE(event + 14), us };
}

/**
 * The status variables of a binlog packet holding a Query event (as mysql2 hands the dump
 * connection's packets over: a 4-byte packet header at `start`, then the event), undefined for
 * any other packet. Read here because zongji keeps them only decoded as UTF-8 (`sqlModeFlags`).
 */
export function queryStatusVars(packet: Packet): QueryStatusVars | undefined {
  const event = packet.start + 4;
  const vars = event + EVENT_HEADER + QUERY_POST_HEADER;
  if (vars > packet.end || packet.buffer[event] !== 0) return undefined;
  const type = packet.buffer[event + 5];
  if (type !== QUERY_EVENT && type !== QUERY_COMPRESSED_EVENT) return undefined;
  const length = packet.buffer.readUInt16LE(vars - 2);
  if (vars + length > packet.end) return undefined;
  return { nextPosition: packet.buffer.readUInt32LE(event + 14), bytes: Buffer.from(packet.buffer.subarray(vars, vars + length)) };
}

/**
 * The last Query event's status variables and MySQL GTID event's original commit time the
 * connection received, read from each packet before zongji decodes it (`see`). The dump connection
 * hands each packet to zongji synchronously, and again when it replays the packets it queued while
 * paused, so the last one read is the event's being delivered; `statusVarsOf` and `commitUsOf`
 * still check that by its log_pos.
 */
export class RawFields {
  private queryStatus: QueryStatusVars | undefined;
  private gtidCommit: GtidCommit | undefined;

  see(packet: Packet): void {
    this.queryStatus = queryStatusVars(packet) ?? this.queryStatus;
    this.gtidCommit = gtidCommit(packet) ?? this.gtidCommit;
  }

  /** A MySQL GTID event's original commit time (µs), as the server sent it; undefined for MariaDB's and before 8.0.1. */
  commitUsOf(ev: { readonly nextPosition: number }): number | undefined {
    const raw = this.gtidCommit;
    return raw && ev.nextPosition > 0 && raw.nextPosition === ev.nextPosition ? raw.us : undefined;
  }

  /** A Query event's status variables: as the server sent them, or zongji's decoded copy (inside a compressed transaction, log_pos 0). */
  statusVarsOf(ev: QueryEvent): Uint8Array | string | undefined {
    const raw = this.queryStatus;
    if (raw && ev.nextPosition > 0 && raw.nextPosition === ev.nextPosition && raw.bytes.length === ev.statusVarsLength) return raw.bytes;
    return ev.statusVars;
  }
}
