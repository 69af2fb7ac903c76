import type { PacketParser } from '@vlasky/zongji';
import { describe, expect, it } from 'vitest';
import { TransactionPayload } from '../../lib/source/mysql/binlog/transaction-payload.ts';

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

/** An inner event: a common header whose event_length is `length`, then zeros. */
const event = (length: number) => {
  const bytes = Buffer.alloc(length);
  bytes.writeUInt32LE(length, 9);
  return bytes;
};
const options = { timestamp: 1000, nextPosition: 500, size: 0, eventType: 40, serverId: 1 };

/** A payload event's body: SIZE, COMPRESSION_TYPE, UNCOMPRESSED_SIZE fields, END, then the payload. */
const body = (payload: Buffer, compression: number, uncompressed = payload.length) =>
  Buffer.concat([Buffer.from([1, 1, payload.length, 2, 1, compression, 3, 1, uncompressed, 0]), payload]);

describe('TRANSACTION_PAYLOAD events (binlog/transaction-payload.ts)', () => {
  it('lists the inner events of an uncompressed payload, each [start, end)', () => {
    const payload = Buffer.concat([event(19), event(30)]);
    const ev = new TransactionPayload(parserOf(body(payload, 255)), options, { useChecksum: false });
    expect(ev.getTypeName()).toBe('TransactionPayload');
    expect(ev.innerEvents).toEqual([
      [0, 19],
      [19, 49],
    ]);
    expect(ev.events?.equals(payload)).toBe(true);
  });

  it('refuses an unknown algorithm, a size its header contradicts and a truncated inner event', () => {
    const payload = event(19);
    expect(() => new TransactionPayload(parserOf(body(payload, 7)), options, { useChecksum: false })).toThrow(/unknown algorithm 7/);
    expect(() => new TransactionPayload(parserOf(body(payload, 255, 20)), options, { useChecksum: false })).toThrow(/header says 20/);
    expect(() => new TransactionPayload(parserOf(body(payload.subarray(0, 15), 255)), options, { useChecksum: false })).toThrow(/truncated event/);
  });
});
