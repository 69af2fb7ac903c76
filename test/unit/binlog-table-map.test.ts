import type { TableMapEntry } from '@vlasky/zongji';
import { describe, expect, it } from 'vitest';
import { tableMapParser } from '../../lib/source/mysql/binlog/table-map.ts';
import type { EventParserOptions, PacketParser } from '../../lib/source/mysql/binlog/zongji-hooks.ts';
// zongji's packet reader: the package exports only its entry, so its module by path.
// @ts-expect-error untyped JavaScript module
import { Parser } from '../../node_modules/@vlasky/zongji/lib/reader.js';

/**
 * A TABLE_MAP event's body: table id, flags, db, table, one INT column, its NULL bitmap, and the
 * column's name (binlog_row_metadata=FULL's COLUMN_NAME field: the event describes its table).
 */
function body(tableId: number, db: string, table: string): Buffer {
  const id = Buffer.alloc(6);
  id.writeUIntLE(tableId, 0, 6);
  const name = (text: string) => Buffer.concat([Buffer.from([text.length]), Buffer.from(text), Buffer.from([0])]);
  return Buffer.concat([id, Buffer.from([1, 0]), name(db), name(table), Buffer.from([1, 3, 0, 0]), Buffer.from([4, 3, 2]), Buffer.from('id')]);
}

const options: EventParserOptions = { timestamp: 0, nextPosition: 0, size: 0, eventType: 19, serverId: 1 };

describe('the TABLE_MAP parser', () => {
  it('reuses the parse of a byte-identical TABLE_MAP of the same table id, and only that', () => {
    const TableMap = tableMapParser(() => false);
    const stream = { tableMap: {} as Record<number, TableMapEntry>, useChecksum: false, isMariaDb: false };
    const parse = (bytes: Buffer) => {
      const parser = new Parser() as PacketParser & { append(bytes: Buffer): void };
      parser.append(bytes);
      return new TableMap(parser, options, stream);
    };
    const first = parse(body(42, 'db', 'a'));
    expect(first).toMatchObject({ tableId: 42, schemaName: 'db', tableName: 'a', columnCount: 1, columnNames: ['id'] });
    expect(first.unchanged).toBe(false);
    // What zongji's handler does with a self-described TABLE_MAP: the table's columns, built from it.
    stream.tableMap[42] = { columnSchemas: first.buildColumnSchemas(), parentSchema: 'db', tableName: 'a' };
    first.updateColumnInfo();
    const columns = stream.tableMap[42]?.columns;

    const again = parse(body(42, 'db', 'a'));
    expect(again.unchanged).toBe(true);
    expect(again).toMatchObject({ tableId: 42, schemaName: 'db', tableName: 'a', columnCount: 1, columnTypes: first.columnTypes });
    // zongji's handler, run again, gets back the same descriptors (which the reader may have adapted).
    stream.tableMap[42] = { columnSchemas: again.buildColumnSchemas(), parentSchema: 'db', tableName: 'a' };
    again.updateColumnInfo();
    expect(stream.tableMap[42]?.columns).toBe(columns);

    // The same id naming another table (ids are reused, e.g. after a server restart): parsed anew.
    const other = parse(body(42, 'db', 'b'));
    expect(other.unchanged).toBe(false);
    expect(other.tableName).toBe('b');

    // zongji dropped the table's columns (a filtered or failed table): parsed anew.
    delete stream.tableMap[42];
    expect(parse(body(42, 'db', 'a')).unchanged).toBe(false);
  });
});
