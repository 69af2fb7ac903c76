import { AssertionError } from '../../errors.ts';
import { stableUuid } from '../files/metadata.ts';

/* Where a table's files go: names fixed by (location, tag, version), so a redo rewrites the same keys. */

export const TAG = /^[A-Za-z0-9_-]{1,100}$/;
export const BUCKET_FILE = /-b(\d{4})\.parquet$/;
/** Rows per data file a full rewrite aims at (also the keyless tables' copy-on-write unit). */
export const DEFAULT_ROWS_PER_FILE = 500_000;

export const paths = (location: string, tag: string) => ({
  data: (suffix: string) => `${location}/data/${tag}-${suffix}.parquet`,
  manifest: (suffix: string) => `${location}/metadata/${tag}-m-${suffix}.avro`,
  manifestList: `${location}/metadata/snap-${tag}.avro`,
});
/**
 * A version's metadata as the run with `tag` staged it, `metadata/<N:5>-<uuid>.metadata.json`:
 * Iceberg's own naming, which Trino and the catalogs parse (and which they want directly under
 * `metadata/`), the uuid a version-8 one from the tag, so a catalog's own metadata files beside it
 * (random or time-based uuids, versions 4 and 7) are never taken for sluice's. Without `tag`: its
 * copy for file-catalog readers, `metadata/v<N>.metadata.json`.
 */
export const metadataKey = (location: string, version: number, tag?: string) =>
  tag
    ? `${location}/metadata/${String(version).padStart(5, '0')}-${stableUuid('sluice-metadata', tag)}.metadata.json`
    : `${location}/metadata/v${version}.metadata.json`;
/** N of a key `metadataKey` makes, or undefined for any other. */
export const metadataVersion = (key: string) => {
  const match = /\/metadata\/(?:v(\d+)|(\d{5,})-[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.metadata\.json$/.exec(key);
  const version = Number(match?.[1] ?? match?.[2]);
  return match && Number.isInteger(version) ? version : undefined;
};
export const versionHintKey = (location: string) => `${location}/metadata/version-hint.text`;
export const bucketSuffix = (bucket: number) => `b${String(bucket).padStart(4, '0')}`;
export const rangeSuffix = (range: number) => `r${String(range).padStart(4, '0')}`;

/** The table location a metadata key `metadataKey` made is under (where the table's metadata files are). */
export const metadataHome = (key: string) => key.replace(/\/metadata\/[^/]+$/, '');

/** N of a metadata key `metadataKey` makes (either form). */
export function versionOf(key: string): number {
  const version = metadataVersion(key);
  if (version === undefined) throw new AssertionError(`${key} is not a metadata file sluice names`);
  return version;
}
