import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { type Manifest, readManifest } from '../format/manifest.ts';
import { listKeys } from '../sink/s3/objects.ts';

async function body(s3: S3Client, bucket: string, key: string): Promise<Buffer> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

/** The committed manifests of a source, in commit order (the order of the change feed). */
export async function* manifests(s3: S3Client, bucket: string, prefix: string, sourceId: string): AsyncGenerator<Manifest> {
  const keys: string[] = [];
  for await (const key of listKeys(s3, bucket, `${prefix}manifests/${sourceId}/`)) keys.push(key);
  for (const key of keys.sort()) yield readManifest((await body(s3, bucket, key)).toString('utf8'));
}

/** Every committed change event as its JSON line, in feed order. */
export async function* eventLines(s3: S3Client, bucket: string, prefix: string, sourceId: string): AsyncGenerator<{ manifest: Manifest; line: string }> {
  for await (const manifest of manifests(s3, bucket, prefix, sourceId)) {
    for (const object of manifest.objects) {
      for (const line of gunzipSync(await body(s3, bucket, object.key))
        .toString('utf8')
        .split('\n'))
        if (line) yield { manifest, line };
    }
  }
}
