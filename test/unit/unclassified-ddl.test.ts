import { describe, expect, it } from 'vitest';
import { currentRows } from '../../lib/capture/current-rows.ts';
import { SchemaTracker, type TrackerDeps } from '../../lib/capture/schema-tracker.ts';
import { ErrorCode, SluiceError } from '../../lib/errors.ts';
import { encodeShape } from '../../lib/format/event.ts';
import { silentLog } from '../../lib/log.ts';
import { Catalog } from '../../lib/schema/catalog.ts';
import type { TableRef } from '../../lib/schema/definition.ts';
import type { SchemaVersion } from '../../lib/schema/version.ts';
import { mariadbComments } from '../support/comment-rules.ts';

/** A one-column version of `table`, numbered after `previous`. */
function version(table: TableRef, previous?: SchemaVersion): SchemaVersion {
  return {
    ...table,
    version: (previous?.version ?? 0) + 1,
    columns: [{ id: (previous?.lastColumnId ?? 0) + 1, name: 'id', type: 'int', kind: 'int', nullable: false }],
    key: ['id'],
    lastColumnId: (previous?.lastColumnId ?? 0) + 1,
    changes: [],
    indexes: [{ name: 'PRIMARY', kind: 'primary', parts: [{ column: 'id' }] }],
  };
}

const statement = { db: 'shop', query: 'whatever', sqlMode: {}, position: { file: 'binlog.000007', pos: 4242 } };

/** shop.orders and shop.gone captured; the server now has shop.orders and shop.fresh (a table the statement may have made), not shop.gone. */
function tracker(unknownDdl: 'resnapshot' | 'stop', overrides: TrackerDeps['overrides'] = new Map()) {
  const catalog = new Catalog();
  for (const table of [
    { db: 'shop', table: 'orders' },
    { db: 'shop', table: 'gone' },
  ])
    catalog.put({ version: version(table), seq: '0', position: statement.position, origin: 'server' });
  const onServer = [
    { db: 'shop', table: 'orders' },
    { db: 'shop', table: 'fresh' },
    { db: 'other', table: 'x' },
  ];
  return new SchemaTracker(catalog, {
    traits: { comments: mariadbComments(101119), lowerCaseTableNames: false, explicitDefaultsForTimestamp: true },
    accept: (db) => db === 'shop',
    acceptDatabase: (db) => db === 'shop',
    readVersion: async (table, previous) => (onServer.some((t) => t.db === table.db && t.table === table.table) ? version(table, previous) : undefined),
    overrides,
    unknownDdl,
    listTables: async () => onServer,
    log: silentLog,
    // A statement whose tables cannot be named (it cannot be tokenized, or is no statement sluice knows).
    classify: async () => ({ kind: 'unknown', tables: null, reason: 'cannot tokenize' }),
  });
}

let n = 0;
const seq = () => `s${n++}`;

describe('a DDL statement that names no table sluice can read', () => {
  it('re-copies every captured table by default: those the catalog knows, and those the server has that it does not', async () => {
    const outcome = await tracker('resnapshot').onDdl(statement, seq);
    expect(outcome.events.map((e) => `${e.table.table} ${e.op} ${e.kind} ${e.decidedBy}`)).toEqual([
      'orders t resnapshot sluice',
      'gone t drop sluice',
      'fresh t resnapshot sluice',
    ]);
    expect(outcome.snapshots.map((s) => s.table.table)).toEqual(['orders', 'fresh']);
    expect(outcome.decided?.map((t) => t.table)).toEqual(['orders', 'fresh']);
  });

  it('stops with DDL_UNKNOWN naming the captured tables with SLUICE_DDL_UNKNOWN=stop', async () => {
    const stopped = await tracker('stop')
      .onDdl(statement, seq)
      .catch((error: unknown) => error);
    expect(stopped).toBeInstanceOf(SluiceError);
    expect((stopped as SluiceError).code).toBe(ErrorCode.DDL_UNKNOWN);
    expect((stopped as Error).message).toContain('binlog.000007:4242 touches shop.orders, shop.gone');
  });

  it("takes an operator's noop for its position over the default, and records it", async () => {
    const t = tracker('resnapshot', new Map([['binlog.000007:4242', 'noop']]));
    const outcome = await t.onDdl(statement, seq);
    expect(outcome.events.map((e) => `${e.table.table} ${e.op} ${e.kind} ${e.decidedBy}`)).toEqual(['orders s noop operator', 'gone s noop operator']);
    expect(outcome.snapshots).toEqual([]);
    expect(t.catalog.entry({ db: 'shop', table: 'orders' })?.ddl).toMatchObject({ kind: 'noop', decidedBy: 'operator', reason: 'cannot tokenize' });
  });
});

describe("a system-versioned table's current rows", () => {
  const shape = encodeShape({
    db: 'd',
    table: 't',
    columns: [
      { name: 'id', kind: 'int', sqlType: 'int' },
      { name: 'row_end', kind: 'timestamp', sqlType: 'timestamp(6)', fsp: 6 },
    ],
    key: [0, 1],
  });
  const end = { property: 'row_end', kind: 'timestamp' as const, fsp: 6 };
  const tsMs = Date.parse('2026-12-05T00:00:00Z');
  const rows = (op: 'insert' | 'delete', ...ends: string[]) =>
    ({ kind: 'rows', op, shape, map: { columns: [], key: null }, rows: ends.map((e, id) => ({ id, row_end: e })), pos: 4, tsMs }) as const;
  const CURRENT = '2038-01-19 03:14:07.999999';

  it('passes current rows, drops history rows, and turns an update that ends a row into its delete', () => {
    expect(currentRows(rows('insert', CURRENT, '2026-12-05 00:00:00.5', CURRENT), end).map((i) => [i.op, i.rows.length])).toEqual([['insert', 2]]);
    const update = {
      ...rows('insert'),
      op: 'update' as const,
      rows: [
        { before: { id: 1, row_end: CURRENT }, after: { id: 1, row_end: CURRENT } },
        { before: { id: 2, row_end: CURRENT }, after: { id: 2, row_end: '2026-12-05 00:00:00.1' } },
      ],
    };
    expect(currentRows(update, end).map((i) => i.op)).toEqual(['update', 'delete']);
    expect(currentRows(rows('delete', '2026-01-01 00:00:00'), end)).toEqual([]);
  });

  it('refuses a period end that is neither the end of time nor by its statement (VERSIONED_ROW_END), never reading it as history', () => {
    expect(() => currentRows(rows('insert', '2099-01-01 00:00:00'), end)).toThrow(expect.objectContaining({ code: ErrorCode.VERSIONED_ROW_END }));
  });
});
