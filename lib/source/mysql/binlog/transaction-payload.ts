import zlib from 'node:zlib';
import type { EventParserOptions, PacketParser } from '@vlasky/zongji';
import { decompress as fzstdDecompress } from 'fzstd';

/** TRANSACTION_PAYLOAD_EVENT's type code (MySQL 8.0.20+, binlog_transaction_compression=ON). */
export const TRANSACTION_PAYLOAD_EVENT = 40;

/** The header's fields: net_field_length type, length of the value, value; type 0 ends the header. */
const FIELD = { END: 0, SIZE: 1, COMPRESSION_TYPE: 2, UNCOMPRESSED_SIZE: 3 } as const;
const COMPRESSION = { ZSTD: 0, NONE: 255 } as const;
/** An event's common header: timestamp 4, type 1, server id 4, event_length 4 (at 9), log_pos 4, flags 2. */
const COMMON_HEADER = 19;

// Node 22.15+ (and so Lambda's nodejs22.x) has zstd in zlib, native and faster; older Node has
// none, and fzstd (pure JavaScript, so it runs on any platform, arm64 included) decodes the same frames.
const nativeZstd = (zlib as { zstdDecompressSync?: (buffer: Buffer) => Buffer }).zstdDecompressSync;
const zstdDecompress = nativeZstd ? (buffer: Buffer) => nativeZstd(buffer) : (buffer: Buffer) => Buffer.from(fzstdDecompress(buffer));

/** What the parser is told of the stream besides the packet: whether each event ends with a CRC32. */
export interface StreamFacts {
  readonly useChecksum: boolean;
}

/**
 * A compressed transaction: its body is a header of type-length-value fields, then the payload,
 * the transaction's events (zstd-compressed, or not), each with a common header whose log_pos is 0
 * and without a checksum (libs/mysql/binlog/event/compression/payload_event_buffer_istream.h,
 * control_events.h Transaction_payload_event). The events are kept undecoded: zongji's packet
 * layer parses and delivers them one by one, in order, through its ordinary event path, before
 * this event itself, whose end is the transaction's end. Registered through zongji's
 * `setEventParser`; the class's name is the event's name.
 */
export class TransactionPayload {
  readonly timestamp: number;
  readonly nextPosition: number;
  readonly size: number;
  /** 0 = zstd, 255 = none. */
  readonly compressionType: number;
  readonly uncompressedSize: number | undefined;
  /** [start, end) of each inner event in `events`. */
  readonly innerEvents: [start: number, end: number][] = [];
  /** The uncompressed events; zongji drops them once it has delivered them. */
  events: Buffer | undefined;

  constructor(parser: PacketParser, options: EventParserOptions, stream: StreamFacts) {
    this.timestamp = options.timestamp;
    this.nextPosition = options.nextPosition;
    this.size = options.size;
    const end = parser._packetEnd - (stream.useChecksum ? 4 : 0);
    const need = (bytes: number) => {
      if (parser._offset + bytes > end) throw new Error(`Truncated TransactionPayload event: ${bytes} bytes needed, ${end - parser._offset} available`);
    };
    const number = () => parser.parseLengthCodedNumber() ?? 0;
    let payloadSize: number | undefined;
    let compressionType: number | undefined;
    let uncompressedSize: number | undefined;
    for (;;) {
      need(1);
      const type = number();
      if (type === FIELD.END) break;
      const length = number();
      need(length);
      const fieldEnd = parser._offset + length;
      if (type === FIELD.SIZE) payloadSize = number();
      else if (type === FIELD.COMPRESSION_TYPE) compressionType = number();
      else if (type === FIELD.UNCOMPRESSED_SIZE) uncompressedSize = number();
      // Fields added by later servers are skipped by their length.
      parser._offset = fieldEnd;
    }
    if (payloadSize === undefined || compressionType === undefined) throw new Error('TransactionPayload event without its payload size or compression type');
    this.compressionType = compressionType;
    this.uncompressedSize = uncompressedSize;
    need(payloadSize);
    const payload = parser.parseBuffer(payloadSize);
    let events: Buffer;
    if (compressionType === COMPRESSION.ZSTD) events = zstdDecompress(payload);
    else if (compressionType === COMPRESSION.NONE) events = Buffer.from(payload);
    else throw new Error(`TransactionPayload event compressed with unknown algorithm ${compressionType}`);
    if (uncompressedSize !== undefined && events.length !== uncompressedSize)
      throw new Error(`TransactionPayload decompressed to ${events.length} bytes, its header says ${uncompressedSize}`);
    for (let at = 0; at < events.length; ) {
      const length = at + COMMON_HEADER <= events.length ? events.readUInt32LE(at + 9) : 0;
      if (length < COMMON_HEADER || at + length > events.length)
        throw new Error(`TransactionPayload holds a truncated event at byte ${at} of ${events.length}`);
      this.innerEvents.push([at, at + length]);
      at += length;
    }
    this.events = events;
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
