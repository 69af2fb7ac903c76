import { describe, expect, it } from 'vitest';
import type { BinlogPosition } from '../../lib/core/position.ts';
import { epochPart, runControlPrefix, seq, seqAfter, seqPrefix, snapshotPagePrefix, snapshotSeq } from '../../lib/format/seq.ts';

// The ordering argument of docs/FORMAT.md ("Ordering"), checked on the strings themselves.

const at = (file: number, pos: number): BinlogPosition => ({ file: `binlog.${String(file).padStart(6, '0')}`, pos });
/** A transaction whose first event ends at `firstEventEnd`; its changes get indexes 0, 1, … */
const txn = (file: number, firstEventEnd: number, changes: number) =>
  Array.from({ length: changes }, (_, i) => seq(seqPrefix(0, at(file, 0).file, firstEventEnd), i));
const row = (watermark: BinlogPosition, page: number, index: number, chunk = 0, table = 'shop.orders', job = '20261130120000-ab12') =>
  snapshotSeq(snapshotPagePrefix(0, watermark, job, table, chunk, page), index);

describe('seq: binlog events and snapshot rows around a watermark', () => {
  // Binlog file 7: T1 [GTID ends 120 … COMMIT ends 300], L = 300, T2 [GTID ends 330 … ends 600].
  const before = txn(7, 120, 3);
  const L = at(7, 300);
  const after = txn(7, 330, 3);
  const page = [row(L, 1, 0), row(L, 1, 1), row(L, 1, 4_999_999)];

  it('a change committed before the watermark sorts before the page rows, one after it sorts after them', () => {
    const all = [...before, ...page, ...after];
    expect([...all].sort()).toEqual(all);
  });

  it('holds across a rotation: a transaction in the next file sorts after rows read at the end of this one', () => {
    const next = txn(8, 4 + 90, 1); // a small offset in a later file
    expect(page.every((r) => r < (next[0] as string))).toBe(true);
    const early = txn(6, 999_999_999, 1); // a large offset in an earlier file
    expect(page.every((r) => r > (early[0] as string))).toBe(true);
  });

  it('holds past 4 GiB in one file: a transaction whose first event ends past 2^32 sorts after one before it', () => {
    const G = 2 ** 32;
    const below = txn(7, G - 44, 2);
    const exactly = txn(7, G, 1);
    const past = txn(7, G + 79, 2);
    const far = txn(7, 5 * G + 1, 1);
    const all = [...below, ...exactly, ...past, ...far];
    expect([...all].sort()).toEqual(all);
    expect(past[0]).toBe('0000000007.004294967375.0000000000');
    const watermark = at(7, G + 31);
    expect(row(watermark, 1, 0) > (exactly[0] as string) && row(watermark, 1, 0) < (past[0] as string)).toBe(true);
  });

  it('a later page, a later chunk or a later watermark of the same key sorts after an earlier one', () => {
    expect(row(L, 2, 0) > row(L, 1, 9_999_999)).toBe(true);
    expect(row(L, 1, 0, 1) > row(L, 99_999_999, 0, 0)).toBe(true);
    // Re-snapshotting a key later wins over the earlier snapshot's row.
    expect(row(at(7, 301), 1, 0, 0, 'shop.orders', '20261130120000-0000') > row(L, 1, 0, 0, 'shop.orders', '20261130120000-ffff')).toBe(true);
  });

  it('two tables of one snapshot never share a seq', () => {
    expect(row(L, 1, 0, 0, 'shop.orders')).not.toBe(row(L, 1, 0, 0, 'shop.items'));
  });

  it('the verify sentinel lies after every event and row at or before S, before every later transaction', () => {
    const sentinel = seqAfter(0, L);
    expect(before.every((s) => s < sentinel)).toBe(true);
    expect(page.every((s) => s < sentinel)).toBe(true);
    expect(after.every((s) => s > sentinel)).toBe(true);
    expect((txn(7, 301, 1)[0] as string) > sentinel).toBe(true);
  });
});

describe('seq: binlog order', () => {
  it('orders transactions by (file number, offset) and changes by index, as numbers', () => {
    const ordered = [
      ...txn(9, 999_999, 11), // indexes 0..10: 9 < 10 as strings too
      ...txn(9, 1_000_000, 1),
      ...txn(10, 4, 1),
      ...txn(1_000_000, 4, 1),
    ];
    expect([...ordered].sort()).toEqual(ordered);
    expect(new Set(ordered).size).toBe(ordered.length);
  });

  it('has fixed widths, so string order is numeric order up to each field’s limit', () => {
    expect(seq(seqPrefix(0, 'binlog.000001', 4), 0)).toBe('0000000001.000000000004.0000000000');
    expect(seq(seqPrefix(0, 'binlog.9999999999', 999_999_999_999), 9_999_999_999)).toBe('9999999999.999999999999.9999999999');
    expect(row(at(1, 4), 1, 0, 2, 't', 'j')).toMatch(/^0000000001\.000000000004\.r\.j\.[0-9a-f]{8}\.0002\.00000001\.0000000$/);
    const lengths = new Set([row(at(1, 4), 1, 0), row(at(123, 456_789), 12_345, 6_789_012, 321)].map((s) => s.length));
    expect(lengths.size).toBe(1);
  });
});

describe('seq', () => {
  it('sorts as strings exactly as (file number, transaction offset, index) sort as numbers', () => {
    const cases: [string, number, number][] = [
      ['binlog.000009', 999_999, 9],
      ['binlog.000009', 1_000_000, 0],
      ['binlog.000009', 1_000_000, 10],
      ['binlog.000010', 4, 0],
      ['binlog.1000000', 4, 0],
    ];
    const seqs = cases.map(([file, pos, i]) => seq(seqPrefix(0, file, pos), i));
    expect([...seqs].sort()).toEqual(seqs);
    expect(new Set(seqs).size).toBe(seqs.length);
  });
});

describe('seq: history epochs', () => {
  // Epoch 0 wrote file 7 up to offset 900; RESET MASTER restarted the binlog at file 1, which a
  // `state reset` (epoch 1) and later a failover to a server at file 3 (epoch 2) followed.
  const old = [...txn(7, 120, 2), row(at(7, 300), 1, 0), ...txn(7, 900, 1)];
  const epoch = (e: number, file: number, pos: number, i = 0) => seq(seqPrefix(e, `binlog.${String(file).padStart(6, '0')}`, pos), i);
  const first = [
    seq(runControlPrefix(1, at(1, 4), 12), 0),
    epoch(1, 1, 120),
    snapshotSeq(snapshotPagePrefix(1, at(1, 200), 'j', 'shop.orders', 0, 1), 0),
    epoch(1, 1, 300, 3),
  ];
  const second = [epoch(2, 1, 4), epoch(2, 3, 77)];

  it('every event of a later epoch sorts after every event of an earlier one, whatever its file and offset', () => {
    const all = [...old, ...first, ...second];
    expect([...all].sort()).toEqual(all);
  });

  it('epoch 0 writes the form output had before epochs, so that output stays in order', () => {
    expect(epoch(0, 1, 4)).toBe('0000000001.000000000004.0000000000');
    expect(epochPart(0)).toBe('');
    expect(epoch(1, 1, 4)).toBe('h000001.0000000001.000000000004.0000000000');
  });

  it('orders epochs as numbers up to its width, and refuses one beyond it', () => {
    const seqs = [1, 9, 10, 999_999].map((e) => epoch(e, 1, 4));
    expect([...seqs].sort()).toEqual(seqs);
    expect(() => epochPart(1_000_000)).toThrow(RangeError);
    expect(() => epochPart(-1)).toThrow(RangeError);
  });

  it("the verify sentinel of an epoch lies after all of it and before the next epoch's first event", () => {
    const sentinel = seqAfter(1, at(1, 300));
    expect([...old, ...first].every((s) => s < sentinel)).toBe(true);
    expect(second.every((s) => s > sentinel)).toBe(true);
    // The same position in epoch 0 lies below the whole of epoch 1.
    expect(first.every((s) => s > seqAfter(0, at(1_000_000, 4)))).toBe(true);
  });
});
