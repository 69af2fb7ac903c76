/*
 * The Iceberg file-format layer: it turns a table's change set into the files of one new Iceberg
 * snapshot and the next metadata file, and nothing more. It never makes a version current:
 *
 *   stage*()  writes data/delete files, manifests, the manifest list and <N>-<uuid>.metadata.json
 *             under names fixed by (table location, caller's tag, N = previous version + 1): a redo
 *             after a crash rewrites the same keys, nothing reads them until they are committed, and
 *             a run that lost its lease never writes a key another run stages or commits;
 *   (caller)  commits `version.metadataKey` with one conditional write (DynamoDB, Glue, ...);
 *   publish() copies it to v<N>.metadata.json and writes metadata/version-hint.text for
 *             file-catalog readers: the only shared keys, written only with committed content. Idempotent.
 *
 * Only committed metadata may be passed back in as `current`. Rows are identified by the key
 * columns: an upsert is a delete of the key's current row plus the new row in the same snapshot —
 * a position delete of the row's file and position (found through the key bounds of the files,
 * which are sorted by the key), or an equality delete of the key (it applies to data files with a
 * strictly lower sequence number, so the new row survives). Keyless tables are multisets: their
 * rows live in hash buckets, copy-on-write.
 */

export type { ObjectStore } from '../../sink/s3/object-store.ts';
export type { TableVersion } from '../files/metadata.ts';
export { DEFAULT_ROWS_PER_FILE, metadataHome, metadataKey, metadataVersion, versionHintKey, versionOf } from './keys.ts';
export { type ExpiryRule, expiredSnapshots, stageCompaction, stageExpiry } from './maintenance.ts';
export { type BucketFiles, type SpooledRows, stageBucket, stageBuckets, stageReplace, stageTruncate } from './replace.ts';
export { stageChanges } from './stage.ts';
export {
  type ChangeSet,
  type DeleteMode,
  type IcebergDeps,
  POSITION_DELETE_FIELDS,
  type Staged,
  type StagedExpiry,
  type StageOptions,
  type StageStats,
  type TableSpec,
} from './types.ts';
export { deleteUnreferenced, loadVersion, publish } from './version.ts';
