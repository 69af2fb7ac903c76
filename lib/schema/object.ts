import type { ColumnKind } from '../format/types.ts';
import type { Versioning } from './definition.ts';
import type { SchemaChange, SchemaColumn, SchemaIndex, SchemaVersion } from './version.ts';

/**
 * A schema version as the object stored under `schema/<source>/<db-seg>/<table-seg>/<version:6>.json`
 * (docs/FORMAT.md, "Schema history"), read back into a SchemaVersion. The poller writes it
 * (catalog.ts, `historyObject`); the readers are the materialization rule, verify and the Iceberg merge.
 */
export interface SchemaObject {
  format: 'sluice-schema/v1';
  source: string;
  db: string;
  table: string;
  version: number;
  /** The seq of the event that made this version (its `t`/`s` marker), or of the start position. */
  seq: string;
  position: { file: string; pos: number };
  origin: string;
  ddl: { kind: string; statement?: string } | null;
  columns: {
    id: number;
    name: string;
    type: string;
    kind: ColumnKind;
    nullable: boolean;
    fsp?: number;
    charset?: string;
    collation?: string;
    autoIncrement?: true;
  }[];
  key: string[] | null;
  last_column_id: number;
  changes: SchemaChange[];
  indexes?: SchemaIndex[];
  charset?: string;
  collation?: string;
  /** A system-versioned table's period columns (its rows are its current rows: docs/FORMAT.md, "System-versioned tables"). */
  versioning?: Versioning;
  dropped?: true;
}

/** Fraction digits of a temporal type string (`datetime(3)` → 3), for objects that leave `fsp` out. */
function fspOf(type: string, kind: ColumnKind): number | undefined {
  if (kind !== 'datetime' && kind !== 'timestamp' && kind !== 'time') return undefined;
  return Number(/\((\d)\)/.exec(type)?.[1] ?? 0);
}

/** Reads a stored version object; throws a TypeError naming what is wrong with a malformed one. */
export function fromSchemaObject(value: unknown): SchemaVersion & { seq: string } {
  const o = value as Partial<SchemaObject>;
  if (o?.format !== 'sluice-schema/v1') throw new TypeError(`not a sluice-schema/v1 object (format ${JSON.stringify(o?.format)})`);
  if (typeof o.version !== 'number' || !Array.isArray(o.columns) || typeof o.db !== 'string' || typeof o.table !== 'string')
    throw new TypeError('a schema object without db, table, version or columns');
  const columns: SchemaColumn[] = o.columns.map((c) => {
    const fsp = c.fsp ?? fspOf(c.type, c.kind);
    return {
      id: c.id,
      name: c.name,
      type: c.type,
      kind: c.kind,
      nullable: c.nullable,
      ...(fsp !== undefined ? { fsp } : {}),
      ...(c.charset !== undefined ? { charset: c.charset } : {}),
      ...(c.collation !== undefined ? { collation: c.collation } : {}),
      ...(c.autoIncrement ? { autoIncrement: true } : {}),
    };
  });
  return {
    db: o.db,
    table: o.table,
    version: o.version,
    seq: o.seq ?? '',
    columns,
    key: o.key ?? null,
    lastColumnId: o.last_column_id ?? Math.max(0, ...columns.map((c) => c.id)),
    changes: o.changes ?? [],
    indexes: o.indexes ?? [],
    ...(o.charset !== undefined ? { charset: o.charset } : {}),
    ...(o.collation !== undefined ? { collation: o.collation } : {}),
    ...(o.versioning ? { versioning: o.versioning } : {}),
    ...(o.dropped ? { dropped: true as const } : {}),
  };
}
