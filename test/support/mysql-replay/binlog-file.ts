/**
 * Reads a recorded MySQL binlog file into raw events: each event's header fields, its body and its
 * CRC32 trailer, exactly as stored. Nothing is decoded beyond what the replay server needs to act as
 * the recording server (the FORMAT_DESCRIPTION's version and checksum, ROTATE targets, GTIDs and
 * PREVIOUS_GTIDS, whether TABLE_MAPs carry column names, whether row images are complete): the rows
 * themselves stay bytes, for the client under test to decode.
 *
 * Layout (MySQL source `libs/mysql/binlog/event/binlog_event.h`; the binary log overview in the
 * MySQL source documentation, "Binary Log Event Header"): a 4-byte magic `fe 62 69 6e`, then events
 * of a 19-byte header (timestamp u32, type u8, server_id u32, event_size u32, log_pos u32, flags u16)
 * followed by the body and, when the FORMAT_DESCRIPTION's checksum algorithm is CRC32, a 4-byte CRC32
 * of header and body.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { crc32 } from 'node:zlib';

/** The binlog event type codes the replay server acts on (MySQL `Log_event_type`). */
export const EventType = {
  QUERY: 2,
  STOP: 3,
  ROTATE: 4,
  FORMAT_DESCRIPTION: 15,
  XID: 16,
  TABLE_MAP: 19,
  HEARTBEAT: 27,
  ROWS_QUERY: 29,
  WRITE_ROWS_V2: 30,
  UPDATE_ROWS_V2: 31,
  DELETE_ROWS_V2: 32,
  GTID: 33,
  ANONYMOUS_GTID: 34,
  PREVIOUS_GTIDS: 35,
  PARTIAL_UPDATE_ROWS: 39,
  TRANSACTION_PAYLOAD: 40,
  GTID_TAGGED: 42,
} as const;

/** The names mysqlbinlog and the README use for the event types. */
export const eventTypeName: Record<number, string> = {
  2: 'QUERY',
  3: 'STOP',
  4: 'ROTATE',
  15: 'FORMAT_DESCRIPTION',
  16: 'XID',
  19: 'TABLE_MAP',
  27: 'HEARTBEAT',
  29: 'ROWS_QUERY',
  30: 'WRITE_ROWS_V2',
  31: 'UPDATE_ROWS_V2',
  32: 'DELETE_ROWS_V2',
  33: 'GTID',
  34: 'ANONYMOUS_GTID',
  35: 'PREVIOUS_GTIDS',
  39: 'PARTIAL_UPDATE_ROWS',
  40: 'TRANSACTION_PAYLOAD',
  42: 'GTID_TAGGED',
};

/** `LOG_EVENT_ARTIFICIAL_F`: set on events the server makes up while streaming (the start ROTATE). */
export const ARTIFICIAL_FLAG = 0x20;
/** `LOG_EVENT_BINLOG_IN_USE_F`: set in the FORMAT_DESCRIPTION of a binlog still being written. */
export const IN_USE_FLAG = 0x01;
/** The binlog header: 4 magic bytes, so the first event is at offset 4. */
export const HEADER_SIZE = 4;
/** The common event header length of binlog format v4. */
export const EVENT_HEADER_LENGTH = 19;

/** One event as stored. `bytes` is the whole event (header, body, checksum), a view of the file. */
export interface RawEvent {
  /** Offset of the event's first byte in its file. */
  readonly offset: number;
  readonly timestamp: number;
  readonly type: number;
  readonly serverId: number;
  readonly size: number;
  /** The header's log_pos: the end offset of the event in its file. */
  readonly logPos: number;
  readonly flags: number;
  readonly bytes: Buffer;
  /** Header and body without the checksum trailer. */
  readonly body: Buffer;
  /** The stored CRC32 trailer, or undefined when the file has no checksums. */
  readonly checksum: number | undefined;
}

/** A GTID interval [start, end], both inclusive (as printed, unlike the wire's exclusive end). */
export interface GtidInterval {
  start: bigint;
  end: bigint;
}

/** One source of a GTID set: a server uuid and a tag ('' when untagged, MySQL 8.3+ otherwise). */
export interface GtidSource {
  uuid: string;
  tag: string;
  intervals: GtidInterval[];
}

/** One transaction id. */
export interface Gtid {
  uuid: string;
  tag: string;
  gno: bigint;
}

/** A recorded binlog file, read once. */
export interface BinlogFile {
  readonly path: string;
  readonly bytes: Buffer;
  /** The file's length as served: its bytes', unless grown (`growBinlogFile`) or cut short (`cutBinlogFile`). */
  readonly size: number;
  readonly events: readonly RawEvent[];
  /** The FORMAT_DESCRIPTION's server version, e.g. `8.0.46`. */
  readonly serverVersion: string;
  /** The server_id in the FORMAT_DESCRIPTION's header. */
  readonly serverId: number;
  readonly checksum: 'CRC32' | 'NONE';
  readonly previousGtids: GtidSource[];
  /** Each transaction's GTID, with the offset of its GTID event, in file order. */
  readonly gtids: { gtid: Gtid; offset: number }[];
  /** The target of a ROTATE event that ends the file, if one does. */
  readonly rotateTo: { file: string; position: number } | undefined;
  /** Whether any top-level TABLE_MAP carries COLUMN_NAME optional metadata (binlog_row_metadata=FULL). */
  readonly columnNames: boolean;
  /** Whether any top-level rows event has a column bitmap with a column left out (binlog_row_image=MINIMAL). */
  readonly partialImages: boolean;
  /** Per-type counts of the top-level events, keyed by the README's names (FORMAT_DESCRIPTION included). */
  readonly counts: Record<string, number>;
}

const MAGIC = Buffer.from([0xfe, 0x62, 0x69, 0x6e]);

/** Reads and checks a binlog file; throws naming the file and offset when it is not one. */
export function readBinlogFile(path: string): BinlogFile {
  const bytes = readFileSync(path);
  if (bytes.length < HEADER_SIZE || !bytes.subarray(0, HEADER_SIZE).equals(MAGIC)) {
    throw new Error(`${path}: not a binlog file (it does not start with fe 62 69 6e)`);
  }
  const headers: Omit<RawEvent, 'body' | 'checksum'>[] = [];
  for (let offset = HEADER_SIZE; offset < bytes.length; ) {
    if (offset + EVENT_HEADER_LENGTH > bytes.length) throw new Error(`${path}: truncated event header at ${offset}`);
    const size = bytes.readUInt32LE(offset + 9);
    if (size < EVENT_HEADER_LENGTH || offset + size > bytes.length) throw new Error(`${path}: event at ${offset} claims ${size} bytes past the file's end`);
    headers.push({
      offset,
      timestamp: bytes.readUInt32LE(offset),
      type: bytes[offset + 4] as number,
      serverId: bytes.readUInt32LE(offset + 5),
      size,
      logPos: bytes.readUInt32LE(offset + 13),
      flags: bytes.readUInt16LE(offset + 17),
      bytes: bytes.subarray(offset, offset + size),
    });
    offset += size;
  }
  const fde = headers[0];
  if (!fde || fde.type !== EventType.FORMAT_DESCRIPTION) throw new Error(`${path}: the first event is not a FORMAT_DESCRIPTION`);
  // FDE body: binlog_version u16, server_version char[50], create_timestamp u32, header_length u8,
  // post-header lengths, then (5.6.1+) the checksum algorithm byte and the FDE's own checksum.
  const serverVersion = fde.bytes
    .subarray(EVENT_HEADER_LENGTH + 2, EVENT_HEADER_LENGTH + 52)
    .toString('latin1')
    .replace(/\0.*$/s, '');
  const algorithm = fde.bytes[fde.size - 5];
  if (algorithm !== 0 && algorithm !== 1) throw new Error(`${path}: unknown checksum algorithm ${algorithm} in the FORMAT_DESCRIPTION`);
  const trailer = algorithm === 1 ? 4 : 0;
  const events: RawEvent[] = headers.map((h) => {
    const body = h.bytes.subarray(0, h.size - trailer);
    const checksum = trailer ? h.bytes.readUInt32LE(h.size - 4) : undefined;
    // The server computes the FDE's checksum with the in-use flag clear and sets the flag in place
    // while the file is open (and clears it again when sending: see the server's FDE).
    const covered = h.type === EventType.FORMAT_DESCRIPTION && h.flags & IN_USE_FLAG ? withFlags(body, h.flags & ~IN_USE_FLAG) : body;
    if (checksum !== undefined && crc32(covered) !== checksum) throw new Error(`${path}: CRC32 mismatch in the event at ${h.offset}`);
    return { ...h, body, checksum };
  });

  const counts: Record<string, number> = {};
  let previousGtids: GtidSource[] = [];
  const gtids: { gtid: Gtid; offset: number }[] = [];
  let columnNames = false;
  let partialImages = false;
  for (const event of events) {
    const name = eventTypeName[event.type] ?? `TYPE_${event.type}`;
    counts[name] = (counts[name] ?? 0) + 1;
    const data = event.body.subarray(EVENT_HEADER_LENGTH);
    if (event.type === EventType.PREVIOUS_GTIDS) previousGtids = decodeGtidSet(data);
    else if (event.type === EventType.GTID) gtids.push({ gtid: decodeGtidEvent(data), offset: event.offset });
    else if (event.type === EventType.GTID_TAGGED) gtids.push({ gtid: decodeTaggedGtidEvent(data), offset: event.offset });
    else if (event.type === EventType.TABLE_MAP) columnNames ||= tableMapHasColumnNames(data);
    else if (event.type === EventType.WRITE_ROWS_V2 || event.type === EventType.UPDATE_ROWS_V2 || event.type === EventType.DELETE_ROWS_V2) {
      partialImages ||= rowsEventOmitsColumns(data, event.type === EventType.UPDATE_ROWS_V2);
    }
  }
  const last = events[events.length - 1];
  const rotateTo =
    last && last.type === EventType.ROTATE
      ? {
          position: Number(last.body.readBigUInt64LE(EVENT_HEADER_LENGTH)),
          file: last.body.subarray(EVENT_HEADER_LENGTH + 8).toString('utf8'),
        }
      : undefined;
  return {
    path,
    bytes,
    size: bytes.length,
    events,
    serverVersion,
    serverId: fde.serverId,
    checksum: algorithm === 1 ? 'CRC32' : 'NONE',
    previousGtids,
    gtids,
    rotateTo,
    columnNames,
    partialImages,
    counts,
  };
}

/** What a binlog event header's 32-bit log_pos wraps at: a server writes end offsets past 4 GiB modulo 2^32. */
export const LOG_POS_MODULUS = 2 ** 32;
/** The rows events standing for a large transaction's rows (`growBinlogFile`): 4 MiB each, so 4 GiB is a thousand of them. */
const FILLER_EVENT_SIZE = 4 << 20;
/** The table id of those rows: one no TABLE_MAP names, as the rows of a table a client filters out look to it. */
export const FILLER_TABLE_ID = 999_999;

/**
 * The file as its server would have written it had a transaction held `by` bytes more rows: the
 * event at offset `at` (an event of the recorded file inside a transaction, e.g. its XID) and every
 * later one move `by` bytes on, their headers' log_pos written modulo 2^32 as servers write them
 * past 4 GiB (MySQL sql/binlog.cc Binlog_event_writer, MariaDB sql/log.cc write_cache) and their
 * CRC32 computed again; the bytes between are WRITE_ROWS_V2 events of a table no TABLE_MAP names
 * (`FILLER_TABLE_ID`), made when a dump sends them. A dump that starts past them sends none.
 */
export function growBinlogFile(file: BinlogFile, at: number, by: number): BinlogFile {
  const index = file.events.findIndex((e) => e.offset === at);
  if (index < 1) throw new Error(`${file.path}: no event after the FORMAT_DESCRIPTION starts at ${at}`);
  const trailer = file.checksum === 'CRC32' ? 4 : 0;
  if (by < 2 * (EVENT_HEADER_LENGTH + 11 + trailer)) throw new Error(`${file.path}: grow by at least ${2 * (EVENT_HEADER_LENGTH + 11 + trailer)} bytes`);
  const before = file.events[index - 1] as RawEvent;
  const fillers: RawEvent[] = [];
  for (let offset = at, left = by; left > 0; ) {
    const size = left >= 2 * FILLER_EVENT_SIZE ? FILLER_EVENT_SIZE : left > FILLER_EVENT_SIZE ? Math.ceil(left / 2) : left;
    fillers.push(fillerEvent(offset, size, before.timestamp, file.serverId, trailer > 0));
    offset += size;
    left -= size;
  }
  const moved = file.events.slice(index).map((e): RawEvent => {
    const logPos = (e.logPos + by) % LOG_POS_MODULUS;
    const body = Buffer.from(e.body);
    body.writeUInt32LE(logPos, 13);
    const bytes = withChecksum(body, trailer > 0);
    return { ...e, offset: e.offset + by, logPos, body, bytes, checksum: trailer ? bytes.readUInt32LE(bytes.length - 4) : undefined };
  });
  return {
    ...file,
    size: file.size + by,
    events: [...file.events.slice(0, index), ...fillers, ...moved],
    gtids: file.gtids.map((g) => (g.offset >= at ? { ...g, offset: g.offset + by } : g)),
  };
}

/** A filler rows event (see `growBinlogFile`): its bytes are made when asked for, never kept. */
function fillerEvent(offset: number, size: number, timestamp: number, serverId: number, crc: boolean): RawEvent {
  const logPos = (offset + size) % LOG_POS_MODULUS;
  const body = () => {
    const out = Buffer.alloc(size - (crc ? 4 : 0));
    out.writeUInt32LE(timestamp, 0);
    out[4] = EventType.WRITE_ROWS_V2;
    out.writeUInt32LE(serverId, 5);
    out.writeUInt32LE(size, 9);
    out.writeUInt32LE(logPos, 13);
    // Post-header: table id u48, flags u16; then the v2 extra data length (2: none), one column.
    out.writeUIntLE(FILLER_TABLE_ID, EVENT_HEADER_LENGTH, 6);
    out.writeUInt16LE(2, EVENT_HEADER_LENGTH + 8);
    out[EVENT_HEADER_LENGTH + 10] = 1;
    return out;
  };
  return {
    offset,
    timestamp,
    type: EventType.WRITE_ROWS_V2,
    serverId,
    size,
    logPos,
    flags: 0,
    get body() {
      return body();
    },
    get bytes() {
      return withChecksum(body(), crc);
    },
    get checksum() {
      return crc ? this.bytes.readUInt32LE(size - 4) : undefined;
    },
  };
}

/**
 * The file as it was while its server had written `pos` bytes of it (an event's end): the events
 * after are not there yet, nor its ROTATE.
 */
export function cutBinlogFile(file: BinlogFile, pos: number): BinlogFile {
  const events = file.events.filter((e) => e.offset + e.size <= pos);
  if (pos !== file.size && !file.events.some((e) => e.offset + e.size === pos)) throw new Error(`${file.path}: no event ends at ${pos}`);
  return { ...file, size: pos, events, gtids: file.gtids.filter((g) => g.offset < pos), rotateTo: pos === file.size ? file.rotateTo : undefined };
}

/** The name a file is served under when nothing else names it: `binlog.NNNNNN` from its trailing digits. */
export function defaultBinlogName(path: string): string {
  const digits = /(\d{1,6})$/.exec(basename(path))?.[1];
  return `binlog.${(digits ?? '1').padStart(6, '0')}`;
}

/** The file name after `name` in MySQL's numbering (`mysql-bin.000005` → `mysql-bin.000006`). */
export function nextBinlogName(name: string, step = 1): string {
  const match = /^(.*\.)(\d+)$/.exec(name);
  if (!match) return `${name}.000001`;
  const width = (match[2] as string).length;
  return `${match[1]}${String(Number(match[2]) + step).padStart(width, '0')}`;
}

function uuidText(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** Reads a `mysql::serialization` varint (libs/mysql/serialization/variable_length_integers.h). */
function readVarint(data: Buffer, at: { offset: number }): bigint {
  const first = data[at.offset] as number;
  at.offset += 1;
  let extra = 0;
  while (extra < 8 && (first >> extra) & 1) extra += 1;
  let rest = 0n;
  for (let i = 0; i < extra; i += 1) rest |= BigInt(data[at.offset + i] as number) << BigInt(8 * i);
  at.offset += extra;
  if (extra === 8) return rest;
  return (BigInt(first) >> BigInt(extra + 1)) | (rest << BigInt(8 - (extra + 1)));
}

/**
 * Decodes a GTID set in the wire/PREVIOUS_GTIDS encoding (sql/rpl_gtid_set.cc `Gtid_set::encode`):
 * n_sids u64, then per sid uuid[16], n_intervals u64, intervals of start u64, end-exclusive u64. In the
 * tagged format (8.3+; top byte of the first u64 is 1, the count in bits 8–55) each sid carries a tag
 * (a varint length, then the bytes) between the uuid and the interval count.
 */
export function decodeGtidSet(data: Buffer): GtidSource[] {
  if (data.length < 8) return [];
  const head = data.readBigUInt64LE(0);
  const tagged = head >> 56n === 1n;
  const count = Number(tagged ? (head >> 8n) & 0xffffffffffffn : head);
  const at = { offset: 8 };
  const sources: GtidSource[] = [];
  for (let i = 0; i < count; i += 1) {
    const uuid = uuidText(data.subarray(at.offset, at.offset + 16));
    at.offset += 16;
    let tag = '';
    if (tagged) {
      const length = Number(readVarint(data, at));
      tag = data.subarray(at.offset, at.offset + length).toString('ascii');
      at.offset += length;
    }
    const n = Number(data.readBigUInt64LE(at.offset));
    at.offset += 8;
    const intervals: GtidInterval[] = [];
    for (let j = 0; j < n; j += 1) {
      intervals.push({ start: data.readBigUInt64LE(at.offset), end: data.readBigUInt64LE(at.offset + 8) - 1n });
      at.offset += 16;
    }
    sources.push({ uuid, tag, intervals });
  }
  return sources;
}

/** Encodes a GTID set as `Gtid_set::encode` does (the tagged format only when a source has a tag). */
export function encodeGtidSet(sources: readonly GtidSource[]): Buffer {
  const tagged = sources.some((s) => s.tag !== '');
  const parts: Buffer[] = [];
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(tagged ? (1n << 56n) | (BigInt(sources.length) << 8n) | 1n : BigInt(sources.length));
  parts.push(head);
  for (const source of sources) {
    parts.push(Buffer.from(source.uuid.replace(/-/g, ''), 'hex'));
    if (tagged) parts.push(Buffer.from([source.tag.length << 1]), Buffer.from(source.tag, 'ascii'));
    const body = Buffer.alloc(8 + 16 * source.intervals.length);
    body.writeBigUInt64LE(BigInt(source.intervals.length), 0);
    source.intervals.forEach((interval, i) => {
      body.writeBigUInt64LE(interval.start, 8 + 16 * i);
      body.writeBigUInt64LE(interval.end + 1n, 16 + 16 * i);
    });
    parts.push(body);
  }
  return Buffer.concat(parts);
}

/** GTID_LOG_EVENT body: flags u8, uuid[16], gno i64 (libs/mysql/binlog/event/control_events.h). */
function decodeGtidEvent(data: Buffer): Gtid {
  return { uuid: uuidText(data.subarray(1, 17)), tag: '', gno: data.readBigInt64LE(17) };
}

/**
 * GTID_TAGGED_LOG_EVENT body: one `mysql::serialization` message (version varint, size varint, last
 * non-ignorable field id, then fields as a varint id + value in id order): 0 flags, 1 uuid (16 varints),
 * 2 gno (signed varint), 3 tag (length varint + bytes), further fields ignored here.
 */
function decodeTaggedGtidEvent(data: Buffer): Gtid {
  const at = { offset: 0 };
  readVarint(data, at); // format version
  const size = Number(readVarint(data, at));
  const end = Math.min(size, data.length);
  readVarint(data, at); // last non-ignorable field id
  let uuid = '';
  let gno = 0n;
  let tag = '';
  while (at.offset < end) {
    const id = Number(readVarint(data, at));
    if (id === 0) readVarint(data, at);
    else if (id === 1) {
      const bytes = Buffer.alloc(16);
      for (let i = 0; i < 16; i += 1) bytes[i] = Number(readVarint(data, at));
      uuid = uuidText(bytes);
    } else if (id === 2) {
      const u = readVarint(data, at);
      gno = u & 1n ? -(u >> 1n) - 1n : u >> 1n;
    } else if (id === 3) {
      const length = Number(readVarint(data, at));
      tag = data.subarray(at.offset, at.offset + length).toString('ascii');
      at.offset += length;
    } else break;
  }
  if (!uuid || gno <= 0n) throw new Error('GTID_TAGGED event without a uuid or gno');
  return { uuid, tag, gno };
}

/** Reads a length-encoded integer (the client/server protocol's `int<lenenc>`, used in rows events). */
function readLenenc(data: Buffer, at: { offset: number }): number {
  const first = data[at.offset] as number;
  at.offset += 1;
  if (first < 0xfb) return first;
  const width = first === 0xfc ? 2 : first === 0xfd ? 3 : 8;
  const value = Number(data.readUIntLE(at.offset, Math.min(width, 6)));
  at.offset += width;
  return value;
}

/**
 * TABLE_MAP body: table_id u48, flags u16, schema (u8 length, bytes, NUL), table (same), column count
 * lenenc, types, metadata (lenenc length + bytes), null bitmap, then optional metadata fields (type u8,
 * lenenc length, value). COLUMN_NAME is optional metadata type 4 (binlog_row_metadata=FULL only).
 */
function tableMapHasColumnNames(data: Buffer): boolean {
  const at = { offset: 8 };
  at.offset += (data[at.offset] as number) + 2;
  at.offset += (data[at.offset] as number) + 2;
  const columns = readLenenc(data, at);
  at.offset += columns;
  const metadata = readLenenc(data, at);
  at.offset += metadata + Math.ceil(columns / 8);
  while (at.offset < data.length) {
    const type = data[at.offset] as number;
    at.offset += 1;
    const length = readLenenc(data, at);
    if (type === 4) return true;
    at.offset += length;
  }
  return false;
}

/** Rows event v2 body: table_id u48, flags u16, extra-data length u16 (itself included), column count, bitmap(s). */
function rowsEventOmitsColumns(data: Buffer, update: boolean): boolean {
  const at = { offset: 8 };
  at.offset += data.readUInt16LE(at.offset);
  const columns = readLenenc(data, at);
  const width = Math.ceil(columns / 8);
  for (let image = 0; image < (update ? 2 : 1); image += 1) {
    for (let i = 0; i < columns; i += 1) {
      if (!(((data[at.offset + (i >> 3)] as number) >> (i & 7)) & 1)) return true;
    }
    at.offset += width;
  }
  return false;
}

/** Recomputes an event's CRC32 trailer after its header was changed (as the server's calc_event_checksum). */
export function withChecksum(body: Buffer, checksum: boolean): Buffer {
  if (!checksum) return body;
  const out = Buffer.alloc(body.length + 4);
  body.copy(out);
  out.writeUInt32LE(crc32(body), body.length);
  return out;
}

/** A copy of an event's header and body with other header flags. */
export function withFlags(body: Buffer, flags: number): Buffer {
  const out = Buffer.from(body);
  out.writeUInt16LE(flags, 17);
  return out;
}
