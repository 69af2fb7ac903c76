import { describe, expect, it } from 'vitest';
import type { SluiceError } from '../../lib/errors.ts';
import type { ReaderEvent } from '../../lib/source/mysql/binlog/events.ts';
import { StreamGuard } from '../../lib/source/mysql/guards.ts';
import { BinlogHistories, unreadablePositionReason } from '../../lib/source/mysql/history.ts';
import type { SqlConnection } from '../../lib/source/mysql/server.ts';

/*
 * The per-event guards over fabricated zongji events. MySQL 8's TRANSACTION_PAYLOAD events (after
 * their inner events, which carry log_pos 0) and its XA layout cannot be produced here (only
 * MariaDB runs), so these events are built the way zongji delivers them: the type name, `nextPosition`, and for rows
 * events the column bitmaps (bit i = column i).
 */

const FILE = 'binlog.000007';
const columns = [
  { name: 'id', type: 3 },
  { name: 'a', type: 3 },
  { name: 'b', type: 15 },
  { name: 'c', type: 252 },
  { name: 'd', type: 252 },
];
const tableMap = { 9: { parentSchema: 'shop', tableName: 'orders', columns } };

type Event = Record<string, unknown> & { type: string };
const gtid = (seq: number, extra: Record<string, unknown> = {}): Event => ({ type: 'MariadbGtid', gtid: `0-1-${seq}`, nextPosition: 0, ...extra });
const map: Event = { type: 'TableMap', schemaName: 'shop', tableName: 'orders', nextPosition: 0 };
const rows = (type: string, present: number, present2?: number): Event => ({
  type,
  tableId: 9,
  tableMap,
  numberOfColumns: 5,
  columns_present_bitmap: Buffer.from([present]),
  columns_present_bitmap2: present2 === undefined ? undefined : Buffer.from([present2]),
  nextPosition: 0,
});
const xid = (next: number): Event => ({ type: 'Xid', nextPosition: next });

/**
 * Feeds events to a guard; returns each verdict (awaited when it is a promise). An event's end is
 * its `nextPosition`; 0 stands for one without an end of its own (inside a compressed transaction).
 */
async function feed(guard: StreamGuard, events: Event[], file = FILE): Promise<unknown[]> {
  const verdicts: unknown[] = [];
  // Fabricated: only the fields the guards read.
  for (const ev of events)
    verdicts.push(await guard.check(ev as unknown as ReaderEvent, ev.type, file, (ev.nextPosition as number) > 0 ? (ev.nextPosition as number) : undefined));
  return verdicts;
}

const errorOf = (verdicts: unknown[]) => verdicts.find((v) => v instanceof Error) as SluiceError | undefined;

describe('stream guards (fabricated zongji events)', () => {
  it('lets full row images through untouched', async () => {
    const guard = new StreamGuard({ file: FILE, pos: 1000 });
    const verdicts = await feed(guard, [gtid(5), map, rows('WriteRows', 0x1f), rows('UpdateRows', 0x1f, 0x1f), rows('DeleteRows', 0x1f), xid(2000)]);
    expect(verdicts).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  it('stops on a MINIMAL update at the end of its transaction, naming table, setting, position, skip and tables to copy', async () => {
    const guard = new StreamGuard({ file: FILE, pos: 1000 });
    const other: Event = { type: 'TableMap', schemaName: 'shop', tableName: 'lines', nextPosition: 0 };
    const verdicts = await feed(guard, [
      { type: 'Format', nextPosition: 256, timestamp: 1 },
      xid(1500),
      gtid(6),
      map,
      rows('UpdateRows', 0b00001, 0b00010),
      other,
      rows('WriteRows', 0x1f),
      xid(2400),
    ]);
    // Dropped from the violating event on; the error comes with the transaction's end.
    expect(verdicts.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
    expect(verdicts.slice(4, 7)).toEqual(['drop', 'drop', 'drop']);
    const error = errorOf(verdicts);
    expect(error?.code).toBe('ROW_IMAGE_PARTIAL');
    expect(error?.message).toContain('the transaction at binlog.000007:1500 (gtid 0-1-6)');
    expect(error?.message).toContain('an update of shop.orders logged with a partial row image, without column(s) id, a, b, c, d');
    expect(error?.message).toContain('binlog_row_image=MINIMAL');
    expect(error?.message).toContain('the position stays at binlog.000007:1500');
    expect(error?.message).toContain('sluice state reset --to position:binlog.000007:2400');
    expect(error?.message).toContain('the next run resets the tables it changed (shop.lines, shop.orders) and copies them again');
    // Once stopped, everything after is dropped.
    expect(await feed(guard, [gtid(7), map, rows('WriteRows', 0x1f), xid(3000)])).toEqual(['drop', 'drop', 'drop', 'drop']);
  });

  it('names NOBLOB when only BLOB/TEXT columns are missing, for deletes too', async () => {
    for (const event of [rows('DeleteRows', 0b00111), rows('UpdateRows', 0b00111, 0b00111)]) {
      const guard = new StreamGuard({ file: FILE, pos: 1000 });
      const error = errorOf(await feed(guard, [gtid(6), map, event, xid(2000)]));
      expect(error?.code).toBe('ROW_IMAGE_PARTIAL');
      expect(error?.message).toMatch(
        /(a delete|an update) of shop\.orders logged with a partial row image, without column\(s\) c, d \(binlog_row_image=NOBLOB/,
      );
    }
  });

  it('reads MySQL’s atomic CREATE TABLE … SELECT (BEGIN, CREATE … START TRANSACTION, rows, COMMIT) as a DDL, in any database, and still stops on DML logged as text', async () => {
    const ctas = (db: string, next: number): Event[] => [
      { type: 'Gtid', gtid: `3e11fa47-71ca-11e1-9e33-c80aa9429562:${next}`, nextPosition: next },
      { type: 'Query', query: 'BEGIN', schema: db, nextPosition: next + 80 },
      {
        type: 'Query',
        query: 'CREATE TABLE `t` (\n  `id` int NOT NULL,\n  `v` varchar(10) DEFAULT NULL\n) START TRANSACTION',
        schema: db,
        nextPosition: next + 240,
      },
      { type: 'TableMap', schemaName: db, tableName: 't', nextPosition: next + 300 },
      rows('WriteRows', 0x1f),
      xid(next + 400),
    ];
    const accept = (db: string) => db === 'shop';
    const guard = new StreamGuard({ file: FILE, pos: 1000 }, { accept });
    expect(errorOf(await feed(guard, [...ctas('shop', 1000), ...ctas('elsewhere', 2000)]))).toBeUndefined();
    const dml = errorOf(
      await feed(new StreamGuard({ file: FILE, pos: 1000 }, { accept }), [
        { type: 'Gtid', gtid: '3e11fa47-71ca-11e1-9e33-c80aa9429562:9', nextPosition: 1100 },
        { type: 'Query', query: 'BEGIN', schema: 'shop', nextPosition: 1200 },
        { type: 'Query', query: 'INSERT INTO t SELECT 1 /* START TRANSACTION */', schema: 'shop', nextPosition: 1300 },
        xid(1400),
      ]),
    );
    expect(dml?.code).toBe('STATEMENT_DML');
    expect(dml?.message).toContain('shop.t');
  });

  it('stops on captured rows of a two-phase XA transaction (MariaDB flag, MySQL XA START), at its XA_PREPARE', async () => {
    const mariadb = errorOf(
      await feed(new StreamGuard({ file: FILE, pos: 1000 }), [
        gtid(6, { preparedXa: true }),
        map,
        rows('WriteRows', 0x1f),
        { type: 'Query', query: "XA END X'7831',X'',1", nextPosition: 0 },
        { type: 'XaPrepare', nextPosition: 1287 },
      ]),
    );
    expect(mariadb?.code).toBe('XA_PREPARED');
    expect(mariadb?.message).toContain('sluice state reset --to position:binlog.000007:1287');
    expect(mariadb?.message).toContain('XA RECOVER');

    const mysql = errorOf(
      await feed(new StreamGuard({ file: FILE, pos: 1000 }), [
        { type: 'Gtid', gtid: '3e11fa47-71ca-11e1-9e33-c80aa9429562:23', nextPosition: 1100 },
        { type: 'Query', query: "XA START X'7831',X'',1", nextPosition: 1200 },
        map,
        rows('WriteRows', 0x1f),
        { type: 'Query', query: "XA END X'7831',X'',1", nextPosition: 1300 },
        { type: 'XaPrepare', nextPosition: 1350 },
      ]),
    );
    expect(mysql?.code).toBe('XA_PREPARED');
    expect(mysql?.message).toContain('(gtid 3e11fa47-71ca-11e1-9e33-c80aa9429562:23)');
    // An XA transaction that touches no captured table passes.
    expect(
      errorOf(
        await feed(new StreamGuard({ file: FILE, pos: 1000 }), [
          gtid(6, { preparedXa: true }),
          { type: 'Query', query: "XA END X'7831',X'',1", nextPosition: 0 },
          { type: 'XaPrepare', nextPosition: 1287 },
        ]),
      ),
    ).toBeUndefined();
  });

  it('checks the events of a MySQL 8 compressed transaction (TRANSACTION_PAYLOAD, log_pos 0) like any, and names the payload event’s end as the transaction’s', async () => {
    const inner = (ev: Event): Event => ({ ...ev, nextPosition: 0 });
    const clean = await feed(new StreamGuard({ file: FILE, pos: 1000 }), [
      { type: 'Gtid', gtid: 'u:5', nextPosition: 1079 },
      inner({ type: 'Query', query: 'BEGIN' }),
      map,
      rows('UpdateRows', 0b11111, 0b11111),
      inner(xid(0)),
      { type: 'TransactionPayload', nextPosition: 1900 },
    ]);
    expect(clean).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    const partial = errorOf(
      await feed(new StreamGuard({ file: FILE, pos: 1000 }), [
        { type: 'Gtid', gtid: 'u:6', nextPosition: 1079 },
        inner({ type: 'Query', query: 'BEGIN' }),
        map,
        rows('UpdateRows', 0b11111, 0b00011),
        inner(xid(0)),
        { type: 'TransactionPayload', nextPosition: 1900 },
      ]),
    );
    expect(partial?.code).toBe('ROW_IMAGE_PARTIAL');
    expect(partial?.message).toContain('sluice state reset --to position:binlog.000007:1900');
    expect(partial?.message).toContain('the next run resets the tables it changed (shop.orders) and copies them again');
  });

  it('names the transaction start without the stored GTID when it is the first after the stream start', async () => {
    const guard = new StreamGuard({ file: FILE, pos: 1000, gtid: '0-1-5' });
    const error = errorOf(await feed(guard, [gtid(6), map, rows('DeleteRows', 0b00001), xid(2000)]));
    expect(error?.message).toContain('the transaction at binlog.000007:1000 (gtid 0-1-6) holds');
    expect(error?.message).toContain('the position stays at binlog.000007:1000. Fix:');
  });

  it('stops without a skip position when the transaction does not end in time', async () => {
    let now = 0;
    const guard = new StreamGuard({ file: FILE, pos: 1000 }, { clock: () => now });
    expect(await feed(guard, [gtid(6), map, rows('DeleteRows', 0b00001)])).toEqual([undefined, undefined, 'drop']);
    now = 11_000;
    const error = errorOf(await feed(guard, [rows('DeleteRows', 0x1f)]));
    expect(error?.code).toBe('ROW_IMAGE_PARTIAL');
    expect(error?.message).toContain("SHOW BINLOG EVENTS IN 'binlog.000007' FROM 1000");
  });
});

/** A connection answering the queries the foreign-history explanation makes. */
function server(answers: { state: string; oldestStart: string }): () => Promise<SqlConnection> {
  const conn: SqlConnection = {
    async query(sql: string) {
      if (sql === 'SELECT VERSION() AS version, @@version_comment AS comment') return [[{ version: '10.11.19-MariaDB', comment: '' }], []];
      if (sql.includes('gtid_binlog_state')) return [[{ state: answers.state }], []];
      if (sql.startsWith('SHOW BINARY LOGS')) return [[{ Log_name: 'binlog.000001', File_size: 9000 }], []];
      if (sql.includes('BINLOG_GTID_POS')) return [[{ gtid: answers.oldestStart }], []];
      throw new Error(`unexpected query ${sql}`);
    },
    async end() {},
  };
  return async () => conn;
}

describe('binlog history (fabricated events)', () => {
  const position = { file: 'binlog.000001', pos: 325, gtid: '0-1-230' };
  const stored = { position, history: { file: 'binlog.000001', created: 1_796_052_560_000, serverId: 1 } };

  it('records each file’s creation time for the positions it stores, and passes the stored history', async () => {
    const histories = new BinlogHistories(stored);
    const guard = new StreamGuard(position, { history: { check: histories, sql: server({ state: '', oldestStart: '' }) } });
    expect(
      await feed(
        guard,
        [{ type: 'Rotate', nextPosition: 0 }, { type: 'Format', timestamp: 1_796_052_560_000, nextPosition: 0 }, gtid(231), xid(500)],
        'binlog.000001',
      ),
    ).toEqual([undefined, undefined, undefined, undefined]);
    expect(histories.of({ file: 'binlog.000001', pos: 500 })).toEqual({ file: 'binlog.000001', created: 1_796_052_560_000 });
    // A file the stream has not entered has no known history.
    expect(histories.of({ file: 'binlog.000002', pos: 4 })).toBeUndefined();
  });

  it('stops with POSITION_FOREIGN when the file was created at another time, offering GTID repositioning only when the server holds the GTID', async () => {
    const created = { type: 'Format', timestamp: 1_796_053_074_000, nextPosition: 0 };
    const held = errorOf(
      await feed(
        new StreamGuard(position, { history: { check: new BinlogHistories(stored), sql: server({ state: '0-1-400', oldestStart: '0-1-100' }) } }),
        [created],
        'binlog.000001',
      ),
    );
    expect(held?.code).toBe('POSITION_FOREIGN');
    expect(held?.message).toContain('created at 2026-11-30T15:29:20Z, on server_id 1');
    expect(held?.message).toContain('was created at 2026-11-30T15:37:54Z');
    expect(held?.message).toContain('sluice state reset --to gtid:0-1-230');

    const reset = errorOf(
      await feed(
        new StreamGuard(position, { history: { check: new BinlogHistories(stored), sql: server({ state: '0-1-30', oldestStart: '' }) } }),
        [created],
        'binlog.000001',
      ),
    );
    expect(reset?.code).toBe('POSITION_FOREIGN');
    expect(reset?.message).not.toContain('--to gtid:');
    expect(reset?.message).toContain('sluice state reset --to latest');
  });

  it('stops with POSITION_FOREIGN when the first GTID of the same domain and server is not later than the stored one', async () => {
    const withoutHistory = { position };
    const sql = server({ state: '', oldestStart: '' });
    const regress = errorOf(
      await feed(
        new StreamGuard(position, { history: { check: new BinlogHistories(withoutHistory), sql } }),
        [{ type: 'Format', timestamp: 5, nextPosition: 0 }, gtid(1)],
        'binlog.000001',
      ),
    );
    expect(regress?.code).toBe('POSITION_FOREIGN');
    expect(regress?.message).toContain('the first transaction after it is 0-1-1, which is not later than the position’s 0-1-230'.replace('’', "'"));
    // Other domains and servers say nothing; a later sequence passes, and later ones are not compared.
    const ok = await feed(
      new StreamGuard(position, { history: { check: new BinlogHistories(withoutHistory), sql } }),
      [{ type: 'MariadbGtid', gtid: '1-1-3' }, { type: 'MariadbGtid', gtid: '0-2-3' }, gtid(231), gtid(2)],
      'binlog.000001',
    );
    expect(ok).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('judges the first later transaction of every domain the position has read, but a domain it still skips to', async () => {
    const domains = { ...position, gtidPos: '0-1-230,2-1-5' };
    const sql = server({ state: '', oldestStart: '' });
    const regress = errorOf(
      await feed(
        new StreamGuard(domains, { history: { check: new BinlogHistories({ position: domains }), sql } }),
        [gtid(231), { type: 'MariadbGtid', gtid: '2-1-3' }],
        'binlog.000001',
      ),
    );
    expect(regress?.message).toContain("the first transaction after it is 2-1-3, which is not later than the position's 2-1-5");
    // Moved by GTID to a server that logs domain 2's transactions up to 2-1-5 after the position: they come first, and are skipped.
    const moved = { ...domains, gtidSkip: '2-1-5' };
    const ok = await feed(
      new StreamGuard(moved, { history: { check: new BinlogHistories({ position: moved }), sql } }),
      [{ type: 'MariadbGtid', gtid: '2-1-4' }, { type: 'MariadbGtid', gtid: '2-1-5' }, gtid(231)],
      'binlog.000001',
    );
    expect(ok).toEqual([undefined, undefined, undefined]);
  });

  it('turns the server’s errors for an unreadable position into words, never raw bytes', () => {
    expect(
      unreadablePositionReason(
        "log event entry exceeded max_allowed_packet; Increase max_allowed_packet on master; the first event 'binlog.000002' at 600, the last event read from 'binlog.000002' at 600",
      ),
    ).toBe('the offset is not the start of an event (another binlog history, or a mistyped position)');
    expect(unreadablePositionReason('Could not find first log file name in binary log index file')).toMatch(/not on the server/);
    expect(unreadablePositionReason('Client requested master to start replication from impossible position')).toMatch(/beyond the end/);
    const garbage = unreadablePositionReason('unexpected \u0000\u0001\u00ff\ufffdevent\u0007 data');
    expect(garbage).toBe('the server says: unexpected event data');
  });
});
