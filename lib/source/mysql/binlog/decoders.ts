import type ZongJi from '@vlasky/zongji';
import { MysqlType } from '../../../core/mysql-types.ts';
import { readStoredBytes } from './stored-bytes.ts';
import { TRANSACTION_PAYLOAD_EVENT, TransactionPayload } from './transaction-payload.ts';

/**
 * Registers sluice's decoders with a zongji instance (its `setEventParser` and `setColumnReader`
 * hooks, as Debezium registers its deserializers with mysql-binlog-connector-java's
 * EventDeserializer): zongji keeps the protocol, sluice owns the decoding of these events and
 * values. Every stream that decodes as sluice does registers them, the reader's and the tests' alike.
 * - TRANSACTION_PAYLOAD: the compressed transaction's events, for zongji to deliver (transaction-payload.ts).
 *   zongji's own class, which skips them, was the only one it reports as unsupported (a stream error):
 *   registered first, before any packet, so that report never comes.
 * - JSON values: their bytes, which the reader prints as MySQL does and applies partial updates to (json.ts).
 * - VECTOR values (MySQL 9): their bytes, the stored float32s.
 */
export function registerDecoders(zongji: Pick<ZongJi, 'setEventParser' | 'setColumnReader'>): void {
  zongji.setEventParser(TRANSACTION_PAYLOAD_EVENT, TransactionPayload);
  zongji.setColumnReader(MysqlType.JSON, readStoredBytes);
  zongji.setColumnReader(MysqlType.VECTOR, readStoredBytes);
}
