import type { BinlogPosition } from '../core/position.ts';
import { type CharsetRow, CharsetTable } from './charsets.ts';
import type { TableRef } from './definition.ts';
import type { SchemaVersion } from './version.ts';

/*
 * The schema catalog: every captured table's latest schema version, as of the source's stored
 * position. The poller alone writes it: a commit whose DDL changed it stages the new version
 * objects (the schema history, docs/FORMAT.md) and a new catalog object with its data, and the
 * same conditional write that moves the position points the source at that catalog. So the
 * catalog a run loads always describes the tables exactly at the position it resumes from.
 */

/** How a version came to be: a DDL statement, the server's description at a known point, or a TABLE_MAP. */
export type VersionOrigin = 'ddl' | 'server' | 'table-map';

/** One table's latest version, where in the feed it starts, and what made it. */
export interface CatalogTable {
  readonly version: SchemaVersion;
  /** The seq of the marker (or the first event) from which rows are written under this version. */
  readonly seq: string;
  readonly position: BinlogPosition;
  readonly origin: VersionOrigin;
  /**
   * The DDL that made it: its kind, and the statement (schema history objects only; never logged);
   * for a statement sluice could not classify, who decided to re-copy the table (or that it changed
   * nothing) and why the classifier gave up.
   */
  readonly ddl?: { readonly kind: string; readonly statement?: string; readonly decidedBy?: 'sluice' | 'operator'; readonly reason?: string };
}

export interface CatalogDocument {
  readonly format: 'sluice-catalog/v1';
  readonly source: string;
  /** The binlog position the catalog describes the tables at. */
  readonly position: BinlogPosition;
  readonly tables: readonly CatalogTable[];
  /** Database default collations seen in CREATE/ALTER DATABASE (for later CREATE TABLE). */
  readonly databases: readonly { readonly db: string; readonly collation: string }[];
  /** Sequences: tables in the binlog, never captured. */
  readonly sequences: readonly TableRef[];
  /** The include/exclude filters the catalog was kept with (regex sources): a change of them moves tables in or out. */
  readonly filter?: CatalogFilter;
  /** The server's character sets (default collations, sizes) the DDL since was read with; absent: the fallback table. */
  readonly charsets?: readonly CharsetRow[];
}

export interface CatalogFilter {
  readonly include: readonly string[];
  readonly exclude: readonly string[];
}

/** The one key form for a table in maps: never joined with a dot (names may contain dots). */
export const tableKey = (ref: TableRef): string => JSON.stringify([ref.db, ref.table]);

export class Catalog {
  private readonly tables = new Map<string, CatalogTable>();
  private readonly databases = new Map<string, string>();
  private readonly sequences = new Map<string, TableRef>();
  /** Versions made since the catalog was loaded or last saved: the schema history objects to write. */
  private readonly made: CatalogTable[] = [];
  private changed = false;
  /** The filters the catalog was kept with (undefined: before sluice recorded them). */
  filter: CatalogFilter | undefined;
  /** Counts changes of the tables' versions (`put`): a lookup cached at one revision holds until the next. */
  revision = 0;
  /** The character sets DDL is read with (`useCharsets`). */
  charsets: CharsetTable = CharsetTable.fallback;

  static from(document: CatalogDocument | undefined): Catalog {
    const catalog = new Catalog();
    for (const entry of document?.tables ?? []) catalog.tables.set(tableKey(entry.version), entry);
    for (const { db, collation } of document?.databases ?? []) catalog.databases.set(db, collation);
    for (const ref of document?.sequences ?? []) catalog.sequences.set(tableKey(ref), { db: ref.db, table: ref.table });
    catalog.filter = document?.filter;
    catalog.charsets = CharsetTable.of(document?.charsets);
    return catalog;
  }

  /** The table's latest version, also when it was dropped (so numbering continues). */
  entry(ref: TableRef): CatalogTable | undefined {
    return this.tables.get(tableKey(ref));
  }

  /** The table's version if the table exists and is captured. */
  live(ref: TableRef): SchemaVersion | undefined {
    const version = this.tables.get(tableKey(ref))?.version;
    return version && !version.dropped ? version : undefined;
  }

  /** Every table that exists and is captured. */
  liveTables(): SchemaVersion[] {
    return [...this.tables.values()].map((e) => e.version).filter((v) => !v.dropped);
  }

  /**
   * Records a table's latest version; `history`: it is a new version, written to the schema history
   * at the next commit (false for what only the catalog tracks: a drop, index changes).
   */
  put(entry: CatalogTable, history = true): void {
    this.tables.set(tableKey(entry.version), entry);
    this.revision++;
    if (history) this.made.push(entry);
    this.changed = true;
  }

  databaseCollation(db: string): string | undefined {
    return this.databases.get(db);
  }

  setDatabaseCollation(db: string, collation: string | undefined): void {
    if (collation === undefined) this.databases.delete(db);
    else this.databases.set(db, collation);
    this.changed = true;
  }

  isSequence(ref: TableRef): boolean {
    return this.sequences.has(tableKey(ref));
  }

  setSequence(ref: TableRef, sequence: boolean): void {
    if (sequence) this.sequences.set(tableKey(ref), { db: ref.db, table: ref.table });
    else this.sequences.delete(tableKey(ref));
    this.changed = true;
  }

  /**
   * The server's character sets as read at run start: recorded with the catalog when they differ
   * from the ones it holds (a first run, or a server upgrade that changed default collations), so
   * the schema history says which table the DDL after its position was read with. True if changed.
   */
  useCharsets(charsets: CharsetTable): boolean {
    if (charsets.equals(this.charsets)) return false;
    this.charsets = charsets;
    this.changed = true;
    return true;
  }

  setFilter(filter: CatalogFilter): void {
    this.filter = filter;
    this.changed = true;
  }

  /** Whether anything changed since the catalog was loaded or last saved. */
  get dirty(): boolean {
    return this.changed;
  }

  /** The versions to write as schema history objects, and the document to save; marks the catalog saved. */
  save(source: string, position: BinlogPosition): { versions: CatalogTable[]; document: CatalogDocument } {
    const versions = this.made.splice(0);
    this.changed = false;
    return {
      versions,
      document: {
        format: 'sluice-catalog/v1',
        source,
        position,
        tables: [...this.tables.values()],
        databases: [...this.databases].map(([db, collation]) => ({ db, collation })),
        sequences: [...this.sequences.values()],
        ...(this.filter ? { filter: this.filter } : {}),
        ...(this.charsets.rows.length ? { charsets: this.charsets.rows } : {}),
      },
    };
  }
}

/** A schema history object (docs/FORMAT.md, "Schema history"): one version of one table. */
export function historyObject(source: string, entry: CatalogTable) {
  const { version } = entry;
  return {
    format: 'sluice-schema/v1',
    source,
    db: version.db,
    table: version.table,
    version: version.version,
    seq: entry.seq,
    position: entry.position,
    origin: entry.origin,
    ddl: entry.ddl
      ? {
          kind: entry.ddl.kind,
          ...(entry.ddl.statement !== undefined ? { statement: entry.ddl.statement } : {}),
          ...(entry.ddl.decidedBy ? { decided_by: entry.ddl.decidedBy, reason: entry.ddl.reason } : {}),
        }
      : null,
    ...(version.dropped ? { dropped: true } : {}),
    columns: version.columns,
    key: version.key,
    last_column_id: version.lastColumnId,
    changes: version.changes,
    indexes: version.indexes,
    ...(version.charset ? { charset: version.charset } : {}),
    ...(version.collation ? { collation: version.collation } : {}),
    ...(version.versioning ? { versioning: version.versioning } : {}),
  };
}
