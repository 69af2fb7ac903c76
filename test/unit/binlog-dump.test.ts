import { afterEach, describe, expect, it } from 'vitest';
import { dumpPlan, type EventHeader, EventOffsets, eventHeader } from '../../lib/source/mysql/binlog-dump.ts';
import { BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';

// The offsets a dump's events end at, past 4 GiB, and how a dump starts there (binlog-dump.ts).

const G = 2 ** 32;
const SET = '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-57';
/** An event's header as the server sends it: its end offset written modulo 2^32. */
const ev = (type: number, length: number, end: number, flags = 0): EventHeader => ({ type, length, logPos: end % G, flags });
const GTID = 33;
const QUERY = 2;
const TABLE_MAP = 19;
const WRITE_ROWS = 30;
const XID = 16;

/** Feeds headers (each followed by the event zongji delivers from it, by type name) and returns each event's end. */
function ends(offsets: EventOffsets, events: [EventHeader, string][]): (number | undefined)[] {
  return events.map(([header]) => {
    offsets.onHeader(header);
    return offsets.endOf();
  });
}

describe('event offsets past 4 GiB', () => {
  it('follows a file across 4 GiB: every end exact, a transaction straddling it included', () => {
    const offsets = new EventOffsets('binlog.000002', G - 1_193);
    const got = ends(offsets, [
      [ev(GTID, 79, G - 1_114), 'Gtid'],
      [ev(QUERY, 81, G - 1_033), 'Query'],
      [ev(TABLE_MAP, 94, G - 939), 'TableMap'],
      // Its rows cross 4 GiB: the header says a small number.
      [ev(WRITE_ROWS, 1_000, G + 61), 'WriteRows'],
      [ev(XID, 31, G + 92), 'Xid'],
    ]);
    expect(got).toEqual([G - 1_114, G - 1_033, G - 939, G + 61, G + 92]);
    expect(offsets.inconsistency).toBeUndefined();
  });

  it('reads events it never delivers (filtered tables) as well: a 4 GiB transaction of another table keeps the ends exact', () => {
    const offsets = new EventOffsets('binlog.000002', 1_000);
    offsets.onHeader(ev(GTID, 79, 1_079));
    let end = 1_079;
    // 4.5 GiB of rows events of 16 MiB: only their headers reach the offsets, none is delivered.
    for (let i = 0; i < 288; i++) {
      end += 16 << 20;
      offsets.onHeader(ev(WRITE_ROWS, 16 << 20, end));
    }
    end += 31;
    offsets.onHeader(ev(XID, 31, end));
    expect(offsets.endOf()).toBe(end);
    expect(end).toBeGreaterThan(G);
  });

  it('an event that ends at 4 GiB exactly writes log_pos 0 and still has its end; a begin right after it too', () => {
    const offsets = new EventOffsets('binlog.000002', G - 31);
    expect(ends(offsets, [[ev(XID, 31, G), 'Xid']])).toEqual([G]);
    expect(ends(offsets, [[ev(GTID, 79, G + 79), 'Gtid']])).toEqual([G + 79]);
  });

  it("a compressed transaction's events (packets made from its payload's) have no end of their own, even one that seems to end at 4 GiB; the payload has", () => {
    const offsets = new EventOffsets('binlog.000002', G - 100);
    offsets.onHeader(ev(GTID, 79, G - 21));
    const inner = [ev(QUERY, 60, 0), ev(TABLE_MAP, 40, 0), ev(WRITE_ROWS, 21, 0), ev(XID, 31, 0)];
    expect(
      inner.map((header) => {
        offsets.onHeader(header, true);
        return offsets.endOf();
      }),
    ).toEqual([undefined, undefined, undefined, undefined]);
    expect(ends(offsets, [[ev(40, 500, G + 479), 'TransactionPayload']])).toEqual([G + 479]);
    expect(offsets.inconsistency).toBeUndefined();
  });

  it("what the server makes up or sends out of sequence moves nothing: ROTATE, a FORMAT_DESCRIPTION of a dump started mid-file, MariaDB's START_ENCRYPTION", () => {
    const offsets = new EventOffsets('binlog.000002', 3);
    // The made-up ROTATE at a dump's start names the file and where the dump starts.
    offsets.onHeader(ev(4, 47, 0, 0x20));
    offsets.rotate('binlog.000002', G + 500);
    // MySQL's COM_BINLOG_DUMP_GTID sends the file's FORMAT_DESCRIPTION with its own log_pos.
    expect(ends(offsets, [[ev(15, 122, 126), 'Format']])).toEqual([undefined]);
    expect(ends(offsets, [[{ type: 164, length: 40, logPos: 0, flags: 0x80 }, 'Unknown']])).toEqual([undefined]);
    expect(offsets.pos).toBe(G + 500);
    expect(ends(offsets, [[ev(GTID, 79, G + 579), 'Gtid']])).toEqual([G + 579]);
    // From a file's start its FORMAT_DESCRIPTION is in sequence.
    offsets.rotate('binlog.000003', 4);
    expect(ends(offsets, [[ev(15, 122, 126), 'Format']])).toEqual([126]);
  });

  it('a heartbeat moves the position to where the server has got to (its 8-byte position, else log_pos unwrapped), in its own file only', () => {
    const offsets = new EventOffsets('binlog.000002', G + 500);
    expect(offsets.heartbeat('binlog.000002', (G + 900) % G, undefined)).toBe(G + 900);
    expect(offsets.heartbeat('binlog.000002', 0, 2 * G + 7)).toBe(2 * G + 7);
    expect(offsets.heartbeat('binlog.000001', 100, undefined)).toBeUndefined();
    expect(offsets.pos).toBe(2 * G + 7);
  });

  it('a header that contradicts the ones before it is reported, not followed silently', () => {
    const backwards = new EventOffsets('binlog.000002', 2_000);
    backwards.onHeader(ev(GTID, 79, 1_500));
    expect(backwards.inconsistency).toBe('an event of type 33 and 79 bytes with log_pos 1500 does not follow the event before it, which ends at 2000');
    const overlapping = new EventOffsets('binlog.000002', 2_000);
    overlapping.onHeader(ev(GTID, 79, 2_050));
    expect(overlapping.inconsistency).toMatch(/log_pos 2050 does not follow/);
  });

  it('reads the header of an event packet after its OK byte', () => {
    const packet = Buffer.alloc(1 + 19 + 4);
    packet.writeUInt32LE(1_700_000_000, 1);
    packet[5] = XID;
    packet.writeUInt32LE(7, 6);
    packet.writeUInt32LE(35, 10);
    packet.writeUInt32LE(61, 14);
    packet.writeUInt16LE(0x20, 18);
    expect(eventHeader(packet, 0, packet.length)).toEqual({ type: XID, length: 35, logPos: 61, flags: 0x20 });
    expect(eventHeader(Buffer.from([0xff, 0, 0]), 0, 3)).toBeUndefined();
  });
});

describe('where a dump starts', () => {
  it('below 4 GiB at the position, with COM_BINLOG_DUMP', () => {
    expect(dumpPlan({ file: 'binlog.000002', pos: G - 1, gtidSet: SET }, true)).toEqual({ kind: 'position', file: 'binlog.000002', pos: G - 1 });
  });

  it('past 4 GiB by GTID at the file and position when the position has its set and gtid_mode is ON', () => {
    expect(dumpPlan({ file: 'binlog.000002', pos: G + 92, gtidSet: SET }, true)).toEqual({ kind: 'gtid', file: 'binlog.000002', pos: G + 92, gtidSet: SET });
  });

  it("past 4 GiB otherwise from the file's start, to re-read up to the position (MariaDB, gtid_mode OFF, no set)", () => {
    const reread = { kind: 'reread', file: 'binlog.000002', pos: 4, resumeAt: G + 92 };
    expect(dumpPlan({ file: 'binlog.000002', pos: G + 92, gtidSet: SET }, false)).toEqual(reread);
    expect(dumpPlan({ file: 'binlog.000002', pos: G + 92, gtid: '0-1-42' }, true)).toEqual(reread);
    expect(dumpPlan({ file: 'binlog.000002', pos: G + 92, gtidSet: '' }, true)).toEqual(reread);
  });
});

describe('re-reading a file up to a start past 4 GiB (no GTID start there)', () => {
  const S = G + 92;
  const FILE = 'binlog.000002';
  const readers: BinlogReader[] = [];
  afterEach(async () => {
    await Promise.all(readers.splice(0).map((r) => r.stop()));
  });

  /** A reader started at `start` (its connection fails later, to nothing: these feed it by hand), and a feed of one packet's header and the event zongji delivers from it. */
  function rereader(start = S) {
    const reader = new BinlogReader({ target: { uri: 'mysql://u:p@127.0.0.1:1/x', label: 'test' }, start: { file: FILE, pos: start }, filter: () => true });
    readers.push(reader);
    const { offsets } = reader as unknown as { offsets: EventOffsets };
    const feed = (header: EventHeader, event?: Record<string, unknown> & { type: string }) => {
      offsets.onHeader(header);
      if (event)
        (reader as unknown as { onEvent(ev: unknown): void }).onEvent({
          getTypeName: () => event.type,
          timestamp: 1_700_000_000_000,
          nextPosition: header.logPos,
          ...event,
        });
    };
    return { reader, feed };
  }

  /** The server's stream from the file's start: its made-up ROTATE, its FORMAT_DESCRIPTION, a transaction of 4 GiB of rows of another table (not delivered) ending at `end`. */
  function fromTheStart(feed: ReturnType<typeof rereader>['feed'], end: number) {
    feed(ev(4, 47, 0, 0x20), { type: 'Rotate', binlogName: FILE, position: 4 });
    feed(ev(15, 122, 126), { type: 'Format' });
    feed(ev(GTID, 79, 205), { type: 'Gtid', gtid: `${SET.split(':')[0]}:57` });
    feed(ev(QUERY, 81, 286), { type: 'Query', query: 'BEGIN' });
    let at = 286;
    while (at < end - 31 - (1 << 30)) {
      at += 1 << 30;
      feed(ev(WRITE_ROWS, 1 << 30, at));
    }
    feed(ev(WRITE_ROWS, end - 31 - at, end - 31));
    feed(ev(XID, 31, end), { type: 'Xid' });
  }

  it('emits nothing before the start, then the stream from it, at exact offsets', async () => {
    const { reader, feed } = rereader();
    expect(reader.rereading).toEqual({ at: { file: FILE, pos: 4 }, to: { file: FILE, pos: S } });
    fromTheStart(feed, S);
    expect(reader.rereading).toBeUndefined();
    feed(ev(GTID, 79, S + 79), { type: 'Gtid', gtid: `${SET.split(':')[0]}:58` });
    feed(ev(QUERY, 81, S + 160), { type: 'Query', query: 'BEGIN' });
    feed(ev(XID, 31, S + 191), { type: 'Xid' });
    const items = [];
    for (let item = reader.takeReady(); item; item = reader.takeReady()) items.push(item);
    expect(items.map((i) => (i.kind === 'begin' ? `begin ${i.pos}` : i.kind === 'commit' ? `commit ${i.position.pos}` : i.kind))).toEqual([
      `begin ${S + 79}`,
      `commit ${S + 191}`,
    ]);
  });

  it('no event ending exactly at the start (another history) stops the stream with POSITION_FOREIGN', async () => {
    const { reader, feed } = rereader();
    fromTheStart(feed, S + 40);
    await expect(reader[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: 'POSITION_FOREIGN',
      message: expect.stringContaining(`no event of this server's ${FILE} ends at offset ${S} (one ends at ${S + 40})`),
    });
  });

  it('a file that ends before the start stops the stream with POSITION_FOREIGN', async () => {
    const { reader, feed } = rereader();
    fromTheStart(feed, S - 1_000);
    feed(ev(4, 47, S - 953), { type: 'Rotate', binlogName: 'binlog.000003', position: 4 });
    await expect(reader[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: 'POSITION_FOREIGN',
      message: expect.stringContaining(`this server's ${FILE} ends before offset ${S}`),
    });
  });
});
