import type ZongJi from '@vlasky/zongji';
import { TRANSACTION_PAYLOAD_EVENT, TransactionPayload } from './transaction-payload.ts';

/**
 * Registers sluice's event parsers with a zongji instance (its `setEventParser` hook, as Debezium
 * registers its deserializers with mysql-binlog-connector-java's EventDeserializer): zongji keeps
 * the protocol, sluice owns the decoding of these events. Every stream that decodes as sluice
 * does registers them, the reader's and the tests' alike.
 */
export function registerDecoders(zongji: Pick<ZongJi, 'setEventParser'>): void {
  zongji.setEventParser(TRANSACTION_PAYLOAD_EVENT, TransactionPayload);
}
