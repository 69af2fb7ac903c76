import { EventEmitter } from 'node:events';
import type ZongJi from '@vlasky/zongji';
import { describe, expect, it } from 'vitest';
import { deliverPayloadEvents, payloadEventPackets, readPayloadBody, TransactionPayload } from '../../lib/source/mysql/binlog/transaction-payload.ts';
import type { PacketParser } from '../../lib/source/mysql/binlog/zongji-hooks.ts';

/** zongji's packet parser (lib/reader.js) over `body`, as a TRANSACTION_PAYLOAD's constructor gets it. */
function parserOf(body: Buffer): PacketParser {
  return {
    _buffer: body,
    _offset: 0,
    _packetEnd: body.length,
    parseUnsignedNumber(this: PacketParser, bytes: number) {
      const value = this._buffer.readUIntLE(this._offset, bytes);
      this._offset += bytes;
      return value;
    },
    parseLengthCodedNumber(this: PacketParser) {
      return this.parseUnsignedNumber(1);
    },
    parseBuffer(this: PacketParser, length = this._packetEnd - this._offset) {
      const start = this._offset;
      this._offset += length;
      return this._buffer.subarray(start, start + length);
    },
  };
}

/** An inner event: a common header of type `type` whose event_length is `length`, log_pos 0, then `fill`. */
const event = (length: number, type = 2, fill = 0) => {
  const bytes = Buffer.alloc(length, fill);
  bytes.fill(0, 0, 19);
  bytes[4] = type;
  bytes.writeUInt32LE(length, 9);
  return bytes;
};
const options = { timestamp: 1000, nextPosition: 500, size: 0, eventType: 40, serverId: 1 };

/** A payload event's body: SIZE, COMPRESSION_TYPE, UNCOMPRESSED_SIZE fields, END, then the payload. */
const body = (payload: Buffer, compression: number, uncompressed = payload.length) =>
  Buffer.concat([Buffer.from([1, 1, payload.length, 2, 1, compression, 3, 1, uncompressed, 0]), payload]);

/** The packet a server sends for a payload event: OK byte, common header (log_pos 4000), body, checksum. */
function payloadPacket(payloadBody: Buffer, checksum: boolean): Buffer {
  const header = Buffer.alloc(19);
  header.writeUInt32LE(1_700_000_000, 0);
  header[4] = 40;
  header.writeUInt32LE(19 + payloadBody.length + (checksum ? 4 : 0), 9);
  header.writeUInt32LE(4000, 13);
  return Buffer.concat([Buffer.from([0]), header, payloadBody, Buffer.from(checksum ? [1, 2, 3, 4] : [])]);
}

describe('TRANSACTION_PAYLOAD events (binlog/transaction-payload.ts)', () => {
  it('reads the inner events of an uncompressed payload, each [start, end)', () => {
    const payload = Buffer.concat([event(19), event(30)]);
    const read = readPayloadBody(body(payload, 255));
    expect(read.inner).toEqual([
      [0, 19],
      [19, 49],
    ]);
    expect(read.events.equals(payload)).toBe(true);
  });

  it('refuses an unknown algorithm, a size its header contradicts and a truncated inner event', () => {
    const payload = event(19);
    expect(() => readPayloadBody(body(payload, 7))).toThrow(/unknown algorithm 7/);
    expect(() => readPayloadBody(body(payload, 255, 20))).toThrow(/header says 20/);
    expect(() => readPayloadBody(body(payload.subarray(0, 15), 255))).toThrow(/truncated event/);
  });

  it("becomes one packet per inner event, then the payload emptied with the server's header, checksums in place", () => {
    const inner = [event(25, 2, 7), event(40, 19, 8), event(31, 16, 9)];
    const packet = payloadPacket(body(Buffer.concat(inner), 255), true);
    const packets = payloadEventPackets(packet, 0, packet.length, true);
    expect(packets).toHaveLength(4);
    for (const [i, bytes] of inner.entries()) {
      // Framed as the server frames an event of a stream with checksums: its length counts the checksum.
      const framed = Buffer.concat([Buffer.from([0]), bytes, Buffer.alloc(4)]);
      framed.writeUInt32LE(bytes.length + 4, 10);
      expect(packets?.[i]?.equals(framed)).toBe(true);
    }
    const emptied = packets?.[3] as Buffer;
    // The header as sent (type, length, log_pos): the payload's end is the transaction's end.
    expect(emptied.subarray(0, 20).equals(packet.subarray(0, 20))).toBe(true);
    const ev = new TransactionPayload(parserOf(emptied.subarray(20)), options, { useChecksum: true });
    expect(ev.getTypeName()).toBe('TransactionPayload');
    expect([ev.compressionType, ev.uncompressedSize]).toEqual([255, 96]);
    // Emptied once, it stays as it is; so does any other event, and a payload that cannot be read.
    expect(payloadEventPackets(emptied, 0, emptied.length, true)).toBeUndefined();
    const query = Buffer.concat([Buffer.from([0]), event(40)]);
    expect(payloadEventPackets(query, 0, query.length, false)).toBeUndefined();
    const broken = payloadPacket(body(event(19), 7), false);
    expect(payloadEventPackets(broken, 0, broken.length, false)).toBeUndefined();
  });

  it('refuses a payload whose events were not delivered before it, and reports what cannot be read', () => {
    expect(() => new TransactionPayload(parserOf(body(event(19), 255)), options, { useChecksum: false })).toThrow(/1 events that were not delivered/);
    expect(() => new TransactionPayload(parserOf(body(event(19), 7)), options, { useChecksum: false })).toThrow(/unknown algorithm 7/);
  });
});

/** mysql2's packet, as far as the dump connection reads it. */
class FakePacket {
  numPackets = 1;
  offset: number;
  constructor(
    readonly sequenceId: number,
    readonly buffer: Buffer,
    readonly start: number,
    readonly end: number,
  ) {
    this.offset = start + 4;
  }
}

/** mysql2's connection as far as paused packets go (lib/base/connection.js): queued while paused, replayed through handlePacket. */
class FakeConnection {
  _paused = false;
  _paused_packets: FakePacket[] & { unshift(packet: FakePacket): number } = [];
  /** Event type codes handed over, in order; a TABLE_MAP pauses, as zongji's INFORMATION_SCHEMA lookup does. */
  readonly handled: number[] = [];
  handlePacket(packet: FakePacket | null): void {
    if (this._paused) {
      this._paused_packets.push(packet as FakePacket);
      return;
    }
    const type = packet?.buffer[packet.offset + 5] as number;
    this.handled.push(type);
    if (type === 19) this._paused = true;
  }
  resume(): void {
    this._paused = false;
    for (let packet = this._paused_packets.shift(); packet; packet = this._paused_packets.shift()) {
      this.handlePacket(packet);
      if (this._paused) return;
    }
  }
}

describe("a compressed transaction's events on the dump connection (deliverPayloadEvents)", () => {
  it('wait ahead of the packets that arrive while a TABLE_MAP of theirs pauses the connection', () => {
    const connection = new FakeConnection();
    const zongji = Object.assign(new EventEmitter(), { connection, useChecksum: false });
    deliverPayloadEvents(zongji as unknown as ZongJi);
    zongji.emit('ready');
    const frame = (bytes: Buffer) => new FakePacket(3, Buffer.concat([Buffer.alloc(4), bytes]), 0, 4 + bytes.length);
    const payload = payloadPacket(body(Buffer.concat([event(25, 2), event(40, 19), event(50, 30), event(31, 16)]), 255), false);
    connection.handlePacket(frame(payload));
    // The TABLE_MAP paused the connection; the next event from the server arrives meanwhile.
    expect(connection.handled).toEqual([2, 19]);
    connection.handlePacket(frame(Buffer.concat([Buffer.from([0]), event(79, 33)])));
    connection.resume();
    expect(connection.handled).toEqual([2, 19, 30, 16, 40, 33]);
  });
});
