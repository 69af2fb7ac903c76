/**
 * Object key layout (docs/FORMAT.md). Final keys depend only on (source, commit sequence, table),
 * all fixed at commit time, so redoing a rename rewrites the same object and never duplicates.
 */
export const pad = (n: number, width = 12) => String(n).padStart(width, '0');

/**
 * A database or table name as one key segment (docs: format-v2 §1): the UTF-8 bytes, with
 * `[A-Za-z0-9_]` kept and every other byte as `%XX`; a leading `_` becomes `%5F` (Hive-style readers
 * skip paths starting with `_`). Injective, never `/`, `.` or `..`.
 */
export function segment(name: string): string {
  let out = '';
  for (const byte of Buffer.from(name, 'utf8')) {
    const plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x5f;
    out += plain && !(out === '' && byte === 0x5f) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Where a table's schema versions live: `<prefix>schema/<source>/<db-seg>/<table-seg>/`. */
export function schemaPrefix(prefix: string, sourceId: string, db: string, table: string): string {
  return `${prefix}schema/${sourceId}/${segment(db)}/${segment(table)}/`;
}

/** One schema version object of a table (`<version:6>.json`). */
export function schemaKey(prefix: string, sourceId: string, db: string, table: string, version: number): string {
  return `${schemaPrefix(prefix, sourceId, db, table)}${pad(version, 6)}.json`;
}

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
