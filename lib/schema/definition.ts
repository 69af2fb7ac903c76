import type { TableRef } from '../core/table-ref.ts';
import type { TypeDescriptor } from './column-type.ts';

/**
 * What a DDL statement says about a table, independent of the parser that read it. The DDL
 * classifier produces these; `evolve` turns them into schema versions.
 */

/** A DEFAULT as written. Only `literal` and `null` can ever give existing rows a known value. */
export type DefaultValue =
  | { readonly kind: 'none' }
  | { readonly kind: 'null' }
  | { readonly kind: 'literal'; readonly literal: Literal }
  /** Anything else: an expression, CURRENT_TIMESTAMP, a function, a column reference. */
  | { readonly kind: 'expression' };

export type Literal =
  /** `escaped`: the statement holds a backslash escape somewhere, so the value depends on sql_mode. */
  | { readonly kind: 'string'; readonly value: string; readonly escaped: boolean }
  /** Decimal text with its sign: `-5`, `1.50`, `1e3`. */
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'hex'; readonly digits: string }
  | { readonly kind: 'bits'; readonly digits: string }
  | { readonly kind: 'boolean'; readonly value: boolean };

export interface ColumnDefinition {
  readonly name: string;
  /** Charset/collation only when the statement names them; the table's default applies otherwise. */
  readonly type: TypeDescriptor;
  /** NULL / NOT NULL as written; undefined when the statement says neither. */
  readonly nullable: boolean | undefined;
  readonly default: DefaultValue;
  readonly autoIncrement: boolean;
  /** VIRTUAL/STORED/PERSISTENT generated column. */
  readonly generated: boolean;
  readonly invisible: boolean;
  /** Column-level PRIMARY KEY / UNIQUE (SERIAL implies UNIQUE). */
  readonly primaryKey: boolean;
  readonly unique: boolean;
  /**
   * Collations named by rule rather than by name, resolved against the column's charset when the
   * version is built: `binary` (the `BINARY` attribute, `CHAR(3) BINARY`, `ASCII BINARY`: the
   * charset's `_bin` collation) and `default` (`COLLATE DEFAULT`: the charset's default collation).
   */
  readonly collationRule?: 'binary' | 'default';
  /** `GENERATED ALWAYS AS ROW START|END`: the column holds a system-versioned table's row period. */
  readonly rowPeriod?: 'start' | 'end';
  /** `WITH SYSTEM VERSIONING` (true: makes the table system-versioned) or `WITHOUT SYSTEM VERSIONING` (false) on the column. */
  readonly systemVersioning?: boolean;
}

/** A table's system versioning as a statement declares it (docs/FORMAT.md, "System-versioned tables"). */
export interface Versioning {
  /** The row period's columns: declared ones (`GENERATED ALWAYS AS ROW START/END`), else MariaDB's hidden `row_start`/`row_end`. */
  readonly start: string;
  readonly end: string;
  /** The period columns are hidden: not in information_schema nor `SELECT *`, but in every binlog row image. */
  readonly hidden: boolean;
}

export interface KeyPart {
  readonly column: string;
  /** Prefix length `col(10)`. */
  readonly prefix?: number;
  /** `p WITHOUT OVERLAPS`: `column` names an application-time period (a statement's key part only; versions hold its columns). */
  readonly period?: true;
}

export interface IndexDefinition {
  /** Undefined when the statement gives none (the server names it after its first column). */
  readonly name: string | undefined;
  readonly kind: 'primary' | 'unique' | 'index';
  readonly parts: readonly KeyPart[];
  /** `USING HASH` on a unique key (a long unique): never a candidate for the row identity. */
  readonly hash?: boolean;
}

export interface TableDefinition {
  /** In statement order; column-level keys are listed in `items` where they appear. */
  readonly items: readonly ({ readonly column: ColumnDefinition } | { readonly index: IndexDefinition })[];
  /** `DEFAULT CHARSET=` / `COLLATE=` of the table, when written. */
  readonly charset?: string;
  readonly collation?: string;
  /** `CHARACTER SET DEFAULT`: the database's charset, with that charset's default collation. */
  readonly charsetDefault?: boolean;
  /** `COLLATE DEFAULT`: the table charset's default collation. */
  readonly collationDefault?: boolean;
  /** `WITH SYSTEM VERSIONING` (the table option; a column's `WITH SYSTEM VERSIONING` has the same effect). */
  readonly systemVersioning?: boolean;
  /** `PERIOD FOR SYSTEM_TIME (s, e)` and application-time `PERIOD FOR p (a, b)`: a period's columns are NOT NULL. */
  readonly periods?: readonly Period[];
}

/** A period: its name (`SYSTEM_TIME` for system versioning) and its two columns. */
export interface Period {
  readonly name: string;
  readonly start: string;
  readonly end: string;
}

export type ColumnPosition = { readonly first: true } | { readonly after: string };

/** One ALTER TABLE specification, as the classifier read it. */
export type AlterOp =
  | { readonly op: 'add-column'; readonly column: ColumnDefinition; readonly position?: ColumnPosition; readonly ifNotExists: boolean }
  | { readonly op: 'drop-column'; readonly name: string; readonly ifExists: boolean }
  /** MODIFY (`from` = the column's own name) and CHANGE (`from` = the old name). */
  | { readonly op: 'modify-column'; readonly from: string; readonly column: ColumnDefinition; readonly position?: ColumnPosition; readonly ifExists: boolean }
  | { readonly op: 'rename-column'; readonly from: string; readonly to: string }
  /** ALTER COLUMN … SET/DROP DEFAULT: future inserts only; existing rows keep their values. */
  | { readonly op: 'column-default'; readonly name: string }
  | { readonly op: 'add-index'; readonly index: IndexDefinition; readonly ifNotExists: boolean }
  | { readonly op: 'drop-primary-key' }
  | { readonly op: 'drop-index'; readonly name: string; readonly ifExists: boolean }
  | { readonly op: 'rename-index'; readonly from: string; readonly to: string }
  /**
   * `[DEFAULT] CHARACTER SET … [COLLATE …]` without CONVERT: the default for new columns. `DEFAULT`
   * as the charset is the database's (`charsetDefault`), as the collation the charset's own (`collationDefault`).
   */
  | {
      readonly op: 'table-charset';
      readonly charset?: string;
      readonly collation?: string;
      readonly charsetDefault?: boolean;
      readonly collationDefault?: boolean;
    }
  /** `ADD SYSTEM VERSIONING` (with the period's columns when the statement adds them) and `DROP SYSTEM VERSIONING`. */
  | { readonly op: 'system-versioning'; readonly add: boolean }
  /** `ADD PERIOD FOR [SYSTEM_TIME|p] (a, b)` / `DROP PERIOD FOR …`: an added period's columns become NOT NULL. */
  | { readonly op: 'period'; readonly add: boolean; readonly period: Period | { readonly name: string } }
  /** Existing rows change without row events (CONVERT TO, DROP/TRUNCATE PARTITION…). */
  | { readonly op: 'rows-changed'; readonly reason: string; readonly structureKept: boolean }
  /** Options that change neither rows nor columns (ENGINE, COMMENT, ALGORITHM, FORCE…). */
  | { readonly op: 'noop'; readonly what: string }
  | { readonly op: 'unknown'; readonly reason: string };

/** A table, by its raw (unescaped) names (lib/core/table-ref.ts). */
export type { TableRef };

/** What a statement does to one table. */
export type TableChange =
  /** A new table with this definition (also the server-written CREATE of a ROW-format CREATE … SELECT). */
  | { readonly kind: 'create'; readonly definition: TableDefinition; readonly orReplace: boolean; readonly ifNotExists: boolean }
  /** CREATE TABLE … LIKE `source`: a copy of the source's structure, empty. */
  | { readonly kind: 'create-like'; readonly source: TableRef; readonly orReplace: boolean; readonly ifNotExists: boolean }
  /** A new table holding rows the binlog does not carry (CREATE … SELECT as a statement, CONVERT PARTITION … TO TABLE). */
  | { readonly kind: 'create-select'; readonly orReplace: boolean }
  | { readonly kind: 'drop' }
  | { readonly kind: 'truncate' }
  /** Renamed away (to `to`, which may be outside the captured set). */
  | { readonly kind: 'rename-out'; readonly to: TableRef }
  /** Appears under this name by a rename of `from`. */
  | { readonly kind: 'rename-in'; readonly from: TableRef }
  /** `ignore`: ALTER IGNORE, which turns a NULL into the default where a strict sql_mode would fail the statement. */
  | { readonly kind: 'alter'; readonly ops: readonly AlterOp[]; readonly ignore?: boolean }
  /** Rows changed without row events and nothing else (the other table of EXCHANGE PARTITION). */
  | { readonly kind: 'rows-changed'; readonly reason: string }
  /** Neither rows nor structure change (OPTIMIZE, ANALYZE, REPAIR). */
  | { readonly kind: 'noop'; readonly reason: string }
  | { readonly kind: 'unknown'; readonly reason: string };

export interface TableEffect {
  readonly table: TableRef;
  readonly change: TableChange;
}
