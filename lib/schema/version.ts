import { CharsetTable } from './charsets.ts';
import {
  type ColumnType,
  type InformationSchemaColumn,
  informationSchemaType,
  lobForBytes,
  normalizeType,
  type TableMapColumn,
  type TypeDescriptor,
  tableMapType,
  UnsupportedTypeError,
} from './column-type.ts';
import type { AlterOp, ColumnDefinition, IndexDefinition, KeyPart, Period, TableChange, TableDefinition, Versioning } from './definition.ts';
import { addColumnFill, type FillContext } from './fill.ts';

/**
 * Schema versions (docs: format-v2 §3) and the pure evolution function: previous version + one
 * table's DDL effect → which path the output takes and the next version.
 *
 * Column ids are stable: a rename keeps the id, an added column gets `lastColumnId + 1`, ids are
 * never reused across drops and re-creations of the name. The row identity (`key`) is what the
 * binlog's TABLE_MAP reports as primary key: the PRIMARY KEY, or else — as MariaDB promotes it —
 * the first UNIQUE key whose columns are all NOT NULL, not prefixes and not a hash (long unique).
 * To follow that through DROP/ADD INDEX, a version tracks its indexes and the table's default
 * charset; these may change without a new version number (they are catalog state, not history).
 */

export interface SchemaColumn extends ColumnType {
  readonly id: number;
  readonly name: string;
  readonly nullable: boolean;
  /** AUTO_INCREMENT (catalog state: adding it to an existing column renumbers zeros). */
  readonly autoIncrement?: boolean;
}

export interface SchemaIndex {
  readonly name: string;
  readonly kind: 'primary' | 'unique' | 'index';
  readonly parts: readonly KeyPart[];
  readonly hash?: boolean;
}

export type SchemaChange =
  | { readonly op: 'add'; readonly id: number; readonly fill: string }
  | { readonly op: 'drop'; readonly id: number; readonly name: string }
  | { readonly op: 'rename'; readonly id: number; readonly from: string }
  | { readonly op: 'widen'; readonly id: number; readonly from: string }
  | { readonly op: 'key'; readonly from: readonly string[] | null };

export interface SchemaVersion {
  readonly db: string;
  readonly table: string;
  readonly version: number;
  readonly columns: readonly SchemaColumn[];
  readonly key: readonly string[] | null;
  readonly lastColumnId: number;
  /** How rows written under the previous version are read through this one (empty after a reset). */
  readonly changes: readonly SchemaChange[];
  readonly indexes: readonly SchemaIndex[];
  /** The table's default charset/collation (for columns added later without one). */
  readonly charset?: string;
  readonly collation?: string;
  /**
   * MariaDB system versioning: the row period's columns. The change log mirrors the current rows
   * (`SELECT * FROM t`): binlog rows whose period has ended are history and are not captured, and
   * hidden period columns are not columns of the version (docs/FORMAT.md, "System-versioned tables").
   */
  readonly versioning?: Versioning;
  /** Application-time periods (`PERIOD FOR p (a, b)`), for a later key's `p WITHOUT OVERLAPS` (catalog state). */
  readonly periods?: readonly Period[];
  /** The name no longer exists (dropped or renamed away); kept so numbering continues. */
  readonly dropped?: true;
}

export type EvolvePath =
  /** A new table: `t create`, version `next`. */
  | 'create'
  /** Rows stay; rows of earlier versions are read through `next`: `s alter`. */
  | 'derive'
  /** Every earlier row is gone (drop, truncate, renamed away): `t`. */
  | 'reset'
  /** The binlog does not carry the new rows: `t resnapshot` and a snapshot. `next` undefined = read the structure from the source. */
  | 'resnapshot'
  /** Nothing to record but the event: `s noop`. */
  | 'noop'
  /** Cannot be classified with certainty: stop. */
  | 'unknown';

export interface EvolveResult {
  readonly path: EvolvePath;
  /** The table's state after the DDL (`dropped` for drops and renames away). */
  readonly next: SchemaVersion | undefined;
  readonly changes: readonly SchemaChange[];
  /** Why (resnapshot, unknown). */
  readonly reason?: string;
}

export interface EvolveContext extends FillContext {
  readonly db: string;
  readonly table: string;
  /** CREATE TABLE … LIKE and RENAME (rename-in): the source table's version when known (for a rename, as it was just before). */
  readonly source?: SchemaVersion;
  /** The database's default collation, for CREATE TABLE without a charset (CREATE/ALTER DATABASE, information_schema.SCHEMATA). */
  readonly databaseCollation?: string;
  /** The server's character sets (CharsetTable.fromServer, kept in the catalog); the fallback table when not given. */
  readonly charsets?: CharsetTable;
  /**
   * The statement ran under a strict sql_mode (STRICT_TRANS_TABLES/STRICT_ALL_TABLES): making a
   * column holding NULLs NOT NULL fails there (ER 1265, checked on InnoDB, MyISAM and Aria), so a
   * logged one changed no value. Unknown or off: NULLs became the type's default, not derivable.
   */
  readonly strictSqlMode?: boolean;
}

/** A statement the server would have refused: it cannot be in the binlog, so our state is wrong. */
class Impossible extends Error {}

const sameName = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
/** InnoDB's key length limit; longer unique keys become hash keys (long unique). */
const MAX_KEY_BYTES = 3072;

/** What a statement says of a table's default charset and collation (`DEFAULT` as a value is a flag). */
interface CharsetChoice {
  readonly charset?: string;
  readonly collation?: string;
  /** `CHARACTER SET DEFAULT`: the enclosing (database's) charset. */
  readonly charsetDefault?: boolean;
  /** `COLLATE DEFAULT`: the charset's own default collation, not the enclosing collation. */
  readonly collationDefault?: boolean;
}

/**
 * Table default charset/collation from what the statement says and the enclosing default (the
 * database's collation). `CHARACTER SET DEFAULT` and `COLLATE DEFAULT` name the enclosing charset
 * with ITS default collation: a database of latin1_general_ci gives latin1_swedish_ci (checked
 * against MariaDB 10.11, test/integration/ddl-schema.test.ts).
 */
function tableDefaults(choice: CharsetChoice, enclosing: string | undefined, cs: CharsetTable): { charset?: string; collation?: string } {
  if (choice.collation) {
    const info = cs.collationInfo(choice.collation);
    if (!info) throw new UnsupportedTypeError(`collation ${choice.collation}`);
    return { charset: info.charset, collation: info.collation };
  }
  let charset = choice.charset;
  if (choice.charsetDefault || (choice.collationDefault && !charset)) {
    const info = enclosing ? cs.collationInfo(enclosing) : undefined;
    if (!info) throw new UnsupportedTypeError('CHARACTER SET DEFAULT where the enclosing charset is not known');
    charset = info.charset;
  }
  if (charset) {
    const c = cs.defaultCollation(charset);
    if (!c) throw new UnsupportedTypeError(`charset ${charset}`);
    return { charset: cs.collationInfo(c)?.charset ?? charset, collation: c };
  }
  if (enclosing) return tableDefaults({ collation: enclosing }, undefined, cs);
  return {};
}

const TEXTUAL = new Set(['char', 'varchar', 'tinytext', 'text', 'mediumtext', 'longtext', 'enum', 'set']);

/**
 * A parsed column's descriptor with the charset MariaDB gives it (explicit, else the table's
 * default) and the collation: named, or by rule (`BINARY`: the charset's `_bin` collation;
 * `COLLATE DEFAULT`: the charset's default). TEXT(n) becomes the smallest TEXT type that holds n
 * characters of that charset.
 */
function resolveCharset(def: ColumnDefinition, defaults: { charset?: string; collation?: string }, cs: CharsetTable): TypeDescriptor {
  const type = def.type;
  if (!TEXTUAL.has(type.base)) return type;
  let resolved: TypeDescriptor;
  if (def.collationRule) {
    const named = type.charset ?? defaults.charset;
    const canonical = named === undefined ? undefined : cs.collationInfo(cs.defaultCollation(named) ?? '')?.charset;
    if (!canonical) throw new UnsupportedTypeError(`a ${def.collationRule === 'binary' ? 'BINARY' : 'COLLATE DEFAULT'} column of an unknown charset`);
    if (canonical === 'binary') resolved = { ...type, charset: canonical };
    else {
      const collation = def.collationRule === 'binary' ? `${canonical}_bin` : cs.defaultCollation(canonical);
      if (!collation || cs.collationInfo(collation)?.charset !== canonical) throw new UnsupportedTypeError(`no ${def.collationRule} collation of ${canonical}`);
      resolved = { ...type, charset: canonical, collation };
    }
  } else if (type.collation) {
    const info = cs.collationInfo(type.collation);
    if (!info) throw new UnsupportedTypeError(`collation ${type.collation}`);
    if (type.charset && cs.collationInfo(cs.defaultCollation(type.charset) ?? '')?.charset !== info.charset)
      throw new UnsupportedTypeError(`collation ${type.collation} of another charset than ${type.charset}`);
    resolved = { ...type, charset: info.charset, collation: info.collation };
  } else if (type.charset) {
    const c = cs.defaultCollation(type.charset);
    if (!c) throw new UnsupportedTypeError(`charset ${type.charset}`);
    const charset = cs.collationInfo(c)?.charset ?? type.charset;
    resolved = charset === 'binary' ? { ...type, charset } : { ...type, charset, collation: c };
  } else {
    const { charset, collation } = defaults;
    resolved = { ...type, ...(charset ? { charset } : {}), ...(collation ? { collation } : {}) };
  }
  if (resolved.base === 'text' && resolved.length !== undefined) {
    const per = resolved.charset === 'binary' ? 1 : cs.maxBytesPerChar(resolved.charset ?? '');
    if (per === undefined) throw new UnsupportedTypeError('TEXT(n) of an unknown charset');
    const { length, ...rest } = resolved;
    resolved = { ...rest, base: lobForBytes(length * per, true) };
  }
  return resolved;
}

function columnOf(
  def: ColumnDefinition,
  id: number,
  defaults: { charset?: string; collation?: string },
  forceNotNull: boolean,
  cs: CharsetTable,
): SchemaColumn {
  const descriptor = resolveCharset(def, defaults, cs);
  const type = normalizeType(descriptor);
  const nullable = forceNotNull || def.primaryKey ? false : (def.nullable ?? true);
  return { id, name: def.name, ...type, nullable, ...(def.autoIncrement ? { autoIncrement: true } : {}) };
}

/** Byte length of a key part, for the long-unique rule; undefined when unknown. */
function partBytes(column: SchemaColumn, part: KeyPart, cs: CharsetTable): number | undefined {
  const m = /^(?:var)?(?:char|binary)\((\d+)\)/.exec(column.type);
  if (!m) return /^(tiny|medium|long)?(text|blob)/.test(column.type) ? Number.POSITIVE_INFINITY : 8;
  const chars = Math.min(Number(m[1]), part.prefix ?? Number.POSITIVE_INFINITY);
  const per = column.kind === 'binary' ? 1 : cs.maxBytesPerChar(column.charset ?? '');
  return per === undefined ? undefined : chars * per;
}

/** The row identity MariaDB reports in TABLE_MAP: PRIMARY KEY, else the first usable UNIQUE key. */
export function identityKey(columns: readonly SchemaColumn[], indexes: readonly SchemaIndex[], cs = CharsetTable.fallback): string[] | null {
  const byName = (name: string) => columns.find((c) => sameName(c.name, name));
  const primary = indexes.find((i) => i.kind === 'primary');
  const names = (i: SchemaIndex) => i.parts.map((p) => byName(p.column)?.name ?? p.column);
  if (primary) return names(primary);
  for (const index of indexes) {
    if (index.kind !== 'unique' || index.hash) continue;
    let usable = true;
    let bytes = 0;
    for (const part of index.parts) {
      const column = byName(part.column);
      if (!column || column.nullable) usable = false;
      else {
        const full = /\((\d+)\)/.exec(column.type)?.[1];
        if (part.prefix !== undefined && !(full !== undefined && Number(full) === part.prefix && /char|binary/.test(column.type))) usable = false;
        bytes += partBytes(column, part, cs) ?? Number.POSITIVE_INFINITY;
      }
    }
    if (bytes > MAX_KEY_BYTES) continue; // a long unique (hash): never promoted
    if (usable) return names(index);
  }
  return null;
}

/** The server's name for an unnamed index: its first column, then `_2`, `_3`… while taken. */
function indexName(index: IndexDefinition, taken: readonly SchemaIndex[]): string {
  if (index.kind === 'primary') return 'PRIMARY';
  if (index.name !== undefined) return index.name;
  // Only a functional index (MySQL 8.0.13+) has no column parts here; the server names it so.
  const base = index.parts[0]?.column ?? 'functional_index';
  const used = (name: string) => taken.some((i) => sameName(i.name, name)) || sameName(name, 'PRIMARY');
  if (!used(base)) return base;
  for (let n = 2; ; n++) if (!used(`${base}_${n}`)) return `${base}_${n}`;
}

function addIndex(indexes: SchemaIndex[], index: IndexDefinition): SchemaIndex {
  if (index.kind === 'primary' && indexes.some((i) => i.kind === 'primary')) throw new Impossible('a second PRIMARY KEY');
  const name = indexName(index, indexes);
  if (indexes.some((i) => sameName(i.name, name))) throw new Impossible(`duplicate index name ${name}`);
  const added: SchemaIndex = { name, kind: index.kind, parts: index.parts, ...(index.hash ? { hash: true } : {}) };
  // The server sorts PRIMARY first; order among the others stays as defined.
  if (index.kind === 'primary') indexes.unshift(added);
  else indexes.push(added);
  return added;
}

/** MariaDB's hidden period columns of a table declared WITH SYSTEM VERSIONING without its own. */
const HIDDEN_VERSIONING: Versioning = { start: 'row_start', end: 'row_end', hidden: true };

/**
 * The system versioning a table's columns and options declare: the period columns it names
 * (`GENERATED ALWAYS AS ROW START/END`), else MariaDB's hidden `row_start`/`row_end`.
 */
function declaredVersioning(versioned: boolean, defs: readonly ColumnDefinition[]): Versioning | undefined {
  const start = defs.find((d) => d.rowPeriod === 'start');
  const end = defs.find((d) => d.rowPeriod === 'end');
  if (!versioned) {
    if (start || end) throw new Impossible('ROW START/END columns in a table without system versioning');
    return undefined;
  }
  if (!start !== !end) throw new Impossible('a ROW START column without ROW END, or the reverse');
  return start && end ? { start: start.name, end: end.name, hidden: false } : HIDDEN_VERSIONING;
}

/**
 * An index as the server keeps it: `p WITHOUT OVERLAPS` is the period's end and start columns (in
 * that order, as SHOW INDEX and the TABLE_MAP list them), and in a system-versioned table with
 * declared period columns the row end, which MariaDB appends to every unique key, is left out:
 * among current rows it is one constant, so the rest identifies them.
 */
function serverIndex(index: IndexDefinition, periods: readonly Period[], versioning: Versioning | undefined): IndexDefinition {
  const parts = index.parts.flatMap((part): KeyPart[] => {
    if (!part.period) return [part];
    const found = periods.find((p) => sameName(p.name, part.column));
    if (!found) throw new UnsupportedTypeError(`WITHOUT OVERLAPS of a period not known: ${part.column}`);
    return [{ column: found.end }, { column: found.start }];
  });
  return { ...index, parts: versioning ? parts.filter((p) => !sameName(p.column, versioning.end)) : parts };
}

/** Builds a version from a CREATE TABLE definition. */
function fromDefinition(
  definition: TableDefinition,
  at: { db: string; table: string; version: number; firstId: number },
  context: EvolveContext,
): SchemaVersion {
  const cs = context.charsets ?? CharsetTable.fallback;
  const defaults = tableDefaults(definition, context.databaseCollation, cs);
  const periods = (definition.periods ?? []).filter((p) => p.name !== 'SYSTEM_TIME');
  const defs = definition.items.flatMap((item) => ('column' in item ? [item.column] : []));
  const versioning = declaredVersioning(definition.systemVersioning === true || defs.some((d) => d.systemVersioning === true), defs);
  const indexes: SchemaIndex[] = [];
  for (const item of definition.items) {
    if ('column' in item) {
      if (item.column.primaryKey) addIndex(indexes, { name: 'PRIMARY', kind: 'primary', parts: [{ column: item.column.name }] });
      if (item.column.unique) addIndex(indexes, { name: undefined, kind: 'unique', parts: [{ column: item.column.name }] });
    } else addIndex(indexes, serverIndex(item.index, periods, versioning));
  }
  // A period's columns are NOT NULL (both kinds of period; the row period's are generated).
  const inPeriod = (name: string) => (definition.periods ?? []).some((p) => sameName(p.start, name) || sameName(p.end, name));
  const primary = indexes.find((i) => i.kind === 'primary');
  let id = at.firstId - 1;
  const columns = defs.map((def) =>
    columnOf(
      def,
      ++id,
      defaults,
      primary?.parts.some((p) => sameName(p.column, def.name)) === true ||
        def.rowPeriod !== undefined ||
        inPeriod(def.name) ||
        (def.type.base === 'timestamp' && !timestampNullable(def, context)),
      cs,
    ),
  );
  for (const index of indexes)
    for (const part of index.parts) if (!columns.some((c) => sameName(c.name, part.column))) throw new Impossible(`key column ${part.column} does not exist`);
  return {
    db: at.db,
    table: at.table,
    version: at.version,
    columns,
    key: identityKey(columns, indexes, cs),
    lastColumnId: id,
    changes: [],
    indexes,
    ...defaults,
    ...(versioning ? { versioning } : {}),
    ...(periods.length ? { periods } : {}),
  };
}

/** TIMESTAMP columns are NOT NULL unless declared NULL when explicit_defaults_for_timestamp is off. */
function timestampNullable(def: ColumnDefinition, context: EvolveContext): boolean {
  if (def.nullable !== undefined) return def.nullable;
  if (context.explicitDefaultsForTimestamp === undefined)
    throw new UnsupportedTypeError('TIMESTAMP column without NULL/NOT NULL and explicit_defaults_for_timestamp unknown');
  return context.explicitDefaultsForTimestamp;
}

/** A copy of `source`'s structure under a new name and numbering (LIKE, rename-in). */
function copyOf(source: SchemaVersion, previous: SchemaVersion | undefined, context: EvolveContext): SchemaVersion {
  const firstId = (previous?.lastColumnId ?? 0) + 1;
  const columns = source.columns.map((c, i) => ({ ...c, id: firstId + i }));
  const { dropped: _dropped, ...rest } = source;
  return {
    ...rest,
    db: context.db,
    table: context.table,
    version: (previous?.version ?? 0) + 1,
    columns,
    lastColumnId: firstId + columns.length - 1,
    changes: [],
  };
}

const INT_RANK = ['tinyint', 'smallint', 'mediumint', 'int', 'bigint'];
const TEXT_BYTES: Record<string, number> = { tinytext: 255, text: 65535, mediumtext: 16777215, longtext: 4294967295 };
const BLOB_BYTES: Record<string, number> = { tinyblob: 255, blob: 65535, mediumblob: 16777215, longblob: 4294967295 };

/** Parses a normalized type string back into its parts (our own vocabulary, so this is exact). */
function parts(type: string): { base: string; args: string[]; unsigned: boolean } {
  const m = /^([a-z0-9]+)(?:\((.*)\))?( unsigned)?$/.exec(type);
  if (!m) return { base: type, args: [], unsigned: false };
  const args = m[1] === 'enum' || m[1] === 'set' ? [...(m[2] ?? '').matchAll(/'((?:[^']|'')*)'/g)].map((x) => x[1] as string) : (m[2] ?? '').split(',');
  return { base: m[1] as string, args: m[2] === undefined ? [] : args, unsigned: m[3] !== undefined };
}

/** Every value of `from` is the same value in `to` (rendered in `to`'s type). */
export function isWidening(from: SchemaColumn, to: SchemaColumn, cs = CharsetTable.fallback): boolean {
  if (from.type === to.type) return from.charset === to.charset && from.collation === to.collation;
  const a = parts(from.type);
  const b = parts(to.type);
  const text = from.kind === 'string' && to.kind === 'string';
  if (text && (from.charset === undefined || from.charset !== to.charset || from.collation !== to.collation)) return false;
  if (from.kind === 'int' && to.kind === 'int') {
    const ra = INT_RANK.indexOf(a.base);
    const rb = INT_RANK.indexOf(b.base);
    return a.unsigned === b.unsigned ? rb >= ra : a.unsigned && !b.unsigned && rb > ra;
  }
  if (from.kind === 'decimal' && to.kind === 'decimal') {
    const [p, s] = a.args.map(Number) as [number, number];
    const [p2, s2] = b.args.map(Number) as [number, number];
    return s2 >= s && p2 - s2 >= p - s && (a.unsigned === b.unsigned || (a.unsigned && !b.unsigned));
  }
  if (from.kind === to.kind && (from.kind === 'datetime' || from.kind === 'timestamp' || from.kind === 'time')) return (to.fsp ?? 0) >= (from.fsp ?? 0);
  if (from.kind === 'bit' && to.kind === 'bit') return Number(b.args[0]) >= Number(a.args[0]);
  if (text) {
    if ((a.base === 'enum' && b.base === 'enum') || (a.base === 'set' && b.base === 'set'))
      return a.args.length <= b.args.length && a.args.every((v, i) => v === b.args[i]) && (a.base === 'enum' || b.args.length <= 64);
    const per = cs.maxBytesPerChar(from.charset ?? '') ?? Number.POSITIVE_INFINITY;
    if (a.base === 'varchar' && b.base === 'varchar') return Number(b.args[0]) >= Number(a.args[0]);
    if (a.base === 'char' && b.base === 'char') return Number(b.args[0]) >= Number(a.args[0]);
    if (a.base === 'varchar' && TEXT_BYTES[b.base] !== undefined) return Number(a.args[0]) * per <= (TEXT_BYTES[b.base] as number);
    if (TEXT_BYTES[a.base] !== undefined && TEXT_BYTES[b.base] !== undefined) return (TEXT_BYTES[b.base] as number) >= (TEXT_BYTES[a.base] as number);
    return false;
  }
  if (from.kind === 'binary' && to.kind === 'binary') {
    // BINARY(n) pads with zero bytes: growing it changes every value.
    if (a.base === 'varbinary' && b.base === 'varbinary') return Number(b.args[0]) >= Number(a.args[0]);
    if (a.base === 'varbinary' && BLOB_BYTES[b.base] !== undefined) return Number(a.args[0]) <= (BLOB_BYTES[b.base] as number);
    if (BLOB_BYTES[a.base] !== undefined && BLOB_BYTES[b.base] !== undefined) return (BLOB_BYTES[b.base] as number) >= (BLOB_BYTES[a.base] as number);
  }
  return false;
}

const sameKey = (a: readonly string[] | null, b: readonly string[] | null) => JSON.stringify(a) === JSON.stringify(b);

/** What the binlog can show of a version: names, types, key (nullability and collations it cannot). */
export function structureOf(v: Pick<SchemaVersion, 'columns' | 'key'>): string {
  return JSON.stringify({ columns: v.columns.map((c) => [c.name, binlogVisible(c.type), c.kind === 'string' ? (c.charset ?? null) : null]), key: v.key });
}

/** A type as a TABLE_MAP can show it: MariaDB logs UUID and INET6 as BINARY(16), INET4 as BINARY(4). */
function binlogVisible(type: string): string {
  return type === 'uuid' || type === 'inet6' ? 'binary(16)' : type === 'inet4' ? 'binary(4)' : type;
}

/** Evolves a table's version through one DDL effect. Pure. */
export function evolve(previous: SchemaVersion | undefined, change: TableChange, context: EvolveContext): EvolveResult {
  const live = previous && !previous.dropped ? previous : undefined;
  const nextNumber = (previous?.version ?? 0) + 1;
  try {
    switch (change.kind) {
      case 'create': {
        const next = fromDefinition(
          change.definition,
          { db: context.db, table: context.table, version: nextNumber, firstId: (previous?.lastColumnId ?? 0) + 1 },
          context,
        );
        return { path: 'create', next, changes: [] };
      }
      case 'create-like':
        if (!context.source || context.source.dropped)
          return { path: 'resnapshot', next: undefined, changes: [], reason: 'the LIKE source table is not known' };
        return { path: 'create', next: copyOf(context.source, previous, context), changes: [] };
      case 'create-select':
        return { path: 'resnapshot', next: undefined, changes: [], reason: 'created with rows the binlog does not carry' };
      case 'rename-in':
        // The source was renamed away by this same statement, so it is marked dropped: its structure is what moves.
        if (!context.source) return { path: 'resnapshot', next: undefined, changes: [], reason: 'renamed in from a table not known' };
        return { path: 'resnapshot', next: copyOf(context.source, previous, context), changes: [], reason: 'renamed in' };
      case 'drop':
      case 'rename-out':
        return { path: 'reset', next: previous ? { ...previous, dropped: true } : undefined, changes: [] };
      case 'truncate':
        return { path: 'reset', next: live, changes: [] };
      case 'noop':
        return { path: 'noop', next: live, changes: [] };
      case 'rows-changed':
        return { path: 'resnapshot', next: live, changes: [], reason: change.reason };
      case 'unknown':
        return { path: 'unknown', next: live, changes: [], reason: change.reason };
      case 'alter':
        if (!live) return { path: 'unknown', next: previous, changes: [], reason: 'ALTER of a table with no known version' };
        // ALTER IGNORE converts a NULL to the column's default even under a strict sql_mode (MariaDB's
        // copy sets abort_on_warning only without IGNORE): the NOT NULL rules must not count on a failure.
        return alterTable(live, change.ops, change.ignore ? { ...context, strictSqlMode: false } : context);
    }
  } catch (error) {
    if (error instanceof Impossible || error instanceof UnsupportedTypeError) return { path: 'unknown', next: live, changes: [], reason: error.message };
    throw error;
  }
}

/** An ALTER TABLE's working copy of the version, which its operations change in order. */
interface AlterWork {
  readonly context: EvolveContext;
  readonly cs: CharsetTable;
  readonly columns: SchemaColumn[];
  readonly indexes: SchemaIndex[];
  defaults: { charset?: string; collation?: string };
  lastColumnId: number;
  readonly changes: SchemaChange[];
  /** Why the table must be copied again, if it must. */
  readonly resnapshot: string[];
  structureKnown: boolean;
  /** ADD (true) or DROP (false) SYSTEM VERSIONING in this statement. */
  versioningChange?: boolean;
  readonly rowPeriod: { start?: string; end?: string };
  readonly periods: Period[];
}

type OpOf<K extends AlterOp['op']> = Extract<AlterOp, { op: K }>;

function alterTable(previous: SchemaVersion, ops: readonly AlterOp[], context: EvolveContext): EvolveResult {
  const w: AlterWork = {
    context,
    cs: context.charsets ?? CharsetTable.fallback,
    columns: [...previous.columns],
    indexes: previous.indexes.map((i) => ({ ...i, parts: [...i.parts] })),
    defaults: { charset: previous.charset, collation: previous.collation },
    lastColumnId: previous.lastColumnId,
    changes: [],
    resnapshot: [],
    structureKnown: true,
    rowPeriod: {},
    periods: [...(previous.periods ?? [])],
  };
  for (const op of ops) {
    if (op.op === 'unknown') return { path: 'unknown', next: previous, changes: [], reason: op.reason };
    alterOp(w, op);
  }
  return alterResult(previous, w);
}

const find = (w: AlterWork, name: string) => w.columns.findIndex((c) => sameName(c.name, name));

/** A period's columns become NOT NULL: a NULL becomes the type's zero value unless a strict sql_mode fails the statement. */
function notNull(w: AlterWork, name: string, why: string): void {
  const at = find(w, name);
  if (at < 0) throw new Impossible(`${why}: no column ${name}`);
  const column = w.columns[at] as SchemaColumn;
  if (!column.nullable) return;
  w.columns[at] = { ...column, nullable: false };
  if (w.context.strictSqlMode !== true) w.resnapshot.push(`${why} makes ${column.name} NOT NULL (NULLs become defaults)`);
}

function place(w: AlterWork, column: SchemaColumn, position: { first: true } | { after: string } | undefined): void {
  if (!position) w.columns.push(column);
  else if ('first' in position) w.columns.unshift(column);
  else {
    const at = find(w, position.after);
    if (at < 0) throw new Impossible(`AFTER ${position.after}: no such column`);
    w.columns.splice(at + 1, 0, column);
  }
}

function renameInIndexes(w: AlterWork, from: string, to: string): void {
  for (const [k, index] of w.indexes.entries())
    w.indexes[k] = { ...index, parts: index.parts.map((p) => (sameName(p.column, from) ? { ...p, column: to } : p)) };
}

/** One operation of the statement, applied to the working copy. */
function alterOp(w: AlterWork, op: Exclude<AlterOp, { op: 'unknown' }>): void {
  switch (op.op) {
    case 'add-column':
      addColumn(w, op);
      break;
    case 'drop-column':
      dropColumn(w, op);
      break;
    case 'modify-column':
      modifyColumn(w, op);
      break;
    case 'rename-column': {
      const at = find(w, op.from);
      if (at < 0) throw new Impossible(`RENAME COLUMN ${op.from}: no such column`);
      const old = w.columns[at] as SchemaColumn;
      if (!sameName(op.from, op.to) && find(w, op.to) >= 0) throw new Impossible(`column ${op.to} exists`);
      w.columns[at] = { ...old, name: op.to };
      renameInIndexes(w, old.name, op.to);
      if (old.name !== op.to) w.changes.push({ op: 'rename', id: old.id, from: old.name });
      break;
    }
    case 'column-default':
      if (find(w, op.name) < 0) throw new Impossible(`ALTER COLUMN ${op.name}: no such column`);
      break;
    case 'add-index': {
      if (op.ifNotExists && op.index.name !== undefined && w.indexes.some((i) => sameName(i.name, op.index.name as string))) break;
      const added = addIndex(w.indexes, serverIndex(op.index, w.periods, undefined));
      for (const part of added.parts) {
        const at = find(w, part.column);
        if (at < 0) throw new Impossible(`key column ${part.column} does not exist`);
        const column = w.columns[at] as SchemaColumn;
        if (added.kind === 'primary' && column.nullable) {
          w.columns[at] = { ...column, nullable: false };
          if (w.context.strictSqlMode !== true) w.resnapshot.push(`PRIMARY KEY makes ${column.name} NOT NULL (NULLs become defaults)`);
        }
      }
      break;
    }
    case 'drop-primary-key': {
      const at = w.indexes.findIndex((i) => i.kind === 'primary');
      if (at < 0) throw new Impossible('DROP PRIMARY KEY without one');
      w.indexes.splice(at, 1);
      break;
    }
    case 'drop-index': {
      const at = w.indexes.findIndex((i) => sameName(i.name, op.name));
      if (at >= 0) w.indexes.splice(at, 1);
      else if (!op.ifExists) throw new Impossible(`DROP INDEX ${op.name}: not a known index`);
      break;
    }
    case 'rename-index': {
      const at = w.indexes.findIndex((i) => sameName(i.name, op.from));
      if (at < 0) throw new Impossible(`RENAME INDEX ${op.from}: not a known index`);
      w.indexes[at] = { ...(w.indexes[at] as SchemaIndex), name: op.to };
      break;
    }
    case 'table-charset':
      if (op.charsetDefault) w.defaults = tableDefaults({ charsetDefault: true }, w.context.databaseCollation, w.cs);
      else if (op.collationDefault) w.defaults = tableDefaults({ charset: w.defaults.charset, collationDefault: true }, undefined, w.cs);
      else w.defaults = tableDefaults({ charset: op.charset ?? (op.collation ? undefined : w.defaults.charset), collation: op.collation }, undefined, w.cs);
      break;
    case 'system-versioning':
      w.versioningChange = op.add;
      break;
    case 'period': {
      const { period } = op;
      if (!op.add) {
        const at = w.periods.findIndex((p) => sameName(p.name, period.name));
        if (at >= 0) w.periods.splice(at, 1);
        else if (period.name !== 'SYSTEM_TIME') throw new Impossible(`DROP PERIOD FOR ${period.name}: not a known period`);
        break;
      }
      if (!('start' in period)) throw new Impossible('ADD PERIOD without its columns');
      if (period.name === 'SYSTEM_TIME') break; // its columns are the ROW START/END ones added with it
      if (w.periods.some((p) => sameName(p.name, period.name))) throw new Impossible(`period ${period.name} exists`);
      notNull(w, period.start, `PERIOD FOR ${period.name}`);
      notNull(w, period.end, `PERIOD FOR ${period.name}`);
      w.periods.push(period);
      break;
    }
    case 'rows-changed':
      w.resnapshot.push(op.reason);
      if (!op.structureKept) w.structureKnown = false;
      break;
    case 'noop':
      break;
  }
}

function addColumn(w: AlterWork, op: OpOf<'add-column'>): void {
  if (find(w, op.column.name) >= 0) {
    if (op.ifNotExists) return;
    throw new Impossible(`column ${op.column.name} exists`);
  }
  const column = columnOf(
    op.column,
    ++w.lastColumnId,
    w.defaults,
    op.column.rowPeriod !== undefined || (op.column.type.base === 'timestamp' && !timestampNullable(op.column, w.context)),
    w.cs,
  );
  if (op.column.rowPeriod) w.rowPeriod[op.column.rowPeriod] = column.name;
  place(w, column, op.position);
  if (op.column.primaryKey) addIndex(w.indexes, { name: 'PRIMARY', kind: 'primary', parts: [{ column: column.name }] });
  if (op.column.unique) addIndex(w.indexes, { name: undefined, kind: 'unique', parts: [{ column: column.name }] });
  const fill = addColumnFill(op.column, column, column.nullable, w.context);
  if (fill.derivable) w.changes.push({ op: 'add', id: column.id, fill: fill.json });
  else w.resnapshot.push(`ADD COLUMN ${column.name}: ${fill.reason}`);
}

function dropColumn(w: AlterWork, op: OpOf<'drop-column'>): void {
  const at = find(w, op.name);
  if (at < 0) {
    if (op.ifExists) return;
    throw new Impossible(`DROP COLUMN ${op.name}: no such column`);
  }
  const column = w.columns[at] as SchemaColumn;
  for (let k = w.indexes.length - 1; k >= 0; k--) {
    const index = w.indexes[k] as SchemaIndex;
    if (!index.parts.some((p) => sameName(p.column, column.name))) continue;
    if (index.kind !== 'index' && index.parts.length > 1) throw new Impossible(`DROP COLUMN ${column.name} of a multi-column unique key`);
    const left = index.parts.filter((p) => !sameName(p.column, column.name));
    if (left.length) w.indexes[k] = { ...index, parts: left };
    else w.indexes.splice(k, 1);
  }
  w.columns.splice(at, 1);
  if (!w.columns.length) throw new Impossible('dropping the last column');
  w.changes.push({ op: 'drop', id: column.id, name: column.name });
}

function modifyColumn(w: AlterWork, op: OpOf<'modify-column'>): void {
  const at = find(w, op.from);
  if (at < 0) {
    if (op.ifExists) return;
    throw new Impossible(`${op.from}: no such column`);
  }
  const old = w.columns[at] as SchemaColumn;
  if (!sameName(old.name, op.column.name) && find(w, op.column.name) >= 0) throw new Impossible(`column ${op.column.name} exists`);
  const inPrimary = w.indexes.some((i) => i.kind === 'primary' && i.parts.some((p) => sameName(p.column, old.name)));
  const next = columnOf(op.column, old.id, w.defaults, inPrimary || (op.column.type.base === 'timestamp' && !timestampNullable(op.column, w.context)), w.cs);
  w.columns.splice(at, 1);
  place(w, next, op.position ?? (at === 0 ? { first: true } : { after: (w.columns[at - 1] as SchemaColumn).name }));
  if (op.column.generated) w.resnapshot.push(`${next.name} becomes a generated column`);
  if (next.autoIncrement && !old.autoIncrement) w.resnapshot.push(`${next.name} becomes AUTO_INCREMENT`);
  if (op.column.primaryKey) addIndex(w.indexes, { name: 'PRIMARY', kind: 'primary', parts: [{ column: next.name }] });
  if (op.column.unique) addIndex(w.indexes, { name: undefined, kind: 'unique', parts: [{ column: next.name }] });
  if (old.name !== next.name) {
    renameInIndexes(w, old.name, next.name);
    w.changes.push({ op: 'rename', id: old.id, from: old.name });
  }
  if (old.nullable === false && next.nullable === true && old.type === next.type) w.changes.push({ op: 'widen', id: old.id, from: old.type });
  else if (old.nullable && !next.nullable && w.context.strictSqlMode !== true) w.resnapshot.push(`${next.name} becomes NOT NULL (NULLs become defaults)`);
  else if (old.type !== next.type || old.charset !== next.charset || old.collation !== next.collation) {
    if (isWidening(old, next, w.cs)) w.changes.push({ op: 'widen', id: old.id, from: old.type });
    else w.resnapshot.push(`${old.name} ${old.type} → ${next.type}${next.charset !== old.charset ? ` (${old.charset} → ${next.charset})` : ''} changes values`);
  }
}

/** The version the statement leaves, and whether its changes derive from the previous one or need a copy. */
function alterResult(previous: SchemaVersion, w: AlterWork): EvolveResult {
  const { columns, indexes, defaults, lastColumnId, changes, resnapshot, structureKnown, versioningChange, rowPeriod, periods, cs } = w;
  let versioning = previous.versioning;
  if (versioningChange === true) {
    if (versioning) throw new Impossible('ADD SYSTEM VERSIONING of a system-versioned table');
    if (!rowPeriod.start !== !rowPeriod.end) throw new Impossible('a ROW START column without ROW END, or the reverse');
    versioning = rowPeriod.start && rowPeriod.end ? { start: rowPeriod.start, end: rowPeriod.end, hidden: false } : HIDDEN_VERSIONING;
  } else if (versioningChange === false) {
    if (!versioning) throw new Impossible('DROP SYSTEM VERSIONING of a table without it');
    if (!versioning.hidden && (find(w, versioning.start) >= 0 || find(w, versioning.end) >= 0))
      throw new Impossible('DROP SYSTEM VERSIONING keeping its period columns');
    versioning = undefined;
  } else if (rowPeriod.start || rowPeriod.end) throw new Impossible('ROW START/END columns without ADD SYSTEM VERSIONING');
  // MariaDB appends a declared row end to every unique key; among current rows it is one constant.
  if (versioning && !versioning.hidden) {
    const end = versioning.end;
    for (const [k, index] of indexes.entries()) indexes[k] = { ...index, parts: index.parts.filter((p) => !sameName(p.column, end)) };
  }
  const key = identityKey(columns, indexes, cs);
  if (!sameKey(key, previous.key)) changes.push({ op: 'key', from: previous.key });
  const structural = changes.length > 0 || JSON.stringify(columns) !== JSON.stringify(previous.columns);
  const { versioning: _versioning, periods: _periods, ...kept } = previous;
  const next: SchemaVersion = {
    ...kept,
    version: structural ? previous.version + 1 : previous.version,
    columns,
    key,
    lastColumnId,
    changes: structural ? changes : previous.changes,
    indexes,
    ...(defaults.charset ? { charset: defaults.charset } : {}),
    ...(defaults.collation ? { collation: defaults.collation } : {}),
    ...(versioning ? { versioning } : {}),
    ...(periods.length ? { periods } : {}),
  };
  if (resnapshot.length) {
    if (!structureKnown) return { path: 'resnapshot', next: undefined, changes: [], reason: resnapshot.join('; ') };
    return { path: 'resnapshot', next: { ...next, version: previous.version + 1, changes: [] }, changes: [], reason: resnapshot.join('; ') };
  }
  return structural ? { path: 'derive', next, changes } : { path: 'noop', next, changes: [] };
}

// ---------------------------------------------------------------------------------------------
// Versions read from the server (initial start, snapshots, safety net)

export interface InformationSchemaIndexRow {
  INDEX_NAME: string;
  NON_UNIQUE: number | string;
  SEQ_IN_INDEX: number | string;
  COLUMN_NAME: string;
  SUB_PART: number | string | null;
  INDEX_TYPE: string;
}

/**
 * A version from information_schema: COLUMNS rows (ORDINAL_POSITION order, with EXTRA and
 * GENERATION_EXPRESSION), STATISTICS rows, the table's default collation (TABLES.TABLE_COLLATION)
 * and whether it is system-versioned (TABLES.TABLE_TYPE `SYSTEM VERSIONED`). Declared period
 * columns show as GENERATION_EXPRESSION `ROW START`/`ROW END`; hidden ones are not listed at all.
 */
export function versionFromInformationSchema(
  at: { db: string; table: string; version: number; firstId?: number },
  rows: readonly (InformationSchemaColumn & { EXTRA?: string; GENERATION_EXPRESSION?: string | null })[],
  statistics: readonly InformationSchemaIndexRow[],
  tableCollation: string | null,
  systemVersioned = false,
): SchemaVersion {
  const periodColumn = (which: string) => rows.find((r) => r.GENERATION_EXPRESSION?.toUpperCase() === which)?.COLUMN_NAME;
  const [start, end] = [periodColumn('ROW START'), periodColumn('ROW END')];
  const versioning: Versioning | undefined = !systemVersioned ? undefined : start && end ? { start, end, hidden: false } : HIDDEN_VERSIONING;
  const firstId = at.firstId ?? 1;
  const columns: SchemaColumn[] = rows.map((row, i) => ({
    id: firstId + i,
    name: row.COLUMN_NAME,
    ...normalizeType(informationSchemaType(row)),
    nullable: row.IS_NULLABLE === 'YES',
    ...(/\bauto_increment\b/i.test(row.EXTRA ?? '') ? { autoIncrement: true } : {}),
  }));
  const byName = new Map<string, { kind: SchemaIndex['kind']; parts: { seq: number; part: KeyPart }[]; hash: boolean }>();
  for (const s of statistics) {
    const entry = byName.get(s.INDEX_NAME) ?? {
      kind: s.INDEX_NAME === 'PRIMARY' ? 'primary' : Number(s.NON_UNIQUE) === 0 ? 'unique' : 'index',
      parts: [],
      hash: s.INDEX_TYPE === 'HASH',
    };
    const prefix = s.SUB_PART === null ? undefined : Number(s.SUB_PART);
    entry.parts.push({ seq: Number(s.SEQ_IN_INDEX), part: prefix === undefined ? { column: s.COLUMN_NAME } : { column: s.COLUMN_NAME, prefix } });
    byName.set(s.INDEX_NAME, entry);
  }
  const indexes: SchemaIndex[] = [...byName].map(([name, e]) => ({
    name,
    kind: e.kind,
    // A declared row end, which MariaDB appends to unique keys, identifies nothing among current rows.
    parts: e.parts
      .sort((a, b) => a.seq - b.seq)
      .map((p) => p.part)
      .filter((p) => !(versioning && !versioning.hidden && sameName(p.column, versioning.end))),
    ...(e.hash && e.kind !== 'index' ? { hash: true } : {}),
  }));
  // STATISTICS lists indexes in the server's order: PRIMARY first, unique NOT NULL keys next.
  const info = tableCollation ? CharsetTable.fallback.collationInfo(tableCollation) : undefined;
  return {
    db: at.db,
    table: at.table,
    version: at.version,
    columns,
    key: identityKey(columns, indexes),
    lastColumnId: firstId + columns.length - 1,
    changes: [],
    indexes,
    ...(info ? { charset: info.charset, collation: info.collation } : {}),
    ...(versioning ? { versioning } : {}),
  };
}

/**
 * MariaDB adds a hidden column `DB_ROW_HASH_<n>` per long unique key (a UNIQUE key too long for a
 * B-tree, `USING HASH`). It is not in information_schema or `SELECT *`, but it IS in the binlog's
 * TABLE_MAP and row images: the capture path must drop it from row images.
 */
export function isHiddenHashColumn(name: string): boolean {
  return /^DB_ROW_HASH_\d+$/.test(name);
}

/**
 * A TABLE_MAP of a system-versioned table as its current rows are captured: without hidden period
 * columns, and without the row end in the key (MariaDB keys every row version by it; current rows
 * all hold the same, the end of time). Tables without versioning come back as they are.
 */
export function currentRowsMap<M extends { readonly columns: readonly TableMapColumn[]; readonly key: readonly number[] | null }>(
  map: M,
  versioning: Versioning | undefined,
): M {
  if (!versioning) return map;
  const kept = map.columns
    .map((_, i) => i)
    .filter((i) => !(versioning.hidden && [versioning.start, versioning.end].includes((map.columns[i] as TableMapColumn).name)));
  const endAt = map.columns.findIndex((c) => c.name === versioning.end);
  const key = map.key?.filter((i) => i !== endAt).map((i) => kept.indexOf(i)) ?? null;
  return { ...map, columns: kept.map((i) => map.columns[i] as TableMapColumn), key: key?.length ? key : null };
}

/** What a TABLE_MAP event shows of a table (no nullability, no collation), comparable with `structureOf`. */
export function structureFromTableMap(columns: readonly TableMapColumn[], primaryKey: readonly number[] | null | undefined): string {
  const all = columns.map((c) => ({ name: c.name, ...normalizeType(tableMapType(c)) }));
  const key = primaryKey?.length ? primaryKey.map((i) => all[i]?.name as string) : null;
  const normalized = all.filter((c) => !isHiddenHashColumn(c.name));
  return JSON.stringify({ columns: normalized.map((c) => [c.name, c.type, c.kind === 'string' ? (c.charset ?? null) : null]), key });
}
