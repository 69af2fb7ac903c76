import type { Column } from '../../format/types.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import type { TableVersion } from '../files/metadata.ts';
import type { Lines } from '../files/parquet.ts';
import type { IcebergField, SchemaEvolution } from '../files/schema.ts';

/* What the table layer takes and gives: its callers' deps, the table's spec, a change set, what a stage returns. */

/** What the layer needs from its caller's world. */
export interface IcebergDeps {
  readonly store: ObjectStore;
  /** Parent folder for scratch files (DuckDB, downloads); the OS temp folder by default. */
  readonly workDir?: string;
}

/** The source table as it is now. */
export interface TableSpec {
  /** Object key prefix of the table (no trailing slash), e.g. `<prefix>iceberg/<db-seg>/<table-seg>` (`tablePath` in lib/sink/s3/keys.ts): where its metadata files go. */
  readonly location: string;
  /**
   * Where its data files, delete files, manifests and manifest lists go, and the metadata's
   * `location`: a key prefix or an absolute `s3://` location (one an Iceberg REST catalog
   * assigned); `location` when absent.
   */
  readonly files?: string;
  readonly columns: readonly Column[];
  /** Key column names; empty for a keyless table (rows are then a multiset, identity = the whole row). */
  readonly key: readonly string[];
  /** New name → old name for columns renamed since the current version (they keep their field id). */
  readonly renamed?: ReadonlyMap<string, string>;
  /** Columns dropped and added again under the same name since the current version. */
  readonly recreated?: ReadonlySet<string>;
}

/** One merge's effect on a table; every key appears at most once across both lists. */
export interface ChangeSet {
  /** Full rows (JSON object text, sluice's value encoding) to insert or to replace the row with their key. */
  readonly upserts: Lines;
  /** Keyed table: key objects (JSON text) of rows to delete. Keyless: full rows, each removing one equal row. */
  readonly deletes: Lines;
}

export interface StageOptions {
  /** Names this commit's files (letters, digits, `_`, `-`): use one per commit, e.g. the merge sequence. */
  readonly tag: string;
  /** The snapshot's and metadata's timestamp; pass the same value on a redo to get identical bytes. */
  readonly timestampMs: number;
  /** Extra snapshot summary entries (e.g. the merged change-log position). */
  readonly summary?: Readonly<Record<string, string>>;
  /** How a keyed table's merge deletes the rows it replaces (`position` by default). */
  readonly deletes?: DeleteMode;
}

/**
 * `position`: the merge finds each changed key's current row (file and row number) and writes a
 * position delete file — every engine reads those. `equality`: a delete file of the changed keys,
 * nothing read back — cheaper to write, but PyIceberg and Snowflake cannot read it.
 */
export type DeleteMode = 'position' | 'equality';

/** Field ids of a position delete file's columns (spec, "Position Delete Files"). */
export const POSITION_DELETE_FIELDS: readonly IcebergField[] = [
  { id: 2147483546, name: 'file_path', required: true, type: 'string' },
  { id: 2147483545, name: 'pos', required: true, type: 'long' },
];
export const [FILE_PATH, POS] = POSITION_DELETE_FIELDS.map((f) => f.id) as [number, number];

export interface StageStats {
  readonly rowsWritten: number;
  readonly deletes: number;
  readonly dataFiles: number;
  readonly deleteFiles: number;
  /** Per column, values that have no Iceberg equivalent and were written as NULL (MySQL zero dates). */
  readonly nulled: Readonly<Record<string, number>>;
  /** Keyless tables: deleted rows that matched no row of the table. */
  readonly unmatchedDeletes: number;
}

/** A staged table version: commit `version.metadataKey`, then `publish` it. */
export interface Staged {
  readonly version: TableVersion;
  /** Every key this stage wrote (data, manifests, metadata). */
  readonly written: readonly string[];
  readonly stats: StageStats;
  readonly schema: SchemaEvolution | undefined;
}

/** A staged expiry: commit and publish it like any version, then delete `unreferenced`. */
export interface StagedExpiry extends Staged {
  readonly expiredSnapshots: readonly number[];
  /** Keys no retained snapshot or metadata file needs any more. */
  readonly unreferenced: readonly string[];
}

export const stats = (partial: Partial<StageStats>): StageStats => ({
  rowsWritten: 0,
  deletes: 0,
  dataFiles: 0,
  deleteFiles: 0,
  nulled: {},
  unmatchedDeletes: 0,
  ...partial,
});
