import { type EncodedShape, encodeKey, encodeRow, encodeSource, eventLine, type Op, type Row } from '../format/event.ts';
import { shapeBytes, transactionBytes, writeLine } from '../format/line-bytes.ts';
import { seq, seqPrefix } from '../format/seq.ts';
import type { Batch, TableObject } from '../sink/s3/batch.ts';
import type { BinlogItem } from '../source/mysql/binlog-reader.ts';

/** Digits of a change index in a binlog event's seq (`seq` pads to them). */
const INDEX_WIDTH = seq('', 0).length;
/** Room reserved in the staging buffer per line written as bytes; a line that might be longer is written as text. */
const LINE_ROOM = 16 * 1024;

/**
 * The transaction the capture loop is inside: what every event of it shares (seq prefix, encoded
 * `source`) and where it is (the next change index, whether it wrote captured rows).
 */
export class TransactionCursor {
  private prefix = '';
  private index = 0;
  /** The encoded `source` field of the transaction's events. */
  source = '';
  /** `transactionBytes` of the transaction, made when its first line is written as bytes. */
  private bytes: Buffer | undefined;
  inTransaction = false;
  /** Whether the transaction wrote captured rows (filtered tables' transactions are not counted). */
  hasRows = false;
  /** Binlog time of the last transaction begun, for the run's lag. */
  lastTimestamp: number | undefined;

  /** `epoch`: the history epoch of the position the run reads from (lib/format/seq.ts). */
  constructor(private readonly epoch: number) {}

  begin(item: Extract<BinlogItem, { kind: 'begin' }>): void {
    this.lastTimestamp = item.tsMs;
    this.inTransaction = true;
    this.hasRows = false;
    this.prefix = seqPrefix(this.epoch, item.file, item.pos);
    this.index = 0;
    this.bytes = undefined;
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

  /** The change index of the transaction's next change (its seq is `seqAt` of it). */
  nextIndex(): number {
    return this.index++;
  }

  seqAt(index: number): string {
    return seq(this.prefix, index);
  }

  /** What every line of the transaction holds after its after-image, as bytes (see line-bytes.ts). */
  lineBytes(): Buffer {
    this.bytes ??= transactionBytes(this.source, this.prefix);
    return this.bytes;
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
 * the old key and a create of the new one. Lines are written as bytes straight into the table's
 * staging buffer (line-bytes.ts); one that might not fit its room is written as text, the same
 * bytes. Returns, if the batch asked for it, a promise to await before reading on (back-pressure,
 * at most one rows event late).
 */
export function writeRows(batch: Batch, item: Extract<BinlogItem, { kind: 'rows' }>, cursor: TransactionCursor): Promise<void> | undefined {
  const shape: EncodedShape = item.shape;
  cursor.hasRows = true;
  const bytes = shapeBytes(shape);
  const transaction = cursor.lineBytes();
  let entry: TableObject | undefined;
  let lines = 0;
  let size = 0;
  let first = -1;
  let firstSeq = '';
  let last = -1;
  let wait: Promise<void> | undefined;
  const emit = (op: Op, keyRow: Row, before: Row | null, after: Row | null) => {
    const index = cursor.nextIndex();
    last = index;
    if (!entry) {
      first = index;
      firstSeq = cursor.seqAt(index);
      entry = batch.objectOf(shape, firstSeq);
    }
    const object = entry.object;
    const out = object.reserve(LINE_ROOM);
    const at = object.offset;
    const end = writeLine(out, at, at + LINE_ROOM, bytes, op, keyRow, before, after, transaction, index, INDEX_WIDTH);
    if (end >= 0) {
      lines++;
      size += end - at;
      wait = object.commit(end, 1) ?? wait;
      return;
    }
    const s = cursor.seqAt(index);
    const line = eventLine(
      op,
      shape,
      encodeKey(shape, keyRow),
      before ? encodeRow(shape, before) : 'null',
      after ? encodeRow(shape, after) : 'null',
      cursor.source,
      s,
    );
    wait = batch.write(shape, line, s) ?? wait;
  };
  if (item.op === 'update') {
    for (const { before, after } of item.rows) {
      if (encodeKey(shape, before) === encodeKey(shape, after)) emit('u', after, before, after);
      else {
        emit('d', before, before, null);
        emit('c', after, null, after);
      }
    }
  } else if (item.op === 'insert') {
    for (const row of item.rows) emit('c', row, null, row);
  } else {
    for (const row of item.rows) emit('d', row, row, null);
  }
  // The batch's count, size and last seq (also when the last line went as text).
  if (entry) batch.wrote(entry, lines, size, last === first ? firstSeq : cursor.seqAt(last));
  return wait;
}
