import { describe, expect, it } from 'vitest';
import { gtidCommit } from '../../lib/source/mysql/binlog-reader.ts';

/*
 * A MySQL GTID event's original commit time, read from the dump packet as the server sends it
 * (libbinlogevents Gtid_event): the OK byte, the 19-byte header (type 33, log_pos), the 42-byte
 * post-header (flags, uuid, gno, logical clock type 2, last_committed, sequence_number), then the
 * immediate commit time in 7 bytes, whose top bit says the original one follows in 7 more.
 */

const int56 = (value: number, flag = false) => {
  const bytes = Buffer.alloc(7);
  bytes.writeUIntLE(value % 2 ** 48, 0, 6);
  bytes[6] = Math.floor(value / 2 ** 48) | (flag ? 0x80 : 0);
  return bytes;
};

/** A dump packet (3 bytes of something before it, the 4-byte packet header) holding a GTID event of `type` with `times` after its post-header. */
function packet(times: Buffer, type = 33, clock = 2) {
  const header = Buffer.alloc(19);
  header[4] = type;
  header.writeUInt32LE(19 + 42 + times.length, 9);
  header.writeUInt32LE(7321, 13); // log_pos
  const post = Buffer.alloc(42);
  post[25] = clock;
  const bytes = Buffer.concat([Buffer.from([9, 9, 9]), Buffer.alloc(4), Buffer.from([0]), header, post, times, Buffer.from([0x21, 0, 0, 0, 0, 0, 0, 0])]);
  return { buffer: bytes, start: 3, end: bytes.length };
}

describe('gtidCommit', () => {
  const original = 1_796_448_645_000_001;
  const immediate = 1_796_448_645_123_456;

  it('reads the original commit time that follows the immediate one (a replica’s event)', () => {
    expect(gtidCommit(packet(Buffer.concat([int56(immediate, true), int56(original)])))).toEqual({ nextPosition: 7321, us: original });
  });

  it('takes the immediate commit time as the original one when no original follows (the server that committed it)', () => {
    expect(gtidCommit(packet(int56(immediate)))).toEqual({ nextPosition: 7321, us: immediate });
  });

  it('reads nothing from other events, events without a logical clock, a flagged time cut short, or an original time of 0', () => {
    expect(gtidCommit(packet(int56(immediate), 34))).toBeUndefined(); // ANONYMOUS_GTID_LOG_EVENT
    expect(gtidCommit(packet(int56(immediate), 162))).toBeUndefined(); // MariaDB GTID_EVENT
    expect(gtidCommit(packet(int56(immediate), 33, 0))).toBeUndefined();
    expect(gtidCommit(packet(Buffer.concat([int56(immediate, true), int56(0)])))).toBeUndefined(); // first committed before 8.0.1: unknown
    const cut = packet(int56(immediate, true));
    expect(gtidCommit({ ...cut, end: cut.end - 8 })).toBeUndefined();
    expect(gtidCommit({ buffer: Buffer.from([0, 0, 0, 0, 0xff, 1, 2]), start: 0, end: 7 })).toBeUndefined();
  });
});
