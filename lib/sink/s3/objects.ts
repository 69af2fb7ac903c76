import { CopyObjectCommand, DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, NoSuchKey, NotFound, type S3Client } from '@aws-sdk/client-s3';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { s3ObjectStore } from './object-store.ts';

/*
 * The sink's objects by client and bucket. Puts and listings go through the object-store port
 * (object-store.ts); the copy and delete of the commit protocol's renames stay here, with their own
 * error codes, and so does `getJson`, which reads the body as text (the callers' minimal client
 * fakes answer only that).
 */

const copySource = (bucket: string, key: string) => `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;

export async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3ObjectStore(s3, bucket).put(key, `${JSON.stringify(value, null, 1)}\n`, 'application/json');
}

/** A JSON object, or undefined when the key does not exist. */
export async function getJson(s3: S3Client, bucket: string, key: string): Promise<unknown> {
  try {
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return JSON.parse(await (object.Body as { transformToString(): Promise<string> }).transformToString());
  } catch (error) {
    if (error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey') return undefined;
    throw error;
  }
}

async function exists(s3: S3Client, bucket: string, key: string): Promise<boolean> {
  try {
    await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return true;
  } catch (error) {
    if (error instanceof NotFound || (error as { name?: string }).name === 'NotFound') return false;
    throw error;
  }
}

/**
 * Copies staging → final. Idempotent: if the staging object is gone, an earlier run already copied
 * it (staging is deleted only after every copy of its commit), so the final object must exist.
 */
export async function copyObject(s3: S3Client, bucket: string, from: string, to: string): Promise<void> {
  try {
    await s3.send(new CopyObjectCommand({ Bucket: bucket, CopySource: copySource(bucket, from), Key: to }));
  } catch (error) {
    // CopyObject does not model NoSuchKey, so the SDK raises a plain S3ServiceException named so.
    const missing = error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey';
    if (!missing) throw error;
    if (!(await exists(s3, bucket, to))) {
      // A broken invariant, not a bug of ours: something else deleted staging (a lifecycle rule that
      // expired a commit pending for too long, a manual clean-up). Fatal: the operator decides.
      throw new SluiceError(
        ErrorCode.STAGING_LOST,
        `staging object ${from} and final object ${to} are both missing; the commit cannot be completed (docs/RUNBOOK.md, STAGING_LOST)`,
        { cause: error },
      );
    }
  }
}

export async function deleteObjects(s3: S3Client, bucket: string, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const chunk = keys.slice(i, i + 1000);
    const { Errors } = await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true } }));
    if (Errors?.length) {
      throw new SluiceError(ErrorCode.S3_DELETE, `could not delete ${Errors.length} staging objects, first: ${Errors[0]?.Key}: ${Errors[0]?.Message}`, {
        retriable: true,
      });
    }
  }
}

/** The sub-folders of `prefix`, one level down (names without the prefix or the trailing `/`). */
export function listFolders(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  return s3ObjectStore(s3, bucket).listFolders(prefix);
}

export async function* listKeys(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<string> {
  yield* s3ObjectStore(s3, bucket).list(prefix);
}
