import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../lib/errors.ts';
import { encodeRow } from '../../lib/format/event.ts';
import { applyJsonDiffs, applyPartialJson, type JsonTree, jsonBinaryToText, jsonText, jsonTreeToText, jsonValue } from '../../lib/source/mysql/binlog/json.ts';
import { EventOffsets } from '../../lib/source/mysql/binlog-dump.ts';
import { type BinlogItem, BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { StreamGuard } from '../../lib/source/mysql/guards.ts';
import { type ColumnRow, type DecodedEvent, decodeBinlogFile, JSON_OPAQUE_DOCUMENTS, mysqlFixtures } from '../support/mysql-binlog-file.ts';

/** A tree of a JSON text with MySQL's member order (keys sorted by length, then bytes), for diffs to apply to. */
function jsonTree(text: string): JsonTree {
  const order = (a: string, b: string) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b));
  const of = (value: unknown): JsonTree => {
    if (Array.isArray(value)) return { array: value.map(of) };
    if (value !== null && typeof value === 'object')
      return {
        object: Object.keys(value)
          .sort(order)
          .map((k): [string, JsonTree] => [k, of((value as Record<string, unknown>)[k])]),
      };
    return { text: JSON.stringify(value) };
  };
  return of(JSON.parse(text));
}

/*
 * What MySQL 8.0–9.x writes, decoded from the recorded files (SLUICE_MYSQL_FIXTURES, their README
 * for the expected values) by zongji's packet layer as patched here, then by sluice's binlog reader.
 * The replay server (test/mysql/) drives the same files through a live connection.
 */

const int = (name: string): ColumnRow => ({ COLUMN_NAME: name, COLUMN_TYPE: 'int' });
const text = (name: string, type = 'varchar(255)'): ColumnRow => ({ COLUMN_NAME: name, COLUMN_TYPE: type, CHARACTER_SET_NAME: 'utf8mb4' });
/** The tables of the MINIMAL-metadata files, as INFORMATION_SCHEMA would give them. */
const COLUMNS: Record<string, ColumnRow[]> = {
  'test.tb1': [int('a')],
  'demo.movies': [
    int('id'),
    text('title'),
    int('year'),
    text('country'),
    text('genre'),
    text('actors'),
    text('director'),
    text('composer'),
    text('writer'),
    text('cinematographer'),
    text('production_company'),
  ],
};

const names = (events: DecodedEvent[]) => events.map((e) => e.getTypeName());

/** The reader's items for decoded events, fed as zongji would emit them (the reader's connection is never used). */
function readerItems(events: DecodedEvent[], file: string): BinlogItem[] {
  const reader = new BinlogReader({ target: { uri: 'mysql://u:p@127.0.0.1:1/x', label: 'test' }, start: { file, pos: 4 }, filter: () => true });
  readers.push(reader);
  const items: BinlogItem[] = [];
  // Each packet's header reaches the reader's offsets before the events zongji delivers from it, as in a stream.
  const { offsets } = reader as unknown as { offsets: EventOffsets };
  let header: unknown;
  for (const event of events) {
    if (event.packetHeader !== header) offsets.onHeader(event.packetHeader, event.inPayload);
    header = event.packetHeader;
    (reader as unknown as { onEvent(ev: DecodedEvent): void }).onEvent(event);
    for (let item = reader.takeReady(); item; item = reader.takeReady()) items.push(item);
  }
  return items;
}
const readers: BinlogReader[] = [];
afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.stop()));
});

describe('compressed transactions (TRANSACTION_PAYLOAD, zstd)', () => {
  it('delivers the payload’s events in order, then the payload event, whose end is the transaction’s', async () => {
    const events = await decodeBinlogFile('rust_mysql_common--transaction_compression.000001', { columns: COLUMNS });
    expect(names(events)).toEqual(['Format', 'PreviousGtids', 'AnonymousGtid', 'Query', 'TableMap', 'WriteRows', 'Xid', 'TransactionPayload', 'Rotate']);
    const payload = events[7];
    expect({ compression: payload.compressionType, size: payload.uncompressedSize, end: payload.nextPosition }).toEqual({
      compression: 0,
      size: 179,
      end: 431,
    });
    // The inner events carry log_pos 0 (and no checksum: a misread one would shift every field).
    expect(events.slice(3, 7).map((e) => e.nextPosition)).toEqual([0, 0, 0, 0]);
    expect(events[5].rows).toEqual([{ a: 1 }]);
    expect(events[3].query).toBe('BEGIN');
  });

  it('decodes the UPDATE inside mysql-binlog-connector-java’s file (451 B → 960 B), exact', async () => {
    const events = await decodeBinlogFile('mysql-binlog-connector-java--mysql-bin.compressed', { columns: COLUMNS });
    const update = events.find((e) => e.getTypeName() === 'UpdateRows');
    expect(update.rows).toHaveLength(1);
    const { before, after } = update.rows[0];
    expect(before.title).toBe('Once Upon a Time in the West');
    expect([before.genre, after.genre]).toEqual(['Western', 'Western|Action']);
    expect({ ...after, genre: before.genre }).toEqual(before);
    expect(events.find((e) => e.getTypeName() === 'Xid').xid).toBe(31);
  });

  it('the reader commits at the payload event’s end, never at an inner log_pos 0', async () => {
    const file = 'binlog.000042';
    const events = await decodeBinlogFile('rust_mysql_common--transaction_compression.000001', { columns: COLUMNS });
    const items = readerItems(events, file);
    const kinds = items.map((i) => (i.kind === 'commit' || i.kind === 'progress' ? `${i.kind}@${i.position.pos}` : i.kind));
    expect(kinds).toEqual(['progress@126', 'progress@197', 'begin', 'rows', 'commit@431']);
    const rows = items.find((i) => i.kind === 'rows');
    expect(rows?.kind === 'rows' && rows.rows).toEqual([{ a: 1 }]);
  });
});

describe('compressed transactions with GTIDs and ROWS_QUERY inside (mysql-binlog-connector-rust, 8.0.31)', () => {
  it('each payload is one transaction: its GTID on its begin and commit, committed at the payload’s end', async () => {
    const column = (name: string, type: string) => ({
      COLUMN_NAME: name,
      COLUMN_TYPE: type,
      CHARACTER_SET_NAME: /char|text|enum|set/.test(type) ? 'utf8mb4' : null,
    });
    // test_table_3's types as its TABLE_MAP gives them; ENUM/SET labels are not in the file (MINIMAL metadata).
    const types = ['int', 'varchar(255)', 'date', 'int', 'text', 'timestamp', "enum('large')", "set('a','b','c','d')", 'char(2)', 'json'];
    const all = [...types, 'varchar(255)', 'date', 'date', 'int', 'text', 'timestamp', 'date', 'int', 'text', 'timestamp'];
    const events = await decodeBinlogFile('mysql-binlog-connector-rust--mysql-bin.000057', {
      columns: { 'a.b': [int('id')], 'a.test_table_3': all.map((t, i) => column(`c${i}`, t)) },
    });
    expect(names(events).filter((n) => n !== 'Format' && n !== 'PreviousGtids')).toEqual([
      'Gtid',
      'Query',
      'Gtid',
      'Query',
      'RowsQuery',
      'TableMap',
      'WriteRows',
      'Xid',
      'TransactionPayload',
      'Gtid',
      'Query',
      'RowsQuery',
      'TableMap',
      'UpdateRows',
      'RowsQuery',
      'TableMap',
      'WriteRows',
      'Xid',
      'TransactionPayload',
    ]);
    const insert = events.filter((e) => e.getTypeName() === 'WriteRows')[1].rows[0];
    expect([insert.c0, insert.c1, jsonValue(insert.c9), insert.c13]).toEqual([6666, 'product_item_value_2', '{"c": 1}', 2222]);
    const items = readerItems(events, 'mysql-bin.000057');
    const commits = items.flatMap((i) => (i.kind === 'commit' ? [`${i.position.pos} ${i.position.gtid}`] : []));
    const uuid = '76f3e7be-6720-11ed-9cad-0242ac110002';
    expect(commits).toEqual([`378 ${uuid}:11`, `651 ${uuid}:12`, `1283 ${uuid}:13`]);
    expect(items.filter((i) => i.kind === 'rows').map((i) => i.kind === 'rows' && i.op)).toEqual(['insert', 'update', 'insert']);
  });
});

describe('MySQL binary JSON, as MySQL prints it', () => {
  it('prints OPAQUE values (BLOB, DATE, DATETIME, TIME, DECIMAL) and arrays of the json-opaque file as the server does', async () => {
    const events = await decodeBinlogFile('rust_mysql_common--json-opaque.binlog');
    const values = events.filter((e) => e.getTypeName() === 'WriteRows').map((e) => jsonValue(e.rows[0].a));
    expect(values).toEqual(JSON_OPAQUE_DOCUMENTS);
  });

  it('keeps MySQL’s member order (by key length, then bytes), which a JavaScript object would not', () => {
    // {"b": 1, "10": 2}: count, size; key entries (offset, length); value entries (type, inline int16); keys
    const doc = Buffer.from(['00', '0200', '1500', '12000100', '13000200', '050100', '050200', '623130'].join(''), 'hex');
    expect(jsonBinaryToText(doc)).toBe('{"b": 1, "10": 2}');
    expect(Object.keys(JSON.parse(jsonBinaryToText(doc)))).toEqual(['10', 'b']);
  });

  it('prints doubles as my_gcvt does, with ".0" on an integral one (json_dom.cc)', () => {
    const double = (value: number) => {
      const doc = Buffer.alloc(9, 0x0b);
      doc.writeDoubleLE(value, 1);
      return jsonBinaryToText(doc);
    };
    const cases: [number, string][] = [
      [1.5, '1.5'],
      [3, '3.0'],
      [1e-7, '0.0000001'],
      [1e-16, '1e-16'],
      [1e14, '100000000000000.0'],
      [1e15, '1e15'],
      [1234567890123456.8, '1234567890123456.8'],
      [123456789012345680, '1.2345678901234568e17'],
      [1.5e300, '1.5e300'],
      [-2.25, '-2.25'],
    ];
    expect(cases.map(([v]) => double(v))).toEqual(cases.map(([, text]) => text));
  });

  it('follows offsets, so a document with unused space (updated in place) prints as its values', () => {
    // {"a": "x"}: the key at 0x0b, four unused bytes, the string (length 1, "x") at 0x10
    const doc = Buffer.from(['00', '0100', '1200', '0b000100', '0c1000', '61', 'ffffffff', '0178'].join(''), 'hex');
    expect(jsonBinaryToText(doc)).toBe('{"a": "x"}');
  });
});

/** An update's images with their JSON column decoded as the binlog reader decodes it (binlog/json.ts): a diff applied, the documents printed. */
function withJson<R extends { before: Record<string, unknown>; after: Record<string, unknown> }>(row: R): R {
  applyPartialJson(row.before, row.after, ['json_col']);
  jsonText(row.before, ['json_col']);
  jsonText(row.after, ['json_col']);
  return row;
}

describe('partial JSON updates (PARTIAL_UPDATE_ROWS, binlog_row_value_options=PARTIAL_JSON)', () => {
  it('decodes the diff of json.binlog’s partial update; applied to the row’s previous document it gives what the server’s generated columns computed', async () => {
    const events = await decodeBinlogFile('rust_mysql_common--json.binlog.000001', {
      columns: { 'mysql.t': [int('id'), { COLUMN_NAME: 'json_col', COLUMN_TYPE: 'json' }, text('name', 'varchar(100)'), int('age')] },
    });
    const updates = events.filter((e) => e.getTypeName() === 'UpdateRows');
    expect(updates).toHaveLength(2);
    const [full, partial] = updates;
    // This file was written with binlog_row_image=MINIMAL: the before image holds the key only, so
    // zongji hands over the change itself (sluice refuses such an image: ROW_IMAGE_PARTIAL).
    const row = partial.rows[0];
    withJson(row);
    expect(row.before.id).toBe(1);
    expect(row.after.json_col).toEqual({ jsonDiff: [{ operation: 'REPLACE', path: '$.age', value: '26' }] });
    const previous = withJson(full.rows.find((r: { after: { id: number } }) => r.after.id === 1)).after;
    const diffs = row.after.json_col.jsonDiff.map((d: { operation: string; path: string; value: string }) => ({ ...d, value: { text: d.value } }));
    const applied = jsonTreeToText(applyJsonDiffs(jsonTree(previous.json_col), diffs));
    expect(applied).toBe('{"age": 26, "data": "xxxxxxxxxx", "name": "Joe"}');
    expect(JSON.parse(applied).age).toBe(row.after.age);
  });

  it('with a FULL before image, zongji writes the exact after image: the diff applied to the document', async () => {
    // json.binlog's PARTIAL_UPDATE_ROWS event (table id, flags, header kept) rewritten as a server
    // with binlog_row_image=FULL writes it: both images whole, the after image's JSON a diff.
    const doc = Buffer.from(
      ['00', '0300', '3300', '19000300', '1c000400', '20000400', '051900', '0c2400', '0c2f00'].join('') +
        Buffer.from('agedataname').toString('hex') +
        '0a' +
        Buffer.from('xxxxxxxxxx').toString('hex') +
        '03' +
        Buffer.from('Joe').toString('hex'),
      'hex',
    );
    expect(jsonBinaryToText(doc)).toBe('{"age": 25, "data": "xxxxxxxxxx", "name": "Joe"}');
    const u32 = (n: number) => Buffer.from(Uint32Array.of(n).buffer);
    const diff = Buffer.concat([Buffer.from([0, 5]), Buffer.from('$.age'), Buffer.from([3, 0x05, 26, 0])]);
    const image = (json: Buffer, age: number) =>
      Buffer.concat([Buffer.from([0]), u32(1), u32(json.length), json, Buffer.from([3, 0]), Buffer.from('Joe'), u32(age)]);
    const file = readFileSync(join(mysqlFixtures(), 'rust_mysql_common--json.binlog.000001'));
    const at = file.indexOf(Buffer.from([0x27, 1, 0, 0, 0]), 4) - 4; // the event whose type byte is 39
    const original = file.subarray(at, at + file.readUInt32LE(at + 9));
    const body = Buffer.concat([original.subarray(19, 27), Buffer.from([2, 0, 4, 0x0f, 0x0f]), image(doc, 25), Buffer.from([1, 1]), image(diff, 26)]);
    const header = Buffer.from(original.subarray(0, 19));
    header.writeUInt32LE(19 + body.length + 4, 9);
    const event = Buffer.concat([header, body]);
    const rewritten = Buffer.concat([file.subarray(0, at), event, u32(crc32(event)), file.subarray(at + original.length)]);
    const path = join(mkdtempSync(join(tmpdir(), 'sluice-partial-')), 'json-full.binlog');
    writeFileSync(path, rewritten);
    const events = await decodeBinlogFile(path, {
      columns: { 'mysql.t': [int('id'), { COLUMN_NAME: 'json_col', COLUMN_TYPE: 'json' }, text('name', 'varchar(100)'), int('age')] },
    });
    const partial = events.filter((e) => e.getTypeName() === 'UpdateRows')[1];
    expect(partial.rows.map(withJson)).toEqual([
      {
        before: { id: 1, json_col: '{"age": 25, "data": "xxxxxxxxxx", "name": "Joe"}', name: 'Joe', age: 25 },
        after: { id: 1, json_col: '{"age": 26, "data": "xxxxxxxxxx", "name": "Joe"}', name: 'Joe', age: 26 },
      },
    ]);
  });

  it('applies REPLACE, INSERT and REMOVE at members, quoted members and array cells, as sql/json_diff.cc does', () => {
    const tree = jsonTree('{"a": 1, "b c": [1, 2, 3], "long": {"x": true}}');
    const v = (text: string) => ({ text });
    const result = applyJsonDiffs(tree, [
      { operation: 'REPLACE', path: '$.a', value: v('"one"') },
      { operation: 'INSERT', path: '$."b c"[1]', value: v('9') },
      { operation: 'REMOVE', path: '$."b c"[3]' },
      { operation: 'INSERT', path: '$.zz', value: v('null') },
      { operation: 'INSERT', path: '$.long.y', value: v('false') },
      { operation: 'INSERT', path: '$."b c"[99]', value: v('4') },
    ]);
    expect(jsonTreeToText(result)).toBe('{"a": "one", "zz": null, "b c": [1, 9, 2, 4], "long": {"x": true, "y": false}}');
    expect(() => applyJsonDiffs(jsonTree('{"a": 1}'), [{ operation: 'REPLACE', path: '$.b', value: v('1') }])).toThrow(/does not fit/);
    expect(() => applyJsonDiffs(jsonTree('[1]'), [{ operation: 'REMOVE', path: '$[1]' }])).toThrow(/does not fit/);
  });
});

describe('VECTOR (MySQL 9.0, type 242, VECTOR_DIMENSIONALITY metadata)', () => {
  it('decodes the stored float32s exactly, and the TEXT column after a VECTOR reads its own bytes', async () => {
    const events = await decodeBinlogFile('rust_mysql_common--vector.binlog');
    const writes = events.filter((e) => e.getTypeName() === 'WriteRows');
    const [foo, bar] = writes;
    expect(foo.rows.map((r: { vector_column: Buffer }) => r.vector_column.toString('hex'))).toEqual(['cdcc8c3fcdcc0c4033335340', '0000803f000080bf00000000']);
    expect([...new Float32Array(new Uint8Array(foo.rows[1].vector_column).buffer)]).toEqual([1, -1, 0]);
    expect(bar.rows.map((r: { foo: string | null }) => r.foo)).toEqual([null, 'bar']);
    expect(bar.rows[1].vector_column2).toHaveLength(16);
    const columns = bar.tableMap[bar.tableId].columnSchemas.map((c: { COLUMN_TYPE: string }) => c.COLUMN_TYPE);
    expect(columns).toEqual(['bigint unsigned', 'vector(2)', 'text', 'vector(4)']);
  });

  it('the reader writes VECTOR(n) as binary (base64 of the stored bytes), its type as vector(n)', async () => {
    const events = await decodeBinlogFile('rust_mysql_common--vector.binlog');
    const rows = readerItems(events, 'binlog.000001').filter((i) => i.kind === 'rows');
    const first = rows[0];
    if (first?.kind !== 'rows' || first.op !== 'insert') throw new Error('no insert');
    expect(first.shape.columns.map((c) => [c.name, c.kind, c.sqlType])).toEqual([
      ['id', 'int', 'bigint unsigned'],
      ['vector_column', 'binary', 'vector(3)'],
    ]);
    expect(encodeRow(first.shape, first.rows[0] as Record<string, unknown>)).toBe(
      `{"id":1,"vector_column":"${Buffer.from('cdcc8c3fcdcc0c4033335340', 'hex').toString('base64')}"}`,
    );
  });
});

describe('TIME and GTIDs as MySQL writes them', () => {
  it('decodes the negative TIME of time_issue exactly (-507:48:27), through the reader’s own TIME2 decoding', async () => {
    const events = await decodeBinlogFile('rust_mysql_common--time_issue.000001', { columns: { 'noria.t': [{ COLUMN_NAME: 'c', COLUMN_TYPE: 'time' }] } });
    const rows = readerItems(events, 'binlog.000001').filter((i) => i.kind === 'rows');
    const first = rows[0];
    if (first?.kind !== 'rows' || first.op !== 'insert') throw new Error('no insert');
    expect(first.rows).toEqual([{ c: '-507:48:27' }]);
  });

  it('keeps a tagged GTID (uuid:tag:n, MySQL 8.4+) whole in the begin item and the committed position', async () => {
    const events = await decodeBinlogFile('rust_mysql_common--binlog_transaction_with_GTID_TAG.000001', {
      columns: { 'test.orders': [int('id'), int('customer_id'), { COLUMN_NAME: 'amount', COLUMN_TYPE: 'decimal(10,2)' }] },
    });
    expect(events.find((e) => e.getTypeName() === 'PreviousGtids').gtidSet).toBe('55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2');
    const items = readerItems(events, 'binlog.000001');
    const begin = items.find((i) => i.kind === 'begin');
    const commit = items.find((i) => i.kind === 'commit');
    expect(begin?.kind === 'begin' && begin.gtid).toBe('55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3');
    expect(commit?.kind === 'commit' && commit.position.gtid).toBe('55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3');
  });
});

describe('row images MySQL writes with binlog_row_image=MINIMAL', () => {
  /** The capture guard's first error over the file's events, as the reader checks them. */
  async function guardError(file: string, columns: Record<string, ColumnRow[]>): Promise<SluiceError | undefined> {
    const events = await decodeBinlogFile(file, { columns });
    const guard = new StreamGuard({ file: 'binlog.000001', pos: 4 });
    const offsets = new EventOffsets('binlog.000001', 4);
    let header: unknown;
    for (const event of events) {
      if (event.packetHeader !== header) offsets.onHeader(event.packetHeader, event.inPayload);
      header = event.packetHeader;
      const verdict = await guard.check(event, event.getTypeName(), 'binlog.000001', offsets.endOf());
      if (verdict instanceof SluiceError) return verdict;
    }
    return undefined;
  }

  it('an insert without some columns stops with ROW_IMAGE_PARTIAL naming them, never NULLs', async () => {
    const error = await guardError('rust_mysql_common--minimal_row_metadata.000001', {
      'noria.t1': [
        int('col_1'),
        { COLUMN_NAME: 'col_2', COLUMN_TYPE: 'blob' },
        text('col_3', 'char(2)'),
        int('col_4'),
        { COLUMN_NAME: 'col_5', COLUMN_TYPE: 'int unsigned' },
      ],
    });
    expect(error?.code).toBe('ROW_IMAGE_PARTIAL');
    expect(error?.message).toContain('without column(s) col_2, col_4');
    expect(error?.message).toContain('binlog_row_image=MINIMAL');
  });

  it('a partial JSON update whose before image lacks the document stops the same way', async () => {
    const error = await guardError('rust_mysql_common--json.binlog.000001', {
      'mysql.t': [int('id'), { COLUMN_NAME: 'json_col', COLUMN_TYPE: 'json' }, text('name', 'varchar(100)'), int('age')],
    });
    expect(error?.code).toBe('ROW_IMAGE_PARTIAL');
    expect(error?.message).toContain('an update of mysql.t');
  });
});
