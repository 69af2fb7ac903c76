import type { BinlogPosition } from '../core/position.ts';
import type { TableShape } from './event.ts';

/** Manifest v1: what one commit contains (docs/FORMAT.md, "Manifests"). */
export interface Manifest {
  format: 'sluice/v1';
  source: string;
  committed_at: string;
  events: number;
  objects: { key: string; db: string; table: string; events: number; bytes: number; seq_min: string; seq_max: string }[];
  tables: Record<string, { key: string[] | null; columns: { name: string; type: string }[] }>;
  /** Binlog commits. */
  commit_seq?: number;
  position?: { from: BinlogPosition; to: BinlogPosition };
  transactions?: number;
  /** Snapshot pages. */
  snapshot?: { id: string; table: string; chunk: number; page: number; watermark: BinlogPosition; after: unknown; last: unknown };
}

/** Where a commit sits: a binlog range, or a snapshot page. */
export type ManifestPlacement = Required<Pick<Manifest, 'commit_seq' | 'position' | 'transactions'>> | Required<Pick<Manifest, 'snapshot'>>;

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
    format: 'sluice/v1',
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
    tables: Object.fromEntries(
      objects.map(({ shape }) => [
        `${shape.db}.${shape.table}`,
        { key: shape.key?.map((i) => shape.columns[i]?.name ?? '') ?? null, columns: shape.columns.map((c) => ({ name: c.name, type: c.sqlType })) },
      ]),
    ),
  };
}
