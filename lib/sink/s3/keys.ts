import { tablePath } from '../../core/table-path.ts';

/**
 * Object key layout (docs/FORMAT.md). Final keys depend only on (source, commit sequence, table),
 * all fixed at commit time, so redoing a rename rewrites the same object and never duplicates.
 */
export const pad = (n: number, width = 12) => String(n).padStart(width, '0');

export function dataKey(prefix: string, db: string, table: string, sourceId: string, commitSeq: number): string {
  return `${prefix}tables/${tablePath({ db, table })}/${sourceId}-${pad(commitSeq)}.jsonl.gz`;
}

export function manifestKey(prefix: string, sourceId: string, commitSeq: number): string {
  return `${prefix}manifests/${sourceId}/${pad(commitSeq)}.json`;
}

/** Everything a source has in staging; only uncommitted or not-yet-renamed objects live here. */
export function stagingRoot(prefix: string, sourceId: string): string {
  return `${prefix}_staging/${sourceId}/`;
}

/** The poller's staging area. Each writer cleans only its own area, never another's in-flight work. */
export function binlogStaging(prefix: string, sourceId: string): string {
  return `${stagingRoot(prefix, sourceId)}binlog/`;
}

/** One snapshot chunk's staging area. */
export function chunkStaging(prefix: string, sourceId: string, snapshotId: string, chunk: string): string {
  return `${stagingRoot(prefix, sourceId)}snapshot/${snapshotId}/${chunk}/`;
}

export function snapshotDataKey(prefix: string, db: string, table: string, sourceId: string, snapshotId: string, chunk: number, page: number): string {
  return `${prefix}tables/${tablePath({ db, table })}/${sourceId}-snapshot-${snapshotId}-${pad(chunk, 4)}-${pad(page, 8)}.jsonl.gz`;
}

export function snapshotManifestKey(prefix: string, sourceId: string, snapshotId: string, db: string, table: string, chunk: number, page: number): string {
  return `${prefix}manifests/${sourceId}/snapshots/${snapshotId}/${tablePath({ db, table })}/${pad(chunk, 4)}-${pad(page, 8)}.json`;
}

/** Where a table's schema versions live: `<prefix>schema/<source>/<db-seg>/<table-seg>/`. */
export function schemaPrefix(prefix: string, sourceId: string, db: string, table: string): string {
  return `${prefix}schema/${sourceId}/${tablePath({ db, table })}/`;
}

/** One version of a table's schema (the schema history). */
export function schemaKey(prefix: string, sourceId: string, db: string, table: string, version: number): string {
  return `${prefix}schema/${sourceId}/${tablePath({ db, table })}/${pad(version, 6)}.json`;
}

/**
 * The catalog a commit saved (every table's latest version). Its folder `@catalog` is no segment:
 * `segment` encodes `@`, so no database name can collide with it.
 */
export function catalogKey(prefix: string, sourceId: string, commitSeq: number): string {
  return `${prefix}schema/${sourceId}/@catalog/${pad(commitSeq)}.json`;
}
