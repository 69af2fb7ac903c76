import type { KeyValues } from '../core/key-values.ts';
import { type EncodedShape, encodeKey, encodeRow, eventLine, lineParts, type Row, rowProperty } from '../format/event.ts';
import { SNAPSHOT_ROW_WIDTH, snapshotSeq } from '../format/seq.ts';
import type { Batch, TableObject } from '../sink/s3/batch.ts';
import { LINE_ROOM } from '../sink/s3/staging.ts';
import { type LineEncoder, lineEncoder, type PageLineWriter, type RowPacket, type WireColumn } from '../source/mysql/row-lines.ts';
import type { RowSink } from '../source/mysql/snapshot-reader.ts';

/**
 * One snapshot page's rows written into its batch as `r` events, in the order they arrive, as a
 * `RowSink` of the paging connection. Where every column of the result has a wire form the line
 * encoder writes exactly (lib/source/mysql/row-lines.ts), each row packet becomes its line's bytes
 * in the staging buffer; otherwise — and for a row the encoder leaves (a line that could pass its
 * room by the encoder's bound, text that is not valid UTF-8) — the row is parsed by mysql2 and encoded as a string: the
 * reference path, which writes the same bytes. A keyless table's read spans several pages: `next`
 * moves the sink on to the next page's batch mid-read.
 */
export class PageLines implements RowSink {
  /** Rows written to the current page. */
  count = 0;
  /** Of `count`, those written from the wire as bytes. */
  wireRows = 0;
  private encoder: LineEncoder | undefined;
  private writer: PageLineWriter | undefined;
  private decode: ((packet: RowPacket) => Row) | undefined;
  private entry: TableObject | undefined;
  /** Rows and bytes written as bytes since the batch last recorded them. */
  private unrecorded = { rows: 0, bytes: 0 };
  /** The last row: an object, or where its packet's bytes are (mysql2 reuses its packet object, never the bytes). */
  private lastRow: Row | undefined;
  private readonly lastPacket: { buffer: Buffer; offset: number; end: number } = { buffer: Buffer.alloc(0), offset: 0, end: 0 };

  constructor(
    private batch: Batch,
    private readonly shape: EncodedShape,
    private readonly source: string,
    private prefix: string,
    private readonly options: {
      /** Lines from the wire as bytes where the result allows; false: always the reference path. */
      readonly bytes: boolean;
      /** Called once a page holds `pageRows` rows; the read waits for it (a keyless table's page commit). */
      readonly full?: () => Promise<void>;
      readonly pageRows?: number;
    },
  ) {}

  packets(fields: readonly WireColumn[], decode: (packet: RowPacket) => Row) {
    this.decode = decode;
    this.encoder = this.options.bytes ? lineEncoder(this.shape, fields) : undefined;
    if (!this.encoder) return undefined;
    return (packet: RowPacket) => this.packet(packet);
  }

  /** A row through the reference path. */
  row(row: Row): Promise<void> | undefined {
    const seq = snapshotSeq(this.prefix, this.count++);
    this.lastRow = row;
    // A keyless table's rows have `key: null` (its shape's key is empty).
    const key = this.shape.key?.length ? encodeKey(this.shape, row) : 'null';
    const wait = this.batch.write(this.shape, eventLine('r', this.shape, key, 'null', encodeRow(this.shape, row), this.source, seq), seq);
    return this.afterRow(wait);
  }

  private packet(packet: RowPacket): Promise<void> | undefined {
    if (!this.writer || !this.entry) {
      const parts = lineParts('r', this.shape, this.source, this.prefix);
      this.writer = (this.encoder as LineEncoder).page({ ...parts, indexWidth: SNAPSHOT_ROW_WIDTH });
      this.entry = this.batch.objectOf(this.shape, snapshotSeq(this.prefix, this.count));
    }
    const room = this.writer.bound(packet);
    const object = this.entry.object;
    if (room <= LINE_ROOM) {
      const out = object.reserve(room);
      const at = object.offset;
      const end = this.writer.encode(packet, out, at, this.count);
      // Past the buffer's end a typed array drops writes silently: a bound that undershot would
      // lose bytes. It cannot (lib/source/mysql/row-lines.ts), but such a row takes the reference path.
      if (end >= 0 && end <= out.length) {
        this.count++;
        this.wireRows++;
        this.unrecorded.rows++;
        this.unrecorded.bytes += end - at;
        this.lastRow = undefined;
        this.lastPacket.buffer = packet.buffer;
        this.lastPacket.offset = packet.offset;
        this.lastPacket.end = packet.end;
        return this.afterRow(object.commit(end, 1));
      }
    }
    this.record();
    return this.row((this.decode as (packet: RowPacket) => Row)(packet));
  }

  private afterRow(wait: Promise<void> | undefined): Promise<void> | undefined {
    const { full, pageRows } = this.options;
    if (!full || this.count !== pageRows) return wait;
    return wait ? wait.then(full) : full();
  }

  /** Tells the batch of the lines written as bytes since it last heard (its event count, size and last seq). */
  private record(): void {
    const { rows, bytes } = this.unrecorded;
    if (!rows || !this.entry) return;
    this.batch.wrote(this.entry, rows, bytes, snapshotSeq(this.prefix, this.count - 1));
    this.unrecorded = { rows: 0, bytes: 0 };
  }

  /** Ends the current page: its batch is complete (call before staging it). */
  finish(): void {
    this.record();
  }

  /** Moves on to the next page: its batch and seq prefix (a keyless table's read, mid-stream). */
  next(batch: Batch, prefix: string): void {
    this.finish();
    this.batch = batch;
    this.prefix = prefix;
    this.count = 0;
    this.wireRows = 0;
    this.writer = undefined;
    this.entry = undefined;
  }

  /** The key values of the page's last row (the cursor the next page starts after), or null for an empty page. */
  lastKey(key: readonly string[]): KeyValues | null {
    if (!this.count) return null;
    const row = this.lastRow ?? (this.decode as (packet: RowPacket) => Row)(this.lastPacket);
    return key.map((k) => row[rowProperty(k)]);
  }
}
