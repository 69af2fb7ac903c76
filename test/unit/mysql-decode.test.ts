import { afterEach, describe, expect, it } from 'vitest';
import { type BinlogItem, BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { type ColumnRow, type DecodedEvent, decodeBinlogFile } from '../support/mysql-binlog-file.ts';

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
  for (const event of events) {
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
