import type ZongJi from '@vlasky/zongji';
import { MysqlType } from '../../../core/mysql-types.ts';
import { readStoredBytes } from './stored-bytes.ts';
import { type SkipTable, TABLE_MAP_EVENT, tableMapParser } from './table-map.ts';
import { deliverPayloadEvents, TRANSACTION_PAYLOAD_EVENT, TransactionPayload } from './transaction-payload.ts';

/** What a stream's decoders are told of it. */
export interface DecoderOptions {
  /** Tables whose events are left out, rows included (zongji's own filter when not given). */
  readonly skipTable?: SkipTable;
}

/**
 * Registers sluice's decoders with a zongji instance (its `setEventParser` and `setColumnReader`
 * hooks, as Debezium registers its deserializers with mysql-binlog-connector-java's
 * EventDeserializer): zongji keeps the protocol, sluice owns the decoding of these events and
 * values. Every stream that decodes as sluice does registers them, the reader's and the tests' alike.
 * - TABLE_MAP: the table's columns and metadata, VECTOR and MariaDB's GEOMETRY charsets included, a
 *   byte-identical one reusing the last one's parse (table-map.ts); `skipTable` filters there.
 * - TRANSACTION_PAYLOAD: the compressed transaction's events reach zongji as packets of their own, then
 *   the payload event, emptied (transaction-payload.ts). zongji's own class, which skips them, was the
 *   only one it reports as unsupported (a stream error): registered first, before any packet, so that
 *   report never comes.
 * - JSON values: their bytes, which the reader prints as MySQL does and applies partial updates to (json.ts).
 * - VECTOR values (MySQL 9): their bytes, the stored float32s.
 */
export function registerDecoders(zongji: ZongJi, options: DecoderOptions = {}): void {
  zongji.setEventParser(TABLE_MAP_EVENT, tableMapParser(options.skipTable));
  zongji.setEventParser(TRANSACTION_PAYLOAD_EVENT, TransactionPayload);
  deliverPayloadEvents(zongji);
  zongji.setColumnReader(MysqlType.JSON, readStoredBytes);
  zongji.setColumnReader(MysqlType.VECTOR, readStoredBytes);
}
