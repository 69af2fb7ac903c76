import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

/**
 * The object-store port: every get, put and listing of sluice's bucket goes through it — the S3
 * sink's JSON objects and listings (lib/sink/s3/objects.ts), the change log's reader
 * (lib/materialize/change-log.ts) and the Iceberg layer. Keys are relative to one bucket (the
 * store's own, SLUICE_BUCKET), or absolute `s3://bucket/key` locations for objects in another bucket
 * (a table location an Iceberg REST catalog assigned, e.g. S3 Tables' `s3://<id>--table-s3/`),
 * reached through the same client. `uri` turns a key into the absolute location Iceberg metadata
 * must hold. Small enough that an in-memory fake is a few lines (below), so the file-format logic is
 * tested without S3.
 */
export interface ObjectStore {
  /** The object's bytes, or undefined when it does not exist. */
  get(key: string): Promise<Uint8Array | undefined>;
  put(key: string, body: Uint8Array | string, contentType?: string): Promise<void>;
  /** Streams a local file to `key` (multipart when large). */
  putFile(key: string, path: string): Promise<void>;
  /** Streams `key` to a local file; throws when it does not exist. */
  getFile(key: string, path: string): Promise<void>;
  /** Bytes `start` (inclusive) to `end` (exclusive) of an object that exists (one ranged GET). */
  getRange(key: string, start: number, end: number): Promise<Uint8Array>;
  list(prefix: string): AsyncIterable<string>;
  /** The sub-folders of `prefix`, one level down (names without the prefix or the trailing `/`). */
  listFolders(prefix: string): Promise<string[]>;
  delete(keys: readonly string[]): Promise<void>;
  uri(key: string): string;
  /** The key of an absolute location this store wrote (inverse of `uri`). */
  keyOf(uri: string): string;
}

/** Whether `key` is an absolute `s3://` location outside the store's own bucket (`keyOf` leaves its own bucket's relative). */
export const outsideBucket = (key: string): boolean => key.startsWith('s3://');

/** Bucket and key of an absolute `s3://bucket/key` location. */
export function parseS3Uri(uri: string): { bucket: string; key: string } {
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(uri);
  if (!match?.[1]) throw new Error(`${uri} is not an s3://bucket/key location`);
  return { bucket: match[1], key: match[2] ?? '' };
}

function uriMapping(bucket: string) {
  const root = `s3://${bucket}/`;
  return {
    uri: (key: string) => (outsideBucket(key) ? key : `${root}${key}`),
    keyOf(uri: string): string {
      if (uri.startsWith(root)) return uri.slice(root.length);
      if (outsideBucket(uri)) return uri;
      throw new Error(`${uri} is not an s3:// location`);
    },
  };
}

/** The store over S3 (or LocalStack / the local emulator, by endpoint configuration). */
export function s3ObjectStore(s3: S3Client, bucket: string): ObjectStore {
  const at = (key: string) => {
    if (!outsideBucket(key)) return { Bucket: bucket, Key: key };
    const parsed = parseS3Uri(key);
    return { Bucket: parsed.bucket, Key: parsed.key };
  };
  return {
    ...uriMapping(bucket),
    async get(key) {
      try {
        const object = await s3.send(new GetObjectCommand(at(key)));
        return await object.Body?.transformToByteArray();
      } catch (error) {
        if (error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey') return undefined;
        throw error;
      }
    },
    async put(key, body, contentType) {
      await s3.send(new PutObjectCommand({ ...at(key), Body: body, ...(contentType ? { ContentType: contentType } : {}) }));
    },
    async putFile(key, path) {
      // Upload switches to multipart above its part size; single PUTs have size limits (emulators ~11 MiB).
      await new Upload({ client: s3, params: { ...at(key), Body: createReadStream(path) }, partSize: 8 * 1024 * 1024 }).done();
    },
    async getFile(key, path) {
      const object = await s3.send(new GetObjectCommand(at(key)));
      await pipeline(object.Body as NodeJS.ReadableStream, createWriteStream(path));
    },
    async getRange(key, start, end) {
      const object = await s3.send(new GetObjectCommand({ ...at(key), Range: `bytes=${start}-${end - 1}` }));
      const bytes = await object.Body?.transformToByteArray();
      if (!bytes || bytes.length !== end - start) throw new Error(`${key}: asked bytes ${start}-${end - 1}, got ${bytes?.length ?? 0} bytes`);
      return bytes;
    },
    async *list(prefix) {
      const { Bucket, Key: Prefix } = at(prefix);
      // Keys listed in another bucket come back absolute, as they went in.
      const named = (key: string) => (Bucket === bucket && !outsideBucket(prefix) ? key : `s3://${Bucket}/${key}`);
      let ContinuationToken: string | undefined;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket, Prefix, ContinuationToken }));
        for (const object of page.Contents ?? []) if (object.Key) yield named(object.Key);
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken);
    },
    async listFolders(prefix) {
      const { Bucket, Key: Prefix } = at(prefix);
      const out: string[] = [];
      let ContinuationToken: string | undefined;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket, Prefix, Delimiter: '/', ContinuationToken }));
        for (const p of page.CommonPrefixes ?? []) if (p.Prefix) out.push(p.Prefix.slice(Prefix.length, -1));
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken);
      return out;
    },
    async delete(keys) {
      const byBucket = new Map<string, string[]>();
      for (const key of keys) {
        const { Bucket, Key } = at(key);
        const list = byBucket.get(Bucket);
        if (list) list.push(Key);
        else byBucket.set(Bucket, [Key]);
      }
      for (const [Bucket, all] of byBucket)
        for (let i = 0; i < all.length; i += 1000) {
          const chunk = all.slice(i, i + 1000);
          const { Errors } = await s3.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true } }));
          if (Errors?.length) throw new Error(`could not delete ${Errors.length} objects, first: ${Errors[0]?.Key}: ${Errors[0]?.Message}`);
        }
    },
  };
}

/** An in-memory store for unit tests; `objects` is exposed so tests can look inside. */
export function memoryObjectStore(bucket = 'memory'): ObjectStore & { objects: Map<string, Uint8Array> } {
  const objects = new Map<string, Uint8Array>();
  return {
    ...uriMapping(bucket),
    objects,
    async get(key) {
      return objects.get(key);
    },
    async put(key, body) {
      objects.set(key, typeof body === 'string' ? new TextEncoder().encode(body) : body);
    },
    async putFile(key, path) {
      objects.set(key, new Uint8Array(await readFile(path)));
    },
    async getFile(key, path) {
      const body = objects.get(key);
      if (!body) throw new Error(`no object ${key}`);
      await writeFile(path, body);
    },
    async getRange(key, start, end) {
      const body = objects.get(key);
      if (!body || end > body.length) throw new Error(`no bytes ${start}-${end - 1} of ${key}`);
      return body.slice(start, end);
    },
    async *list(prefix) {
      for (const key of [...objects.keys()].sort()) if (key.startsWith(prefix)) yield key;
    },
    async listFolders(prefix) {
      const folders = new Set<string>();
      for (const key of [...objects.keys()].sort()) {
        const slash = key.startsWith(prefix) ? key.indexOf('/', prefix.length) : -1;
        if (slash >= 0) folders.add(key.slice(prefix.length, slash));
      }
      return [...folders];
    },
    async delete(keys) {
      for (const key of keys) objects.delete(key);
    },
  };
}
