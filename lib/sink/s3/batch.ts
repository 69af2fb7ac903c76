import type { S3Client } from '@aws-sdk/client-s3';
import { tablePath } from '../../core/table-path.ts';
import { tableKey } from '../../core/table-ref.ts';
import type { EncodedShape } from '../../format/event.ts';
import { StagingObject } from './staging.ts';

export interface TableObject {
  readonly shape: EncodedShape;
  readonly object: StagingObject;
  seqMin: string;
  seqMax: string;
}

/**
 * The uncommitted micro-batch: one streaming staging object per table touched. It only ever
 * holds whole transactions when it is committed (the capture loop cuts at boundaries).
 */
export class Batch {
  /** By `tableKey`. */
  readonly tables = new Map<string, TableObject>();
  events = 0;
  /** Uncompressed size in characters (≈ bytes for mostly-ASCII data). */
  size = 0;
  /** Source transactions with captured rows in the batch (binlog batches; the manifest's `transactions`). */
  transactions = 0;
  readonly startedAt: number;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** Staging "folder" (key prefix ending in /) for this batch's objects. */
    private readonly stagingDir: string,
    now: number,
  ) {
    this.startedAt = now;
  }

  stagingKey(name: string): string {
    return `${this.stagingDir}${name}`;
  }

  private last: TableObject | undefined;

  /** Appends one encoded event line for a table; resolves once the data is accepted (back-pressure). */
  write(shape: EncodedShape, line: string, seq: string): Promise<void> | undefined {
    const entry = this.objectOf(shape, seq);
    // Characters, not bytes: close enough to cut batches by size without encoding twice.
    this.wrote(entry, 1, line.length, seq);
    return entry.object.write(line);
  }

  /**
   * The table object `shape`'s lines go to (made on first use, `seq` its first line's), for lines
   * written as bytes straight into its staging object (`StagingObject.reserve`); `wrote` records them.
   */
  objectOf(shape: EncodedShape, seq: string): TableObject {
    let entry = this.last?.shape === shape ? this.last : this.tables.get(tableKey(shape));
    if (!entry) {
      // A segment never holds "." or "/", so `<db-seg>/<table-seg>.jsonl.gz` is one object per table and stays inside the batch's folder.
      const object = new StagingObject(this.s3, this.bucket, this.stagingKey(`${tablePath(shape)}.jsonl.gz`));
      entry = { shape, object, seqMin: seq, seqMax: seq };
      this.tables.set(tableKey(shape), entry);
    }
    // The shape can change inside a batch (DDL); the manifest records the latest.
    if (entry.shape !== shape) (entry as { shape: EncodedShape }).shape = shape;
    this.last = entry;
    return entry;
  }

  /** Records `events` lines of `size` bytes written to `entry`, the last of them with `seq`. */
  wrote(entry: TableObject, events: number, size: number, seq: string): void {
    entry.seqMax = seq;
    this.events += events;
    this.size += size;
  }

  async finish(): Promise<void> {
    await Promise.all([...this.tables.values()].map((t) => t.object.finish()));
  }

  async abort(): Promise<void> {
    await Promise.all([...this.tables.values()].map((t) => t.object.abort()));
  }
}
