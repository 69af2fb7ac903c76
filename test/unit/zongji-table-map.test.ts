import { describe, expect, it } from 'vitest';
// Our patch of zongji (patches/): the package exports only its entry, so its modules by path.
// @ts-expect-error untyped JavaScript module
import { TableMap } from '../../node_modules/@vlasky/zongji/lib/binlog_event.js';
// @ts-expect-error untyped JavaScript module
import { Parser } from '../../node_modules/@vlasky/zongji/lib/reader.js';

/** A TABLE_MAP event's body: table id, flags, db, table, one INT column, no metadata, its NULL bitmap. */
function body(tableId: number, db: string, table: string): Buffer {
  const id = Buffer.alloc(6);
  id.writeUIntLE(tableId, 0, 6);
  const name = (text: string) => Buffer.concat([Buffer.from([text.length]), Buffer.from(text), Buffer.from([0])]);
  return Buffer.concat([id, Buffer.from([1, 0]), name(db), name(table), Buffer.from([1, 3, 0, 0])]);
}

const parse = (bytes: Buffer, zongji: object) => {
  const parser = new Parser();
  parser.append(bytes);
  return new TableMap(parser, { timestamp: 0, nextPosition: 0, size: bytes.length }, zongji);
};

describe("zongji's TABLE_MAP, as patched", () => {
  it('reuses the parse of a byte-identical TABLE_MAP of the same table id, and only that', () => {
    const zongji = { tableMap: {} as Record<number, unknown>, useChecksum: false, _skipSchema: () => false, _tableMapCache: new Map() };
    const first = parse(body(42, 'db', 'a'), zongji);
    expect(first).toMatchObject({ tableId: 42, schemaName: 'db', tableName: 'a', columnCount: 1 });
    expect(first.unchanged).toBeUndefined();
    // What zongji's handler records once it has built the table's columns from a self-described TABLE_MAP.
    zongji.tableMap[42] = { parentSchema: 'db', tableName: 'a' };
    zongji._tableMapCache.set(42, first._reusable());

    const again = parse(body(42, 'db', 'a'), zongji);
    expect(again.unchanged).toBe(true);
    expect(again).toMatchObject({ tableId: 42, schemaName: 'db', tableName: 'a', columnCount: 1, columnTypes: first.columnTypes });

    // The same id naming another table (ids are reused, e.g. after a server restart): parsed anew.
    const other = parse(body(42, 'db', 'b'), zongji);
    expect(other.unchanged).toBeUndefined();
    expect(other.tableName).toBe('b');

    // zongji dropped the table's columns (a filtered or failed table): parsed anew.
    delete zongji.tableMap[42];
    expect(parse(body(42, 'db', 'a'), zongji).unchanged).toBeUndefined();
  });
});
