import { once } from 'node:events';
import { createGzip, type Gzip } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { waiting } from '../../profile.ts';

/**
 * Uncompressed bytes a staging object may hold before the writer waits for compression: a few
 * milliseconds of gzip level 1, enough to keep compression busy; 16 MB cost ~12 MB of peak RSS for
 * nothing (docs/PERFORMANCE.md).
 */
const MAX_BUFFERED = 4 * 1024 * 1024;
/**
 * Lines are UTF-8-encoded straight into a buffer of this size, then handed to gzip as one write:
 * each gzip write is a thread-pool round trip, and building one big string first costs 4x more
 * than encoding line by line (measured in docs/PERFORMANCE.md).
 */
const CHUNK = 1024 * 1024;

/** The most a line written as bytes (`StagingObject.reserve`) may take. */
export const LINE_ROOM = CHUNK;

/**
 * Buffers gzip is done with, for the next ones: a fresh 1 MiB buffer per chunk (hundreds per
 * million rows) is external memory the engine collects with full GCs, and fresh pages to fault in.
 * Enough for the chunks one object keeps in flight (MAX_BUFFERED) and the one being filled.
 */
const spare: Buffer[] = [];
const SPARE = MAX_BUFFERED / CHUNK + 2;
const release = (buffer: Buffer) => {
  if (spare.length < SPARE) spare.push(buffer);
};

/**
 * One staging object being written: text → gzip → S3 (a single PUT when small, multipart when
 * large), so a batch or a transaction of any size streams through bounded memory.
 */
export class StagingObject {
  readonly key: string;
  /** Uncompressed bytes written (exact once finished). */
  bytes = 0;
  events = 0;
  private readonly gzip: Gzip;
  private readonly upload: Upload;
  private readonly done: Promise<unknown>;
  private buffer: Buffer = spare.pop() ?? Buffer.allocUnsafe(CHUNK);
  private used = 0;
  /** A full buffer went to gzip at the last `reserve`; its commit looks at gzip's backlog. */
  private flushed = false;

  constructor(s3: S3Client, bucket: string, key: string, contentType = 'application/x-ndjson') {
    this.key = key;
    // Level 1: on a 2-core Lambda the compressor competes with decoding; level 6 costs ~3x the CPU
    // for ~15% smaller objects (measured in docs/PERFORMANCE.md).
    this.gzip = createGzip({ level: 1, chunkSize: 256 * 1024 });
    this.upload = new Upload({
      client: s3,
      params: { Bucket: bucket, Key: key, Body: this.gzip, ContentType: contentType, ContentEncoding: 'gzip' },
      queueSize: 2,
      partSize: 8 * 1024 * 1024,
      leavePartsOnError: false,
    });
    this.done = this.upload.done();
    // Surface upload failures at finish(), not as an unhandled rejection.
    this.done.catch(() => {});
  }

  /**
   * Appends one event line. Waits only when more than MAX_BUFFERED bytes await compression: waiting at the
   * stream's own high-water mark would make decoding and compression (in the libuv pool) take
   * turns, since 'drain' fires only once the buffer is empty.
   */
  write(text: string): Promise<void> | undefined {
    this.events++;
    // A UTF-8 character takes at most 3 bytes per UTF-16 code unit.
    if (text.length * 3 <= CHUNK - this.used) {
      this.used += this.buffer.write(text, this.used);
      return undefined;
    }
    this.flush();
    if (text.length * 3 <= CHUNK) this.used = this.buffer.write(text, 0);
    else this.push(Buffer.from(text, 'utf8'));
    return this.backPressure();
  }

  /**
   * Lines written as bytes, without a string: `reserve(max)` returns the buffer to write at most
   * `max` bytes (≤ `LINE_ROOM`) into, from `offset`; `commit(end, events)` keeps them. What is written
   * past `offset` without a commit is dropped by the next reserve or write. The same back-pressure
   * as `write`: the commit after a full buffer went to gzip waits while gzip is behind.
   */
  reserve(max: number): Buffer {
    if (max > CHUNK - this.used) {
      this.flush();
      this.flushed = true;
    }
    return this.buffer;
  }

  /** Where the bytes of the next line go in the buffer `reserve` returned. */
  get offset(): number {
    return this.used;
  }

  /** Keeps the bytes written since `offset` up to `end`: `events` lines. */
  commit(end: number, events: number): Promise<void> | undefined {
    this.used = end;
    this.events += events;
    if (!this.flushed) return undefined;
    this.flushed = false;
    return this.backPressure();
  }

  private backPressure(): Promise<void> | undefined {
    if (this.gzip.writableLength < MAX_BUFFERED) return undefined;
    return waiting('gzip', once(this.gzip, 'drain')).then(() => undefined);
  }

  private push(chunk: Buffer, done?: () => void): void {
    this.bytes += chunk.length;
    this.gzip.write(chunk, done);
  }

  /** Hands the filled part of the buffer to gzip; a next buffer is taken unless this was the `last`. */
  private flush(last = false): void {
    if (this.used === 0) return;
    // gzip holds on to the written chunk until it is compressed: the buffer is reused only once
    // its write is done.
    const full = this.buffer;
    this.push(full.subarray(0, this.used), () => release(full));
    this.buffer = last ? Buffer.alloc(0) : (spare.pop() ?? Buffer.allocUnsafe(CHUNK));
    this.used = 0;
  }

  async finish(): Promise<void> {
    this.flush(true);
    this.gzip.end();
    // Compressing the tail, then uploading it (profiled as S3 while the request is out).
    await waiting('gzip', this.done);
  }

  async abort(): Promise<void> {
    await this.upload.abort().catch(() => {});
    this.gzip.destroy();
  }
}
