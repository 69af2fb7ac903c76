import { ErrorCode, SluiceError } from '../../errors.ts';
import { METADATA_LOG_SIZE, type TableMetadata } from '../files/metadata.ts';
import type { IcebergSchema } from '../files/schema.ts';

/*
 * How a catalog's table relates to the metadata sluice committed, when others may maintain it
 * (SLUICE_ICEBERG_MAINTENANCE=catalog: Glue's table optimizers, S3 Tables, Spark's procedures).
 *
 * Maintenance changes files, never rows: a compaction is a `replace` snapshot (its manifests drop
 * files and add others holding the same rows), a snapshot expiry removes snapshots and adds none.
 * So a catalog `main` that descends from a sluice snapshot S through `replace` snapshots only
 * holds exactly S's rows, and sluice may build its next snapshot on that main instead of on S:
 * the merge's exactly-once argument (a prefix of the change log, applied once) does not change.
 * Anything else — an `append`, `overwrite` or `delete` by another writer, a main that is not a
 * descendant of sluice's, a foreign snapshot sluice can no longer check (expired before a merge
 * saw it), a schema sluice did not write — changes rows sluice does not know of and stays
 * ICEBERG_CATALOG_CONFLICT.
 */

/** Where the catalog's `main` stands relative to sluice's metadata. */
export interface Descent {
  /** The catalog's main (undefined: no snapshot yet). */
  readonly main: number | undefined;
  /** The newest snapshot of sluice's history in main's ancestry (undefined: the catalog has none). */
  readonly from: number | undefined;
  /** The `replace` snapshots between `from` and main, newest first: other writers' compactions. */
  readonly replaced: readonly number[];
  /** Snapshots of sluice's metadata the catalog no longer has: expired by the catalog's maintenance (or sluice's own, not yet published). */
  readonly expired: readonly number[];
}

/** The catalog's table `main` snapshot id (undefined: no snapshot yet). */
export function mainOf(metadata: TableMetadata): number | undefined {
  const id = metadata.refs?.main?.['snapshot-id'] ?? metadata['current-snapshot-id'];
  return id === undefined || id === null || id < 0 ? undefined : id;
}

const fields = (schema: IcebergSchema | undefined) =>
  JSON.stringify((schema?.fields ?? []).map((f) => [f.id, f.name, String(f.type).replace(/\s+/g, ''), Boolean(f.required)]));

const schemaOf = (metadata: TableMetadata) => metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);

/**
 * How `current` (the catalog's table) descends from `target` (sluice's metadata). Throws
 * ICEBERG_CATALOG_CONFLICT when main descends from sluice's history through anything but
 * `replace` snapshots, or not at all, or when maintenance left a schema sluice did not write.
 */
export function descent(current: TableMetadata, target: TableMetadata, label: string): Descent {
  const main = mainOf(current);
  // sluice's history: its snapshots and their parents (a parent sluice's own expiry removed is still its).
  const ours = new Set(target.snapshots.flatMap((s) => [s['snapshot-id'], ...(s['parent-snapshot-id'] === undefined ? [] : [s['parent-snapshot-id']])]));
  const theirs = new Map(current.snapshots.map((s) => [s['snapshot-id'], s]));
  const conflict = (why: string) =>
    new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the catalog's table ${label} is at snapshot ${main}, which is not in sluice's history${why}: another writer committed to it. Let only sluice (and maintenance: SLUICE_ICEBERG_MAINTENANCE=catalog) write the table, or drop it from the catalog (the next run registers sluice's)`,
    );
  const replaced: number[] = [];
  let id = main;
  while (id !== undefined && !ours.has(id)) {
    const snapshot = theirs.get(id);
    if (!snapshot) throw conflict(` (its ancestor ${id} is gone from the catalog's history, so sluice cannot check that it changed no rows)`);
    const operation = snapshot.summary?.operation;
    if (operation !== 'replace')
      throw conflict(
        ` (snapshot ${id} is an \`${operation}\`${snapshot.summary?.['engine-name'] ? ` by ${snapshot.summary['engine-name']}` : ''}, which changes rows)`,
      );
    replaced.push(id);
    id = snapshot['parent-snapshot-id'];
  }
  if (main !== undefined && id === undefined) throw conflict('');
  const expired = target.snapshots.map((s) => s['snapshot-id']).filter((s) => !theirs.has(s));
  // A compaction keeps the schema of the snapshot it compacted (sluice gives every schema change a snapshot).
  const built = target.schemas.find((s) => s['schema-id'] === target.snapshots.find((t) => t['snapshot-id'] === id)?.['schema-id']);
  if (replaced.length && fields(schemaOf(current)) !== fields(built))
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the catalog's table ${label} was compacted with a schema sluice did not write: let only sluice change its schema, or drop it from the catalog (the next run registers sluice's)`,
    );
  return { main, from: id, replaced, expired };
}

/** The catalog's table as others' maintenance left it: its metadata, where that file is, and how it descends from sluice's. */
export interface Maintained {
  readonly metadata: TableMetadata;
  readonly location: string;
  readonly descent: Descent;
}

/**
 * The catalog moved past sluice's version by maintenance alone (`descent`): the merge builds on
 * the catalog's table (`metadata`, at `location`) instead. Its code stays ICEBERG_CATALOG_CONFLICT
 * where nothing rebases (SLUICE_ICEBERG_MAINTENANCE=sluice).
 */
export class CatalogMaintainedError extends SluiceError {
  override readonly name = 'CatalogMaintainedError';
  constructor(
    readonly metadata: TableMetadata,
    readonly location: string,
    readonly descent: Descent,
    label: string,
  ) {
    super(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the catalog's table ${label} was maintained by another writer (${descent.replaced.length} \`replace\` snapshot(s) on sluice's ${descent.from}, ${descent.expired.length} expired): set SLUICE_ICEBERG_MAINTENANCE=catalog to let the merge build on it, or let only sluice write the table`,
      { retriable: true },
    );
  }
}

/**
 * The catalog's table `current` (at `location`) when maintenance alone moved it past sluice's
 * committed `target` (compactions on its newest snapshot, expired snapshots); undefined when it has
 * `target`'s snapshots or lacks some of the newest (the publish sends them). Throws
 * ICEBERG_CATALOG_CONFLICT for anything else (`descent`), and when compactions sit on an older
 * snapshot of sluice's than its newest (the catalog lost sluice's newest commit).
 */
export function maintainedSince(current: TableMetadata, location: string, target: TableMetadata, label: string): Maintained | undefined {
  const moved = descent(current, target, label);
  const goal = mainOf(target);
  if (moved.from !== goal) {
    if (!moved.replaced.length) return undefined;
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the catalog's table ${label} was compacted on sluice's snapshot ${moved.from}, but sluice committed ${goal} after it and the catalog does not have that: drop the table from the catalog (the next run registers sluice's)`,
    );
  }
  if (!moved.replaced.length && !moved.expired.length) return undefined;
  return { metadata: current, location, descent: moved };
}

/**
 * sluice's next metadata built on the catalog's table: its snapshots, refs, sequence numbers and
 * schemas as the catalog has them; the table uuid, sluice's properties and sluice's own metadata
 * log (the catalog's metadata files are the catalog's to keep) as sluice's metadata `ours` at
 * `oursUri` has them.
 */
export function adoptedMetadata(catalog: TableMetadata, ours: TableMetadata, oursUri: string, timestampMs: number): TableMetadata {
  return {
    ...catalog,
    'table-uuid': ours['table-uuid'],
    location: ours.location,
    'last-updated-ms': Math.max(timestampMs, catalog['last-updated-ms']),
    // sluice's own schema texts where the catalog's say the same (Java writes `decimal(20, 0)`), under the catalog's ids.
    schemas: catalog.schemas.map((s) => {
      const mine = ours.schemas.find((o) => fields(o) === fields(s));
      return mine ? { ...mine, 'schema-id': s['schema-id'] } : s;
    }),
    properties: { ...catalog.properties, ...ours.properties },
    'metadata-log': [...ours['metadata-log'], { 'metadata-file': oursUri, 'timestamp-ms': ours['last-updated-ms'] }].slice(-METADATA_LOG_SIZE),
  };
}
