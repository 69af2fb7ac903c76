import type ZongJi from '@vlasky/zongji';
import { DeleteRows, ROWS_EVENT_CODES, UpdateRows, WriteRows } from './rows.ts';
import { type SkipTable, TABLE_MAP_EVENT, tableMapParser } from './table-map.ts';
import { deliverPayloadEvents, TRANSACTION_PAYLOAD_EVENT, TransactionPayload } from './transaction-payload.ts';
import { setEventParser } from './zongji-hooks.ts';

/** What a stream's decoders are told of it. */
export interface DecoderOptions {
  /** Tables whose events are left out, rows included (zongji's own filter when not given). */
  readonly skipTable?: SkipTable;
}

/**
 * Registers sluice's decoders with a zongji instance (its `setEventParser` hook, as Debezium
 * registers its deserializers with mysql-binlog-connector-java's EventDeserializer): zongji keeps
 * the protocol, sluice owns the decoding of these events. Every stream that decodes as sluice does
 * registers them, the reader's and the tests' alike. All are registered first, before any packet.
 * - TABLE_MAP: the table's columns and metadata, VECTOR and MariaDB's GEOMETRY charsets included, a
 *   byte-identical one reusing the last one's parse (table-map.ts); `skipTable` filters there.
 * - TRANSACTION_PAYLOAD: the compressed transaction's events reach zongji as packets of their own, then
 *   the payload event, emptied (transaction-payload.ts). zongji's own class, which skips them,
 *   reports them as unsupported (a stream error).
 * - WRITE_ROWS, UPDATE_ROWS, DELETE_ROWS in every version, MySQL's PARTIAL_UPDATE_ROWS (an
 *   UpdateRows, its JSON diffs for the reader to apply; zongji's own class reports it as
 *   unsupported) and MariaDB's compressed ones (rows.ts), their values read by values.ts: JSON and
 *   VECTOR as their bytes, which the reader prints as MySQL does (json.ts).
 */
export function registerDecoders(zongji: ZongJi, options: DecoderOptions = {}): void {
  setEventParser(zongji, TABLE_MAP_EVENT, tableMapParser(options.skipTable));
  setEventParser(zongji, TRANSACTION_PAYLOAD_EVENT, TransactionPayload);
  deliverPayloadEvents(zongji);
  for (const code of ROWS_EVENT_CODES.write) setEventParser(zongji, code, WriteRows);
  for (const code of ROWS_EVENT_CODES.update) setEventParser(zongji, code, UpdateRows);
  for (const code of ROWS_EVENT_CODES.delete) setEventParser(zongji, code, DeleteRows);
}
