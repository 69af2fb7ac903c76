import { type EncodedShape, encodeKey, encodeRow, encodeSource, eventLine } from '../format/event.ts';
import { seq, seqPrefix } from '../format/seq.ts';
import type { Batch } from '../sink/s3/batch.ts';
import type { BinlogItem } from '../source/mysql/binlog-reader.ts';

/**
 * The transaction the capture loop is inside: what every event of it shares (seq prefix, encoded
 * `source`) and where it is (the next change index, whether it wrote captured rows).
 */
export class TransactionCursor {
  private prefix = '';
  private index = 0;
  /** The encoded `source` field of the transaction's events. */
  source = '';
  inTransaction = false;
  /** Whether the transaction wrote captured rows (filtered tables' transactions are not counted). */
  hasRows = false;
  /** Binlog time of the last transaction begun, for the run's lag. */
  lastTimestamp: number | undefined;

  begin(item: Extract<BinlogItem, { kind: 'begin' }>): void {
    this.lastTimestamp = item.tsMs;
    this.inTransaction = true;
    this.hasRows = false;
    this.prefix = seqPrefix(item.file, item.pos);
    this.index = 0;
    this.source = encodeSource({
      file: item.file,
      pos: item.pos,
      gtid: item.gtid,
      serverId: item.serverId,
      tsMs: item.tsMs,
      txn: item.gtid ?? `${item.file}:${item.pos}`,
      snapshot: false,
    });
  }

  /** The seq of the transaction's next change. */
  nextSeq(): string {
    return seq(this.prefix, this.index++);
  }

  /** Ends the transaction; returns whether it wrote captured rows. */
  end(): boolean {
    this.inTransaction = false;
    return this.hasRows;
  }

  /** Names the transaction in messages: its seq prefix. */
  toString(): string {
    return this.prefix;
  }
}

/**
 * Encodes one rows event, line by line, into the batch; a primary-key change becomes a delete of
 * the old key and a create of the new one. Returns, if the batch asked for it, a promise to await
 * before reading on (back-pressure, at most one rows event late).
 */
export function writeRows(batch: Batch, item: Extract<BinlogItem, { kind: 'rows' }>, cursor: TransactionCursor): Promise<void> | undefined {
  const shape: EncodedShape = item.shape;
  cursor.hasRows = true;
  let wait: Promise<void> | undefined;
  const emit = (op: 'c' | 'u' | 'd', key: string, before: string, after: string) => {
    const s = cursor.nextSeq();
    wait = batch.write(shape, eventLine(op, shape, key, before, after, cursor.source, s), s) ?? wait;
  };
  if (item.op === 'update') {
    for (const { before, after } of item.rows) {
      const b = encodeRow(shape, before);
      const a = encodeRow(shape, after);
      const kb = encodeKey(shape, before);
      const ka = encodeKey(shape, after);
      if (kb === ka) emit('u', ka, b, a);
      else {
        emit('d', kb, b, 'null');
        emit('c', ka, 'null', a);
      }
    }
  } else if (item.op === 'insert') {
    for (const row of item.rows) emit('c', encodeKey(shape, row), 'null', encodeRow(shape, row));
  } else {
    for (const row of item.rows) emit('d', encodeKey(shape, row), encodeRow(shape, row), 'null');
  }
  return wait;
}
