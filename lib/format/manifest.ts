import type { BinlogPosition } from '../core/position.ts';
import { tableKey } from '../core/table-ref.ts';
import type { TableShape } from './event.ts';

/** A DDL (or filter change) recorded in a commit: the control event it wrote into the table's objects. */
export interface ManifestDdl {
  seq: string;
  db: string;
  table: string;
  op: 't' | 's';
  kind: string;
  /** The table's schema version after it. */
  schema: number;
  /** A statement sluice could not classify: who decided to re-copy the table, or that it changed nothing. */
  decided_by?: 'sluice' | 'operator';
}

/** One table a commit touched: its names and the shape its objects were written with. */
export interface ManifestTable {
  db: string;
  table: string;
  key: string[] | null;
  columns: { name: string; type: string }[];
}

/** Manifest v2: what one commit contains (docs/FORMAT.md, "Manifests"). Tables are named by their two names, never by a joined `db.table`. */
export interface Manifest {
  /** `sluice/v1` only on a manifest an older sluice wrote, read through `readManifest` (which gives it this shape). */
  format: 'sluice/v2' | 'sluice/v1';
  source: string;
  committed_at: string;
  events: number;
  objects: { key: string; db: string; table: string; events: number; bytes: number; seq_min: string; seq_max: string }[];
  tables: ManifestTable[];
  /** Binlog commits. */
  commit_seq?: number;
  position?: { from: BinlogPosition; to: BinlogPosition };
  transactions?: number;
  /** The history epoch of `position` or the page's watermark (lib/format/seq.ts); absent for 0. */
  epoch?: number;
  /** Snapshot pages. */
  snapshot?: { id: string; db: string; table: string; chunk: number; page: number; watermark: BinlogPosition; after: unknown; last: unknown };
  /** DDL in the commit, in feed order. */
  ddl?: ManifestDdl[];
  /** Schema history objects the commit added, and the catalog it saved. */
  schema?: { versions: string[]; catalog: string };
}

/** A manifest's `epoch` field: written only for epochs after 0, so output that never changed history reads as before. */
export const epochField = (epoch: number): { epoch?: number } => (epoch ? { epoch } : {});

/** Where a commit sits: a binlog range, or a snapshot page. */
export type ManifestPlacement =
  | (Required<Pick<Manifest, 'commit_seq' | 'position' | 'transactions'>> & Pick<Manifest, 'ddl' | 'schema'>)
  | Required<Pick<Manifest, 'snapshot'>>;

/** One data object of a commit: a table's events, under the final key it gets. */
export interface ManifestObject {
  readonly shape: TableShape;
  readonly key: string;
  readonly events: number;
  readonly bytes: number;
  readonly seqMin: string;
  readonly seqMax: string;
}

/** The manifest of one commit; each table's shape is the latest its objects were written with. */
export function buildManifest(source: string, committedAt: number, placement: ManifestPlacement, objects: readonly ManifestObject[]): Manifest {
  return {
    format: 'sluice/v2',
    source,
    committed_at: new Date(committedAt).toISOString(),
    events: objects.reduce((sum, o) => sum + o.events, 0),
    ...placement,
    objects: objects.map(({ shape, key, events, bytes, seqMin, seqMax }) => ({
      key,
      db: shape.db,
      table: shape.table,
      events,
      bytes,
      seq_min: seqMin,
      seq_max: seqMax,
    })),
    tables: objects.map(({ shape }) => ({
      db: shape.db,
      table: shape.table,
      key: shape.key?.map((i) => shape.columns[i]?.name ?? '') ?? null,
      columns: shape.columns.map((c) => ({ name: c.name, type: c.sqlType })),
    })),
  };
}

/** A v1 manifest as sluice 0.x wrote it: `tables` keyed by `db.table`, the snapshot's table joined the same way. */
interface ManifestV1 extends Omit<Manifest, 'format' | 'tables' | 'snapshot'> {
  format: 'sluice/v1';
  tables: Record<string, Omit<ManifestTable, 'db' | 'table'>>;
  snapshot?: Omit<NonNullable<Manifest['snapshot']>, 'db'>;
}

/**
 * A manifest as read from the bucket, in the v2 shape whichever version wrote it. A v1 manifest's
 * `objects` carry each table's two names, so its `tables` map is read by looking up each object's
 * `db.table` (joined, never split): exact for every name v1 could store without a collision.
 */
export function readManifest(json: string): Manifest {
  const read = JSON.parse(json) as Manifest | ManifestV1;
  if (!isV1(read)) return read;
  const seen = new Set<string>();
  const tables: ManifestTable[] = [];
  for (const { db, table } of read.objects) {
    const shape = read.tables[`${db}.${table}`];
    if (!shape || seen.has(tableKey({ db, table }))) continue;
    seen.add(tableKey({ db, table }));
    tables.push({ db, table, ...shape });
  }
  const { snapshot, ...rest } = read;
  const page = read.objects[0];
  // A v1 snapshot page holds one table; its names are those of its object (a page with no rows has no manifest).
  return { ...rest, tables, ...(snapshot && page ? { snapshot: { ...snapshot, db: page.db, table: page.table } } : {}) };
}

const isV1 = (manifest: Manifest | ManifestV1): manifest is ManifestV1 => manifest.format === 'sluice/v1';
