import type { S3Client } from '@aws-sdk/client-s3';
import { formatTableRef, type TableRef } from '../core/table-ref.ts';
import { MaterializeError } from '../errors.ts';
import { fromSchemaObject } from '../schema/object.ts';
import type { SchemaColumn, SchemaVersion } from '../schema/version.ts';
import { schemaPrefix } from '../sink/s3/keys.ts';
import { s3ObjectStore } from '../sink/s3/object-store.ts';

/**
 * A table's schema history: every version the rule may meet, by number (docs: format-v2 §3).
 *
 * Output written before schema versions existed (format v1: events without `schema`, no history
 * objects) gets one synthesized version 0 from the newest manifest shape of the table; its events
 * are read as written in it ("the only, current version"), so their rows are taken as they are.
 */
export class TableHistory {
  readonly #versions = new Map<number, SchemaVersion>();
  /** Where each version starts in the feed (its history object's `seq`), when known. */
  readonly #seqs = new Map<number, string>();

  constructor(
    readonly table: TableRef,
    versions: readonly (SchemaVersion & { readonly seq?: string })[],
    /** False for the synthesized version of format-v1 output. */
    readonly versioned: boolean,
  ) {
    for (const v of versions) {
      this.#versions.set(v.version, v);
      if (v.seq) this.#seqs.set(v.version, v.seq);
    }
  }

  /**
   * SQL for the version in effect at an event's `seq` (a column): the newest version starting at or
   * before it. An event without `schema` (a snapshot page written before the poller recorded the
   * table's version) is read in it; by construction this is also what `schema` says when present.
   */
  versionAtSql(seq: string): string | undefined {
    const starts = [...this.#seqs].sort((a, b) => b[0] - a[0]);
    if (!starts.length) return undefined;
    return `CASE ${starts.map(([v, at]) => `WHEN ${seq} >= '${at.replaceAll("'", "''")}' THEN ${v}`).join(' ')} ELSE ${this.numbers()[0]} END`;
  }

  /** The version numbered `n`; fails loudly when the history lacks it (the output is incomplete). */
  version(n: number): SchemaVersion {
    const v = this.#versions.get(n);
    if (!v)
      throw new MaterializeError(
        `${formatTableRef(this.table)}: events are written in schema version ${n}, but the schema history has ${this.numbers().join(', ') || 'no versions'}`,
      );
    return v;
  }

  has(n: number): boolean {
    return this.#versions.has(n);
  }

  numbers(): number[] {
    return [...this.#versions.keys()].sort((a, b) => a - b);
  }

  get latest(): SchemaVersion {
    const last = this.numbers().at(-1);
    if (last === undefined) throw new MaterializeError(`${formatTableRef(this.table)}: no schema version`);
    return this.version(last);
  }

  /** The ids of version `n`'s key columns, in key order; null for a keyless version. */
  keyIds(n: number): number[] | null {
    const v = this.version(n);
    if (!v.key) return null;
    return v.key.map((name) => {
      const column = v.columns.find((c) => c.name === name);
      if (!column) throw new MaterializeError(`${formatTableRef(this.table)} version ${n}: key column ${name} is not a column`);
      return column.id;
    });
  }
}

/** Every stored version of a table, from `schema/<source>/<db-seg>/<table-seg>/`. */
export async function loadHistory(s3: S3Client, bucket: string, prefix: string, sourceId: string, table: TableRef): Promise<SchemaVersion[]> {
  const store = s3ObjectStore(s3, bucket);
  const versions: SchemaVersion[] = [];
  for await (const key of store.list(schemaPrefix(prefix, sourceId, table.db, table.table))) {
    if (!key.endsWith('.json')) continue;
    const body = await store.get(key);
    if (body === undefined) throw new MaterializeError(`schema object ${key} vanished`);
    const text = new TextDecoder().decode(body);
    try {
      versions.push(fromSchemaObject(JSON.parse(text)));
    } catch (error) {
      throw new MaterializeError(`schema object ${key}: ${(error as Error).message}`);
    }
  }
  return versions;
}

/** A manifest's description of a table (v1: `tables["db.t"]`; v2: an entry of the `tables` array). */
export interface ManifestShape {
  readonly key: readonly string[] | null;
  readonly columns: readonly { readonly name: string; readonly type: string }[];
}

/** The format's kind for a manifest type name (v1 manifests carry only the name). */
function kindOf(type: string): SchemaColumn['kind'] {
  const base = type.replace(/ unsigned$/, '').replace(/\(.*$/, '');
  if (['tinyint', 'smallint', 'mediumint', 'int', 'bigint'].includes(base)) return 'int';
  if (['decimal', 'float', 'double', 'year', 'bit', 'date', 'datetime', 'timestamp', 'time', 'uuid', 'inet4', 'inet6'].includes(base))
    return base as SchemaColumn['kind'];
  if (['binary', 'varbinary', 'blob', 'tinyblob', 'mediumblob', 'longblob'].includes(base)) return 'binary';
  return 'string';
}

/** The one version of format-v1 output: version 0, from the newest manifest shape. */
export function unversionedHistory(table: TableRef, shape: ManifestShape): TableHistory {
  const columns: SchemaColumn[] = shape.columns.map((c, i) => {
    const kind = kindOf(c.type);
    const fsp = kind === 'datetime' || kind === 'timestamp' || kind === 'time' ? Number(/\((\d)\)/.exec(c.type)?.[1] ?? 0) : undefined;
    return { id: i + 1, name: c.name, type: c.type, kind, nullable: true, ...(fsp !== undefined ? { fsp } : {}) };
  });
  const version: SchemaVersion = {
    db: table.db,
    table: table.table,
    version: 0,
    columns,
    key: shape.key ? [...shape.key] : null,
    lastColumnId: columns.length,
    changes: [],
    indexes: [],
  };
  return new TableHistory(table, [version], false);
}
