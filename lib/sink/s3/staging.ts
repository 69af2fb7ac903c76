import { once } from 'node:events';
import { createGzip, type Gzip } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

/**
 * One staging object being written: text → gzip → S3 (a single PUT when small, multipart when
 * large), so a batch or a transaction of any size streams through bounded memory.
 */
export class StagingObject {
  readonly key: string;
  /** Uncompressed bytes written. */
  bytes = 0;
  events = 0;
  private readonly gzip: Gzip;
  private readonly upload: Upload;
  private readonly done: Promise<unknown>;

  constructor(s3: S3Client, bucket: string, key: string, contentType = 'application/x-ndjson') {
    this.key = key;
    this.gzip = createGzip({ level: 6 });
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

  /** Appends text; resolves at once unless the gzip buffer is full (back-pressure). */
  write(text: string, events: number): Promise<void> | undefined {
    this.bytes += Buffer.byteLength(text);
    this.events += events;
    if (this.gzip.write(text)) return undefined;
    return once(this.gzip, 'drain').then(() => undefined);
  }

  async finish(): Promise<void> {
    this.gzip.end();
    await this.done;
  }

  async abort(): Promise<void> {
    await this.upload.abort().catch(() => {});
    this.gzip.destroy();
  }
}
