import type { BinlogPosition } from '../core/position.ts';
import { formatTableRef } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { type EncodedShape, encodeShape, type MarkerOp, rowProperty } from '../format/event.ts';
import type { Column } from '../format/types.ts';
import type { Log } from '../log.ts';
import { type Catalog, type CatalogTable, tableKey } from '../schema/catalog.ts';
import { normalizeType, type TableMapColumn, tableMapType, UnsupportedTypeError } from '../schema/column-type.ts';
import type { TableChange, TableRef, Versioning } from '../schema/definition.ts';
import { currentRowsMap, evolve, type SchemaColumn, type SchemaVersion, structureFromTableMap, structureOf } from '../schema/version.ts';
import type { SqlModeFlags } from '../source/mysql/binlog-reader.ts';
import { type ClassifyContext, classifyDdl, type DdlClassification } from '../source/mysql/ddl/classify.ts';
import type { ServerTraits } from '../source/mysql/schema-read.ts';
import type { PeriodEnd } from './current-rows.ts';

/*
 * The capture side of the schema history (docs/FORMAT.md, "Schema history" and "Which DDL takes
 * which path"). Every DDL statement the binlog carries is classified; for each captured table it
 * touches, the tracker evolves the table's version in the catalog and says which control event to
 * write at the statement's place in the feed:
 *   - `t` (reset): every earlier row of the table is gone — DROP, TRUNCATE, a new table under the
 *     name, RENAME away or in, and DDL whose new values the binlog does not carry or that sluice
 *     cannot classify (`resnapshot`: a snapshot of the table is requested in the same commit);
 *   - `s` (schema change keeping rows): readers project earlier rows through the new version.
 * Rows are stamped with their table's version. A TABLE_MAP that disagrees with the version (a
 * classifier gap) is caught here too: the table is reset and re-snapshotted, never written wrong.
 * Statements are never logged or kept anywhere but in the schema history of captured tables.
 */

/** A control event to write, in order. */
export interface SchemaEvent {
  readonly table: TableRef;
  readonly op: MarkerOp;
  readonly kind: string;
  readonly version: SchemaVersion;
  readonly seq: string;
  /** Where the DDL (or the run's decision) sits in the binlog. */
  readonly position: BinlogPosition;
  /** A statement sluice could not classify: who decided what it did (the event's `ddl.decided_by`). */
  readonly decidedBy?: Decision['decidedBy'];
}

/**
 * What was decided about a statement sluice cannot classify: the tables are re-copied, by sluice
 * (SLUICE_DDL_UNKNOWN=resnapshot, the default) or by an operator (SLUICE_DDL_OVERRIDES), and why
 * the classifier gave up. Recorded in the `t` event, the schema history and the catalog.
 */
export interface Decision {
  readonly decidedBy: 'sluice' | 'operator';
  readonly reason: string;
}

export interface DdlOutcome {
  readonly events: SchemaEvent[];
  /** Tables to snapshot (in the commit that writes these events), with why. */
  readonly snapshots: { readonly table: TableRef; readonly reason: string }[];
  /** Tables sluice decided by itself to re-copy after a statement it could not classify (a metric, the log). */
  decided?: TableRef[];
}

export interface TrackerDeps {
  readonly traits: ServerTraits;
  /** Whether the include/exclude filters capture the table. */
  readonly accept: (db: string, table: string) => boolean;
  /** False when no table of the database can pass the filters: its default charset is then not recorded. */
  readonly acceptDatabase: (db: string) => boolean;
  /** The table's structure as the server describes it now, numbered after `previous` (undefined: it does not exist). */
  readonly readVersion: (table: TableRef, previous: SchemaVersion | undefined) => Promise<SchemaVersion | undefined>;
  /** Operator decisions for statements the classifier cannot read, by the statement's end position (`file:pos`). */
  readonly overrides: ReadonlyMap<string, 'resnapshot' | 'noop'>;
  /** What to do by default with a statement the classifier cannot read on a captured table (SLUICE_DDL_UNKNOWN). */
  readonly unknownDdl: 'resnapshot' | 'stop';
  /** The captured tables on the server now (the filters' tables, sequences included): a statement that names none may have touched any. */
  readonly listTables: () => Promise<TableRef[]>;
  readonly log: Log;
  readonly classify?: (text: string, context: ClassifyContext) => Promise<DdlClassification>;
}

/** A statement as the binlog carries it. */
export interface LoggedStatement {
  readonly db: string;
  readonly query: string;
  readonly sqlMode: SqlModeFlags;
  /** Right after the statement's event. */
  readonly position: BinlogPosition;
}

const where = (p: BinlogPosition) => `${p.file}:${p.pos}`;

/** The columns a rows event of this version is encoded with (kind/type/fsp as the version says). */
function columnOf(c: SchemaColumn): Column {
  return { name: c.name, kind: c.kind, sqlType: c.type, ...(c.fsp !== undefined ? { fsp: c.fsp } : {}) };
}

/** A shape for a version's control events and manifest entry. */
export function shapeOfVersion(version: SchemaVersion): EncodedShape {
  const columns = version.columns.map(columnOf);
  const key = version.key ? version.key.map((name) => columns.findIndex((c) => c.name === name)) : null;
  return encodeShape({ db: version.db, table: version.table, columns, key, schema: version.version });
}

/** A version from a TABLE_MAP (first sight of a table, or the safety net): exact names, types and key; nullability unknown. */
export function versionFromTableMap(
  table: TableRef,
  map: { readonly columns: readonly TableMapColumn[]; readonly key: readonly number[] | null },
  previous: SchemaVersion | undefined,
): SchemaVersion {
  let id = previous?.lastColumnId ?? 0;
  const columns: SchemaColumn[] = map.columns.map((c) => ({ id: ++id, name: c.name, ...normalizeType(tableMapType(c)), nullable: true }));
  return {
    db: table.db,
    table: table.table,
    version: (previous?.version ?? 0) + 1,
    columns,
    key: map.key?.length ? map.key.map((i) => columns[i]?.name as string) : null,
    lastColumnId: id,
    changes: [],
    indexes: [],
  };
}

/** How a rows event is written: its shape stamped with the table's version, and what the DDL before it left to write. */
export interface RowsStamp {
  readonly shape: EncodedShape;
  readonly outcome?: DdlOutcome;
  /** A system-versioned table: the row end column that tells current rows from history (lib/capture/current-rows.ts). */
  readonly periodEnd?: PeriodEnd;
}

/** Whether a TABLE_MAP holds the versioning's period columns (hidden ones are in every row image). */
function hasPeriod(map: { readonly columns: readonly TableMapColumn[] }, versioning: Versioning): boolean {
  const names = new Set(map.columns.map((c) => c.name));
  return names.has(versioning.end) && (!versioning.hidden || names.has(versioning.start));
}

/** A versioned table's shape as its current rows are written: hidden period columns and the row end in the key left out. */
function currentRowsStamp(shape: EncodedShape, versioning: Versioning, schema: number): RowsStamp {
  const end = shape.columns.find((c) => c.name === versioning.end) as Column;
  const hidden = (name: string) => versioning.hidden && (name === versioning.start || name === versioning.end);
  const columns = shape.columns.filter((c) => !hidden(c.name));
  const key = shape.key
    ?.map((i) => (shape.columns[i] as Column).name)
    .filter((name) => name !== versioning.end)
    .map((name) => columns.findIndex((c) => c.name === name));
  return {
    shape: encodeShape({ db: shape.db, table: shape.table, columns, key: key?.length ? key : null, schema }),
    periodEnd: { property: rowProperty(end.name), kind: end.kind, ...(end.fsp !== undefined ? { fsp: end.fsp } : {}) },
  };
}

export class SchemaTracker {
  /** Stamped shapes by the reader's shape: the check against the catalog runs once per shape and version. */
  private readonly stamped = new WeakMap<EncodedShape, { version: SchemaVersion; stamp: RowsStamp; revision: number }>();

  constructor(
    readonly catalog: Catalog,
    private readonly deps: TrackerDeps,
  ) {}

  /** Whether a table is captured: the filters take it and it is no sequence. */
  accepts(table: TableRef): boolean {
    return this.deps.accept(table.db, table.table) && !this.catalog.isSequence(table);
  }

  /**
   * One DDL statement: the control events to write (each takes the next seq of the statement's
   * transaction from `seq`) and the snapshots to request. A captured table touched in a way it
   * cannot classify is re-copied, or with SLUICE_DDL_UNKNOWN=stop DDL_UNKNOWN is thrown with the
   * statement's position and the way out (`unclassified`).
   */
  async onDdl(statement: LoggedStatement, seq: () => string): Promise<DdlOutcome> {
    const classify = this.deps.classify ?? classifyDdl;
    const result = await classify(statement.query, {
      defaultDb: statement.db,
      comments: this.deps.traits.comments,
      ansiQuotes: statement.sqlMode.ansiQuotes,
      noBackslashEscapes: statement.sqlMode.noBackslashEscapes,
      realAsFloat: statement.sqlMode.realAsFloat,
      foreignTypes: statement.sqlMode.foreignTypes,
      lowerCaseTableNames: this.deps.traits.lowerCaseTableNames,
    });
    const outcome: DdlOutcome = { events: [], snapshots: [] };
    switch (result.kind) {
      case 'ignore':
        return outcome;
      case 'database':
        if (result.op === 'drop') {
          for (const version of this.catalog.liveTables().filter((v) => v.db === result.db))
            this.record(outcome, { db: version.db, table: version.table }, 't', 'drop', { ...version, dropped: true }, statement, seq, false);
          if (this.catalog.databaseCollation(result.db) !== undefined) this.catalog.setDatabaseCollation(result.db, undefined);
        } else if (this.deps.acceptDatabase(result.db)) {
          const collation = this.databaseCollation(result);
          // A database that names no charset has the server's collation: no entry says so (see
          // evolve's context below). Recording one would commit the catalog for every CREATE DATABASE
          // on the server, the sources' own or not.
          if (collation !== this.catalog.databaseCollation(result.db)) this.catalog.setDatabaseCollation(result.db, collation);
        }
        return outcome;
      case 'sequence':
        for (const table of result.tables) if (result.op !== 'alter') this.catalog.setSequence(table, result.op === 'create');
        return outcome;
      case 'unknown': {
        const touched = result.tables ?? this.catalog.liveTables();
        const captured = touched.filter((t) => this.catalog.live(t) || this.accepts(t));
        if (captured.length || result.tables === null) return this.unclassified(statement, captured, result.tables === null, result.reason, seq, outcome);
        return outcome;
      }
      case 'tables':
        break;
    }
    /** Versions of tables renamed away by this statement, by their new name, for the rename-in that follows. */
    const moved = new Map<string, SchemaVersion | undefined>();
    for (const { table, change } of result.effects) {
      const entry = this.catalog.entry(table);
      const live = this.catalog.live(table);
      const accepted = this.accepts(table);
      if (change.kind === 'rename-out') moved.set(tableKey(change.to), live);
      if (!live && !accepted) continue;
      const source = await this.sourceOf(table, change, moved);
      const evolved = evolve(entry?.version, change, {
        db: table.db,
        table: table.table,
        source,
        databaseCollation: this.catalog.databaseCollation(table.db) ?? this.deps.traits.serverCollation,
        explicitDefaultsForTimestamp: this.deps.traits.explicitDefaultsForTimestamp,
        strictSqlMode: statement.sqlMode.strict,
        charsets: this.catalog.charsets,
      });
      switch (evolved.path) {
        case 'unknown':
          await this.unclassified(statement, [table], false, evolved.reason ?? 'not understood', seq, outcome);
          break;
        case 'create':
          if (accepted && evolved.next) this.record(outcome, table, 't', 'create', evolved.next, statement, seq, true);
          break;
        case 'derive':
          if (evolved.next) this.record(outcome, table, 's', 'alter', evolved.next, statement, seq, true);
          break;
        case 'noop':
          // Index and option changes keep the version (catalog state only); the event records the DDL.
          if (live && evolved.next) this.catalog.put({ ...(entry as CatalogTable), version: evolved.next }, false);
          if (live) this.record(outcome, table, 's', 'noop', evolved.next ?? live, statement, seq, false);
          break;
        case 'reset': {
          // `DROP TABLE IF EXISTS` of a table sluice never saw (never created, or gone before the
          // start): no row of it was written, so there is nothing to retract.
          if (!evolved.next && !live) break;
          const kind = change.kind === 'truncate' ? 'truncate' : change.kind === 'drop' ? 'drop' : 'rename-out';
          const next = evolved.next ?? { ...(live as SchemaVersion), dropped: true as const };
          this.record(outcome, table, 't', kind, next, statement, seq, false);
          break;
        }
        case 'resnapshot':
          if (!accepted) {
            // A captured table changed into one the filters no longer take: retract it.
            if (live) this.record(outcome, table, 't', 'rename-out', { ...live, dropped: true }, statement, seq, false);
            break;
          }
          await this.resnapshot(outcome, table, change, evolved.next, entry?.version, evolved.reason ?? change.kind, statement, seq);
          break;
      }
    }
    return outcome;
  }

  /**
   * A rows event's shape, stamped with the table's version. First sight of a table (not known to
   * the catalog) takes its version from the TABLE_MAP; a TABLE_MAP that disagrees with the version
   * resets and re-snapshots the table, after a warning, so its output stays exact.
   */
  onRows(
    shape: EncodedShape,
    map: { readonly columns: readonly TableMapColumn[]; readonly key: readonly number[] | null },
    seq: () => string,
    position: BinlogPosition,
  ): RowsStamp {
    const known = this.stamped.get(shape);
    // A rows event per transaction: the catalog is looked up again only once it changed.
    if (known?.revision === this.catalog.revision) return known.stamp;
    const table = { db: shape.db, table: shape.table };
    const live = this.catalog.live(table);
    if (known && known.version === live) {
      known.revision = this.catalog.revision;
      return known.stamp;
    }
    let outcome: DdlOutcome | undefined;
    let version = live;
    // A system-versioned table is captured as its current rows: its TABLE_MAP without hidden period columns.
    const versioning = live?.versioning && hasPeriod(map, live.versioning) ? live.versioning : undefined;
    const current = currentRowsMap(map, versioning);
    let structure: string;
    try {
      structure = structureFromTableMap(current.columns, current.key);
    } catch (error) {
      // A column type the schema history cannot describe: rows are written exactly, without a version.
      if (!(error instanceof UnsupportedTypeError)) throw error;
      return { shape };
    }
    if (!version || !sameStructure(structure, structureOf(version))) {
      const entry = this.catalog.entry(table);
      version = { ...versionFromTableMap(table, current, entry?.version), ...(versioning ? { versioning } : {}) };
      const statement = { db: table.db, query: '', sqlMode: {}, position };
      outcome = { events: [], snapshots: [] };
      if (live) {
        this.deps.log.warn('a table does not match its schema version; re-snapshotting it', { db: table.db, table: table.table, position: where(position) });
        this.record(outcome, table, 't', 'resnapshot', version, statement, seq, true, 'table-map');
        outcome.snapshots.push({ table, reason: 'schema mismatch' });
      } else {
        this.catalog.put({ version, seq: seq(), position, origin: 'table-map' });
      }
    }
    const stamp = versioning ? currentRowsStamp(shape, versioning, version.version) : { shape: encodeShape({ ...shape, schema: version.version }) };
    this.stamped.set(shape, { version, stamp, revision: this.catalog.revision });
    return { ...stamp, ...(outcome ? { outcome } : {}) };
  }

  /**
   * The default collation a CREATE/ALTER DATABASE leaves: the one it names, else its charset's
   * default; for CREATE naming neither, undefined: no entry means the server's (see `onDdl`). An
   * ALTER naming neither (COMMENT, READ ONLY, ENCRYPTION) and CREATE IF NOT EXISTS of a known
   * database keep the database's own.
   */
  private databaseCollation(result: Extract<DdlClassification, { kind: 'database' }>): string | undefined {
    const known = this.catalog.databaseCollation(result.db);
    const charsets = this.catalog.charsets;
    if (result.op === 'create' && result.ifNotExists && known !== undefined) return known;
    if (result.collation) return charsets.collationInfo(result.collation)?.collation ?? result.collation;
    // `CHARACTER SET DEFAULT` is the server's charset, `COLLATE DEFAULT` the charset's (or, alone in
    // an ALTER, the database's own charset's) default collation: not @@collation_server itself.
    const serverCharset = charsets.collationInfo(this.deps.traits.serverCollation ?? '')?.charset;
    let charset = result.charsetDefault ? serverCharset : result.charset;
    if (!charset && result.collationDefault) charset = result.op === 'alter' && known !== undefined ? charsets.collationInfo(known)?.charset : serverCharset;
    if (charset) return charsets.defaultCollation(charset);
    return result.op === 'alter' ? known : undefined;
  }

  /** CREATE … LIKE and RENAME copy another table's structure: the version it had, or the server's. */
  private async sourceOf(table: TableRef, change: TableChange, moved: Map<string, SchemaVersion | undefined>): Promise<SchemaVersion | undefined> {
    if (change.kind === 'rename-in') return moved.get(tableKey(table));
    if (change.kind !== 'create-like') return undefined;
    return this.catalog.live(change.source) ?? (await this.deps.readVersion(change.source, undefined));
  }

  private async resnapshot(
    outcome: DdlOutcome,
    table: TableRef,
    change: TableChange,
    next: SchemaVersion | undefined,
    previous: SchemaVersion | undefined,
    reason: string,
    statement: LoggedStatement,
    seq: () => string,
    decision?: Decision,
  ): Promise<void> {
    // The structure the statement left: derived from it, else described by the server now (a later
    // DDL on the table would then show as a TABLE_MAP mismatch, handled the same way again).
    const version = next ?? (await this.deps.readVersion(table, previous));
    if (!version) {
      // Gone already (dropped later in the binlog): nothing to copy; the later DROP retracts it.
      if (previous && !previous.dropped) this.record(outcome, table, 't', 'drop', { ...previous, dropped: true }, statement, seq, false, 'ddl', decision);
      return;
    }
    const kind = change.kind === 'rename-in' ? 'rename-in' : change.kind === 'create-select' ? 'create' : 'resnapshot';
    this.record(outcome, table, 't', kind, version, statement, seq, true, 'ddl', decision);
    outcome.snapshots.push({ table, reason: kind === 'resnapshot' ? reason : kind });
  }

  /**
   * A statement on captured tables that cannot be classified. An operator's decision for its
   * position comes first; else, by default (SLUICE_DDL_UNKNOWN=resnapshot), sluice resets and
   * re-copies the tables it touches — the snapshot's rows, read after the statement, are exact
   * whatever it did, and every other table streams on; with SLUICE_DDL_UNKNOWN=stop it stops with
   * DDL_UNKNOWN. `unnamed`: the statement names no table sluice could read (it cannot be tokenized,
   * or is no statement sluice knows), so it may have touched any: every captured table is re-copied,
   * those the server has now that the catalog does not know included (a rename or CREATE it made).
   */
  private async unclassified(
    statement: LoggedStatement,
    named: readonly TableRef[],
    unnamed: boolean,
    reason: string,
    seq: () => string,
    outcome: DdlOutcome,
  ): Promise<DdlOutcome> {
    const override = this.deps.overrides.get(where(statement.position));
    if (override === 'noop') {
      for (const table of named) {
        const live = this.catalog.live(table);
        if (live) this.record(outcome, table, 's', 'noop', live, statement, seq, false, 'ddl', { decidedBy: 'operator', reason });
      }
      return outcome;
    }
    if (override !== 'resnapshot' && this.deps.unknownDdl === 'stop') {
      if (!named.length) return outcome;
      throw new SluiceError(
        ErrorCode.DDL_UNKNOWN,
        `a DDL statement at ${where(statement.position)} touches ${named.map(formatTableRef).join(', ')} and sluice cannot tell what it does to the rows (${reason}). ` +
          `Capture stopped before it (SLUICE_DDL_UNKNOWN=stop). Decide, then restart: SLUICE_DDL_OVERRIDES=${where(statement.position)}=resnapshot (copy the tables again) ` +
          `or =noop (the statement changed no rows or columns). See docs/RUNBOOK.md, "DDL sluice cannot classify".`,
      );
    }
    const decision: Decision = { decidedBy: override === 'resnapshot' ? 'operator' : 'sluice', reason };
    const tables = [...named];
    if (unnamed)
      for (const table of await this.deps.listTables()) if (!tables.some((t) => tableKey(t) === tableKey(table)) && this.accepts(table)) tables.push(table);
    const asked = outcome.snapshots.length;
    for (const table of tables) {
      if (!this.accepts(table)) continue;
      const previous = this.catalog.entry(table)?.version;
      await this.resnapshot(
        outcome,
        table,
        { kind: 'unknown', reason },
        undefined,
        previous,
        `DDL sluice cannot classify: ${reason}`,
        statement,
        seq,
        decision,
      );
    }
    // A table gone by now got a `t drop` (with the decision) and no copy.
    const copied = outcome.snapshots.slice(asked).map((s) => s.table);
    if (decision.decidedBy === 'sluice' && copied.length) {
      this.deps.log.warn('a DDL statement sluice cannot classify: re-copying the tables it may have changed (SLUICE_DDL_UNKNOWN=resnapshot)', {
        position: where(statement.position),
        tables: copied.map(formatTableRef),
        reason,
      });
      outcome.decided = [...(outcome.decided ?? []), ...copied];
    }
    return outcome;
  }

  /** Adds a control event and, when the table's version changed, the new version to the catalog. */
  private record(
    outcome: DdlOutcome,
    table: TableRef,
    op: MarkerOp,
    kind: string,
    version: SchemaVersion,
    statement: LoggedStatement,
    seq: () => string,
    newVersion: boolean,
    origin: CatalogTable['origin'] = 'ddl',
    decision?: Decision,
  ): void {
    const at = seq();
    const entry: CatalogTable = {
      version,
      seq: at,
      position: statement.position,
      origin,
      ddl: {
        kind,
        ...(statement.query ? { statement: statement.query } : {}),
        ...(decision ? { decidedBy: decision.decidedBy, reason: decision.reason } : {}),
      },
    };
    // An operator's noop keeps the version; it is recorded in the catalog all the same, so the decision shows.
    if (newVersion) this.catalog.put(entry);
    else if (version.dropped || decision || this.catalog.entry(table)?.version !== version) this.catalog.put(entry, false);
    outcome.events.push({ table, op, kind, version, seq: at, position: statement.position, ...(decision ? { decidedBy: decision.decidedBy } : {}) });
    this.deps.log.info('schema change', { db: table.db, table: table.table, kind, schema: version.version, position: where(statement.position) });
  }
}

/**
 * Whether a TABLE_MAP's structure is a version's. Temporal columns in MariaDB's pre-10.0 storage
 * format carry no fraction digits in the TABLE_MAP (`time(*)`): any fsp of the version matches.
 */
function sameStructure(map: string, version: string): boolean {
  if (map === version) return true;
  const a = JSON.parse(map) as { columns: [string, string, string | null][]; key: unknown };
  const b = JSON.parse(version) as { columns: [string, string, string | null][]; key: unknown };
  if (JSON.stringify(a.key) !== JSON.stringify(b.key) || a.columns.length !== b.columns.length) return false;
  return a.columns.every(([name, type, charset], i) => {
    const [otherName, otherType, otherCharset] = b.columns[i] as [string, string, string | null];
    const base = type.endsWith('(*)') ? type.slice(0, -3) : undefined;
    return name === otherName && charset === otherCharset && (type === otherType || (base !== undefined && otherType.replace(/\(\d\)$/, '') === base));
  });
}
