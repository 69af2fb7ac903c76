import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Manifest } from '../format/manifest.ts';
import { manifests } from '../materialize/feed.ts';

/** Streams one object to a file. */
export async function download(s3: S3Client, bucket: string, key: string, file: string): Promise<void> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  await pipeline(object.Body as NodeJS.ReadableStream, createWriteStream(file));
}

/** Downloads, in feed order, every committed object that `want` accepts, as `<dir>/<name>-<n>.jsonl.gz`; returns how many. */
export async function downloadOutput(
  source: { s3: S3Client; bucket: string; prefix: string; sourceId: string },
  dir: string,
  name: string,
  want: (object: Manifest['objects'][number], manifest: Manifest) => boolean = () => true,
): Promise<number> {
  let files = 0;
  for await (const manifest of manifests(source.s3, source.bucket, source.prefix, source.sourceId)) {
    for (const object of manifest.objects) {
      if (!want(object, manifest)) continue;
      await download(source.s3, source.bucket, object.key, join(dir, `${name}-${files++}.jsonl.gz`));
    }
  }
  return files;
}

/** A JSON object line from already-encoded JSON values. */
export const jsonLine = (fields: Record<string, string>) =>
  `{${Object.entries(fields)
    .map(([k, v]) => `"${k}":${v}`)
    .join(',')}}\n`;

/** Writes lines to a file with back-pressure. */
export function lineFile(path: string) {
  const stream = createWriteStream(path);
  return {
    async write(line: string) {
      if (!stream.write(line)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
    },
    close: () => new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve()))),
  };
}
