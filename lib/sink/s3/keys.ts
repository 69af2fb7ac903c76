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

export function stagingKey(prefix: string, sourceId: string, runId: string, batch: number, name: string): string {
  return `${stagingRoot(prefix, sourceId)}${runId}/${pad(batch, 6)}/${name}`;
}
