import { describe, expect, it } from 'vitest';
import { GtidPosition, GtidSet, isMariadbGtidPosition, parseGtid, parseMariadbGtid } from '../../lib/core/gtid-set.ts';

const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const B = '2c256447-3f0d-431b-9a25-bddf1f1f6ef6';
const T = '55778904-0299-11f1-b1b8-4ef0c4956feb';

describe('GtidSet', () => {
  it('parses and prints sets as MySQL does: uuids sorted, intervals coalesced, case and newlines normalized', () => {
    const set = GtidSet.parse(`3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11-18,\n${B}:1-27`);
    expect(set.toString()).toBe(`${B}:1-27,${A}:1-5:11-18`);
    expect(GtidSet.parse(`${A}:1-3:4-5:7,${A}:6`).toString()).toBe(`${A}:1-7`);
    expect(GtidSet.parse('').isEmpty).toBe(true);
    expect(GtidSet.parse(`${A}:9223372036854775807`).toString()).toBe(`${A}:9223372036854775807`);
  });

  it('parses tagged sets (8.3+), printing the untagged intervals first and tags sorted', () => {
    // The 9.6 fixture's Previous_gtids, as the README gives it.
    const set = GtidSet.parse(`${T}:1-13, ${T}:mytag:1-2`);
    expect(set.toString()).toBe(`${T}:1-13:mytag:1-2`);
    // A tag names the intervals after it, up to the next tag (Gtid_set::add_gtid_text).
    expect(GtidSet.parse(`${T}:Zeta:1:alpha:2-3:4,${T}:7`).toString()).toBe(`${T}:7:alpha:2-4:zeta:1`);
    expect(GtidSet.parse(`${T}:mytag:1-2`).toString()).toBe(`${T}:mytag:1-2`);
    expect(set.contains(`${T}:mytag:2`)).toBe(true);
    expect(set.contains(`${T}:mytag:3`)).toBe(false);
    expect(set.contains(`${T}:13`)).toBe(true);
    expect(set.add(`${T}:mytag:3`).toString()).toBe(`${T}:1-13:mytag:1-3`);
  });

  it('refuses malformed text, naming the part', () => {
    expect(() => GtidSet.parse(`${A}`)).toThrow(/is not uuid:interval/);
    expect(() => GtidSet.parse(`${A}:5-3`)).toThrow(/n ≤ m/);
    expect(() => GtidSet.parse(`${A}:0`)).toThrow(/not a transaction number/);
    expect(() => GtidSet.parse(`${A}:9223372036854775808`)).toThrow(/not a transaction number/);
    expect(() => GtidSet.parse(`${A}:tag`)).toThrow(/tag "tag" has no transactions/);
    expect(() => GtidSet.parse('not-a-uuid:1-5')).toThrow(/is not uuid:interval/);
    expect(() => parseGtid(`${A}:1-5`)).toThrow(/not a MySQL GTID/);
    expect(GtidSet.is('0-1-1234')).toBe(false);
    expect(isMariadbGtidPosition('0-1-1234,1-2-7')).toBe(true);
    expect(isMariadbGtidPosition(`${A}:1`)).toBe(false);
  });

  it('adds, contains, subtracts, intersects', () => {
    const set = GtidSet.parse(`${A}:1-5:11-18`);
    expect(set.add(`${A}:6`).toString()).toBe(`${A}:1-6:11-18`);
    expect(set.add(`${A}:7`).add(`${A}:8`).add(`${A}:9`).add(`${A}:10`).add(`${A}:6`).toString()).toBe(`${A}:1-18`);
    expect(set.add(`${B}:1`).toString()).toBe(`${B}:1,${A}:1-5:11-18`);
    expect(set.add(`${A}:3`)).toBe(set);
    expect(set.toString()).toBe(`${A}:1-5:11-18`); // immutable
    expect(set.contains(`${A}:11`)).toBe(true);
    expect(set.contains(`${A}:8`)).toBe(false);
    expect(set.contains(`${B}:1`)).toBe(false);
    expect(GtidSet.parse(`${A}:1-20,${B}:1-3`).subtract(set).toString()).toBe(`${B}:1-3,${A}:6-10:19-20`);
    expect(set.intersect(GtidSet.parse(`${A}:4-12`)).toString()).toBe(`${A}:4-5:11-12`);
    expect(set.union(GtidSet.parse(`${A}:6-10`)).toString()).toBe(`${A}:1-18`);
  });

  it('orders sets by inclusion: earlier points of one history compare lower, other histories not at all', () => {
    const early = GtidSet.parse(`${A}:1-5`);
    const late = GtidSet.parse(`${A}:1-9,${B}:1`);
    expect(early.compare(late)).toBe(-1);
    expect(late.compare(early)).toBe(1);
    expect(early.compare(GtidSet.parse(`${A}:1-5`))).toBe(0);
    expect(early.compare(GtidSet.parse(`${B}:1-5`))).toBeUndefined();
    expect(late.includes(early)).toBe(true);
    expect(early.includes(late)).toBe(false);
    expect(GtidSet.EMPTY.compare(early)).toBe(-1);
  });
});

describe('GtidPosition (MariaDB)', () => {
  it('parses and prints a position as the server does: one GTID per domain, by domain', () => {
    const position = GtidPosition.parse(' 2-1-7, 0-1-1234 ');
    expect(position.toString()).toBe('0-1-1234,2-1-7');
    expect(position.get(2)).toEqual({ domain: 2, server: 1, seq: 7n, text: '2-1-7' });
    expect(GtidPosition.parse('').isEmpty).toBe(true);
    expect(GtidPosition.parse('0-1-18446744073709551615').toString()).toBe('0-1-18446744073709551615');
    expect(() => GtidPosition.parse('0-1-5,0-2-6')).toThrow(/names domain 0 twice/);
    expect(() => GtidPosition.parse('0-1')).toThrow(/is not domain-server-sequence/);
    expect(() => GtidPosition.parse(`${A}:1`)).toThrow(/is not domain-server-sequence/);
    expect(parseMariadbGtid('0-1-x')).toBeUndefined();
  });

  it('a binlog state (Gtid_list, @@gtid_binlog_state) lists each domain’s latest last: that one is the position', () => {
    // A replica's: its own writes in domain 0 first, then the primary's, which came later.
    expect(GtidPosition.ofState(['0-2-8', '0-1-11', '2-1-1']).toString()).toBe('0-1-11,2-1-1');
  });

  it('moves a domain to its next GTID, keeps the others, and is immutable', () => {
    const position = GtidPosition.parse('0-1-10,2-1-7');
    const next = position.with(parseMariadbGtid('0-2-11') as NonNullable<ReturnType<typeof parseMariadbGtid>>);
    expect(next.toString()).toBe('0-2-11,2-1-7');
    expect(position.toString()).toBe('0-1-10,2-1-7');
    expect(next.holds(parseMariadbGtid('0-2-11') as NonNullable<ReturnType<typeof parseMariadbGtid>>)).toBe(true);
    expect(next.holds(parseMariadbGtid('0-1-11') as NonNullable<ReturnType<typeof parseMariadbGtid>>)).toBe(false);
    expect(next.without(2).toString()).toBe('0-2-11');
    expect(next.without(0).without(2)).toBe(GtidPosition.EMPTY);
  });
});
