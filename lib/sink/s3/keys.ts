/**
 * Object key layout (docs/FORMAT.md). Final keys depend only on (source, commit sequence, table),
 * all fixed at commit time, so redoing a rename rewrites the same object and never duplicates.
 */
export const pad = (n: number, width = 12) => String(n).padStart(width, '0');

export function dataKey(prefix: string, db: string, table: string, sourceId: string, commitSeq: number): string {
  return `${prefix}tables/${db}/${table}/${sourceId}-${pad(commitSeq)}.jsonl.gz`;
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
  return `${prefix}tables/${db}/${table}/${sourceId}-snapshot-${snapshotId}-${pad(chunk, 4)}-${pad(page, 8)}.jsonl.gz`;
}

export function snapshotManifestKey(prefix: string, sourceId: string, snapshotId: string, db: string, table: string, chunk: number, page: number): string {
  return `${prefix}manifests/${sourceId}/snapshots/${snapshotId}/${db}.${table}/${pad(chunk, 4)}-${pad(page, 8)}.json`;
}
