import zlib from 'node:zlib';
import type ZongJi from '@vlasky/zongji';
import { decompress as fzstdDecompress } from 'fzstd';
import type { EventParserOptions, PacketParser } from './zongji-hooks.ts';

/** TRANSACTION_PAYLOAD_EVENT's type code (MySQL 8.0.20+, binlog_transaction_compression=ON). */
export const TRANSACTION_PAYLOAD_EVENT = 40;

/** The header's fields: net_field_length type, length of the value, value; type 0 ends the header. */
const FIELD = { END: 0, SIZE: 1, COMPRESSION_TYPE: 2, UNCOMPRESSED_SIZE: 3 } as const;
const COMPRESSION = { ZSTD: 0, NONE: 255 } as const;
/** An event's common header: timestamp 4, type 1 (at 4), server id 4, event_length 4 (at 9), log_pos 4, flags 2. */
const COMMON_HEADER = 19;
const CHECKSUM = 4;

// Node 22.15+ (and so Lambda's nodejs22.x) has zstd in zlib, native and faster; older Node has
// none, and fzstd (pure JavaScript, so it runs on any platform, arm64 included) decodes the same frames.
const nativeZstd = (zlib as { zstdDecompressSync?: (buffer: Buffer) => Buffer }).zstdDecompressSync;
const zstdDecompress = nativeZstd ? (buffer: Buffer) => nativeZstd(buffer) : (buffer: Buffer) => Buffer.from(fzstdDecompress(buffer));

/*
 * A compressed transaction: its body is a header of type-length-value fields, then the payload,
 * the transaction's events (zstd-compressed, or not), each with a common header whose log_pos is 0
 * and without a checksum (libs/mysql/binlog/event/compression/payload_event_buffer_istream.h,
 * control_events.h Transaction_payload_event).
 *
 * The events reach zongji as packets of their own (`deliverPayloadEvents`): when the dump connection
 * hands zongji the payload's packet, it gets the transaction's events one by one, then the payload
 * event emptied of them, whose end is the transaction's end. So every event takes zongji's ordinary
 * path: its GTID and position bookkeeping, a TABLE_MAP's INFORMATION_SCHEMA query (which pauses the
 * connection: the events left wait at the head of mysql2's queue of paused packets, ahead of those
 * that arrived meanwhile), the listeners.
 */

/** A payload event's body (checksum excluded), read. */
export interface PayloadBody {
  /** 0 = zstd, 255 = none. */
  readonly compressionType: number;
  readonly uncompressedSize: number | undefined;
  /** The uncompressed events. */
  readonly events: Buffer;
  /** [start, end) of each event in `events`. */
  readonly inner: readonly [start: number, end: number][];
}

/** Reads a payload event's body (from its header's end to its checksum); throws on anything it cannot trust. */
export function readPayloadBody(body: Buffer): PayloadBody {
  let at = 0;
  const need = (bytes: number) => {
    if (at + bytes > body.length) throw new Error(`Truncated TransactionPayload event: ${bytes} bytes needed, ${body.length - at} available`);
  };
  // net_field_length: below 251 one byte; 252, 253, 254 announce 2, 3 and 8 bytes.
  const number = () => {
    need(1);
    const first = body[at++] as number;
    const size = first === 252 ? 2 : first === 253 ? 3 : first === 254 ? 8 : 0;
    if (!size) return first;
    need(size);
    const value = size === 8 ? Number(body.readBigUInt64LE(at)) : body.readUIntLE(at, size);
    at += size;
    return value;
  };
  let payloadSize: number | undefined;
  let compressionType: number | undefined;
  let uncompressedSize: number | undefined;
  for (;;) {
    const type = number();
    if (type === FIELD.END) break;
    const length = number();
    need(length);
    const fieldEnd = at + length;
    if (type === FIELD.SIZE) payloadSize = number();
    else if (type === FIELD.COMPRESSION_TYPE) compressionType = number();
    else if (type === FIELD.UNCOMPRESSED_SIZE) uncompressedSize = number();
    // Fields added by later servers are skipped by their length.
    at = fieldEnd;
  }
  if (payloadSize === undefined || compressionType === undefined) throw new Error('TransactionPayload event without its payload size or compression type');
  need(payloadSize);
  const payload = body.subarray(at, at + payloadSize);
  let events: Buffer;
  if (payloadSize === 0) events = Buffer.alloc(0);
  else if (compressionType === COMPRESSION.ZSTD) events = zstdDecompress(payload);
  else if (compressionType === COMPRESSION.NONE) events = Buffer.from(payload);
  else throw new Error(`TransactionPayload event compressed with unknown algorithm ${compressionType}`);
  if (payloadSize > 0 && uncompressedSize !== undefined && events.length !== uncompressedSize)
    throw new Error(`TransactionPayload decompressed to ${events.length} bytes, its header says ${uncompressedSize}`);
  const inner: [number, number][] = [];
  for (let start = 0; start < events.length; ) {
    const length = start + COMMON_HEADER <= events.length ? events.readUInt32LE(start + 9) : 0;
    if (length < COMMON_HEADER || start + length > events.length)
      throw new Error(`TransactionPayload holds a truncated event at byte ${start} of ${events.length}`);
    inner.push([start, start + length]);
    start += length;
  }
  return { compressionType, uncompressedSize, events, inner };
}

/** What the parser is told of the stream besides the packet: whether each event ends with a CRC32. */
export interface StreamFacts {
  readonly useChecksum: boolean;
}

/**
 * The TRANSACTION_PAYLOAD event as zongji delivers it, after the transaction's events: its end is
 * the transaction's end. Registered through zongji's `setEventParser`; the class's name is the
 * event's name. It reads the body to report what `deliverPayloadEvents` could not (the same error);
 * one whose events were not delivered before it is refused.
 */
export class TransactionPayload {
  readonly timestamp: number;
  readonly nextPosition: number;
  readonly size: number;
  /** 0 = zstd, 255 = none. */
  readonly compressionType: number;
  readonly uncompressedSize: number | undefined;

  constructor(parser: PacketParser, options: EventParserOptions, stream: StreamFacts) {
    this.timestamp = options.timestamp;
    this.nextPosition = options.nextPosition;
    this.size = options.size;
    const end = parser._packetEnd - (stream.useChecksum ? CHECKSUM : 0);
    const body = readPayloadBody(parser._buffer.subarray(parser._offset, Math.max(end, parser._offset)));
    if (body.inner.length > 0)
      throw new Error(`TransactionPayload with ${body.inner.length} events that were not delivered before it: the stream has no deliverPayloadEvents`);
    this.compressionType = body.compressionType;
    this.uncompressedSize = body.uncompressedSize;
    // The checksum, if any, is the packet's last bytes.
    if (parser._offset < end) parser._offset = end;
  }

  getTypeName(): 'TransactionPayload' {
    return 'TransactionPayload';
  }

  getEventName(): 'transactionpayload' {
    return 'transactionpayload';
  }
}

// zongji names an event by its class's name, which a bundler may change (esbuild makes this one
// TransactionPayload2 beside zongji's own class): the name is set, not inferred.
Object.defineProperty(TransactionPayload, 'name', { value: 'TransactionPayload' });

/** `value` as a net_field_length. */
function lengthCoded(value: number): Buffer {
  if (value < 251) return Buffer.from([value]);
  const size = value < 2 ** 16 ? 2 : value < 2 ** 24 ? 3 : 8;
  const bytes = Buffer.alloc(1 + size);
  bytes[0] = size === 2 ? 252 : size === 3 ? 253 : 254;
  if (size === 8) bytes.writeBigUInt64LE(BigInt(value), 1);
  else bytes.writeUIntLE(value, 1, size);
  return bytes;
}

/** A payload's body emptied of its events: SIZE 0, its COMPRESSION_TYPE and UNCOMPRESSED_SIZE, END. */
function emptied(body: PayloadBody): Buffer {
  const field = (type: number, value: number) => {
    const bytes = lengthCoded(value);
    return Buffer.concat([Buffer.from([type]), lengthCoded(bytes.length), bytes]);
  };
  const size = body.uncompressedSize === undefined ? [] : [field(FIELD.UNCOMPRESSED_SIZE, body.uncompressedSize)];
  return Buffer.concat([field(FIELD.SIZE, 0), field(FIELD.COMPRESSION_TYPE, body.compressionType), ...size, Buffer.from([FIELD.END])]);
}

/**
 * The packets the server's packet of a payload event becomes (see the header), each as the server
 * frames an event after the OK byte: the transaction's events, with a checksum of zeros (counted in
 * their event_length) when the stream has checksums, which zongji skips unread; then the payload
 * event emptied, its header as sent. Undefined for any other packet, an emptied payload, or one
 * that cannot be read (zongji then meets the same error, and reports it). `packet` runs from the OK
 * byte at `offset` to `end`.
 */
export function payloadEventPackets(packet: Buffer, offset: number, end: number, useChecksum: boolean): Buffer[] | undefined {
  const bodyStart = offset + 1 + COMMON_HEADER;
  if (end < bodyStart || packet[offset] !== 0 || packet[offset + 1 + 4] !== TRANSACTION_PAYLOAD_EVENT) return undefined;
  const checksum = useChecksum ? CHECKSUM : 0;
  let body: PayloadBody;
  try {
    body = readPayloadBody(packet.subarray(bodyStart, Math.max(end - checksum, bodyStart)));
  } catch {
    return undefined;
  }
  if (body.inner.length === 0) return undefined;
  const events = body.inner.map(([start, stop]) => {
    const framed = Buffer.alloc(1 + stop - start + checksum);
    body.events.copy(framed, 1, start, stop);
    framed.writeUInt32LE(stop - start + checksum, 1 + 9);
    return framed;
  });
  events.push(Buffer.concat([packet.subarray(offset, bodyStart), emptied(body), Buffer.alloc(checksum)]));
  return events;
}

/** The parts of mysql2's packet the dump connection reads: a 4-byte frame header at `start`, the OK byte at `offset`, up to `end`. */
interface DumpPacket {
  sequenceId: number;
  numPackets: number;
  buffer: Buffer;
  offset: number;
  end: number;
}
type PacketClass = new (sequenceId: number, buffer: Buffer, start: number, end: number) => DumpPacket;
/** The parts of mysql2's connection a dump's packets go through. */
interface DumpConnection {
  handlePacket(packet: DumpPacket | null): void;
  _paused: boolean;
  _paused_packets: { unshift(packet: DumpPacket): void };
}

/** Packets made from a payload's events: they have no offset of their own in the binlog file. */
const fromPayload = new WeakSet<object>();

/** Whether `packet` holds one of a compressed transaction's events (see `deliverPayloadEvents`). */
export function isPayloadEvent(packet: object): boolean {
  return fromPayload.has(packet);
}

/** mysql2 packets of the same class as `packet`, one per event of `events` (the last its emptied payload). */
function framed(packet: DumpPacket, events: Buffer[]): DumpPacket[] {
  const Packet = packet.constructor as PacketClass;
  return events.map((event, i) => {
    const last = i === events.length - 1;
    const next = new Packet(packet.sequenceId, Buffer.concat([Buffer.alloc(4), event]), 0, 4 + event.length);
    // The server's packet counts once in mysql2's sequence check: with the last one made from it.
    next.numPackets = last ? packet.numPackets : 0;
    if (!last) fromPayload.add(next);
    return next;
  });
}

/**
 * Makes zongji's dump connection hand over a compressed transaction's events as packets of their own
 * (see the header), from each start of the stream on. zongji's `ready` comes when the connection
 * is set up, before the dump command is sent.
 */
export function deliverPayloadEvents(zongji: ZongJi): void {
  zongji.on('ready', () => {
    const connection = (zongji as unknown as { connection: DumpConnection | null }).connection;
    if (!connection) return;
    const handle = connection.handlePacket.bind(connection);
    connection.handlePacket = (packet) => {
      const events = packet && !connection._paused ? payloadEventPackets(packet.buffer, packet.offset, packet.end, zongji.useChecksum) : undefined;
      if (!packet || !events) return handle(packet);
      const packets = framed(packet, events);
      for (const [i, next] of packets.entries()) {
        if (connection._paused) {
          // A TABLE_MAP's query paused the connection: the rest go first when it resumes.
          for (const waiting of packets.slice(i).reverse()) connection._paused_packets.unshift(waiting);
          return;
        }
        handle(next);
      }
    };
  });
}
