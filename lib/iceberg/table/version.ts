import { ErrorCode, SluiceError } from '../../errors.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { parseJson } from '../files/json.ts';
import type { TableMetadata, TableVersion } from '../files/metadata.ts';
import { metadataHome, metadataKey, versionHintKey, versionOf } from './keys.ts';
import type { StagedExpiry } from './types.ts';

/* Committed versions: reading one, publishing it for file-catalog readers, deleting what its expiry freed. */

/** Reads a committed version (the metadata location the caller stored). */
export async function loadVersion(store: ObjectStore, key: string): Promise<TableVersion> {
  const body = await store.get(key);
  if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${key} does not exist`);
  return { metadataKey: key, version: versionOf(key), metadata: parseJson<TableMetadata>(new TextDecoder().decode(body)) };
}

/**
 * Makes a committed version the one file-catalog readers find: its metadata as `v<N>.metadata.json`,
 * then `version-hint.text`. Idempotent; `onlyIfStale` skips both when the hint already says N (a
 * run's check that no late write of an older run moved it back).
 */
export async function publish(store: ObjectStore, version: Pick<TableVersion, 'metadataKey' | 'version'>, onlyIfStale = false): Promise<void> {
  const location = metadataHome(version.metadataKey);
  const hint = versionHintKey(location);
  if (onlyIfStale && new TextDecoder().decode((await store.get(hint)) ?? new Uint8Array()) === String(version.version)) return;
  const plain = metadataKey(location, version.version);
  if (version.metadataKey !== plain) {
    const body = await store.get(version.metadataKey);
    if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${version.metadataKey} does not exist`);
    await store.put(plain, body);
  }
  await store.put(hint, String(version.version));
}

/** Deletes objects an expiry listed, once its version is committed and published. */
export async function deleteUnreferenced(store: ObjectStore, expiry: Pick<StagedExpiry, 'unreferenced'>): Promise<void> {
  await store.delete(expiry.unreferenced);
}
