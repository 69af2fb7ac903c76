import { formatTableRef } from '../core/table-ref.ts';
import { MaterializeError } from '../errors.ts';
import type { SchemaColumn } from '../schema/version.ts';
import type { TableHistory } from './history.ts';

/*
 * Projection of a row image written under schema version v to version N (docs: format-v2 §4):
 * for every column of N, by column id, the value of the same id in v (renamed columns by id),
 * re-rendered in N's type for a widening; columns of N that v lacks take the `fill` of the
 * version that added them; columns of v that N lacks are dropped.
 *
 * The projected row is the text a snapshot of the table at version N writes for the same row
 * (lib/format/types.ts), byte for byte: values are cut out of the row image as written and only
 * the widenings that change a value's text re-render it (DECIMAL scale and DATETIME/TIMESTAMP/
 * TIME fraction digits grow by appending zeros, as the server stores them); integer, text,
 * ENUM/SET, BIT and binary widenings keep the text. Nothing is parsed into numbers and printed
 * again (DuckDB's JSON functions would print `3.4028235e+38` as `3.4028235e38` and `-0` as `0`).
 *
 * Cutting a value out of a row image is exact because sluice writes row images as flat objects of
 * scalar values, each name as JSON.stringify writes it: inside a JSON string every `"` is escaped,
 * so `{"` and `,"` occur only where a member starts, and a value ends at the next `,"` or at the
 * closing `}`.
 */

/** Where one column of the target version takes its value from. */
export type ColumnSource =
  /** The same column id in the source version; `insert` re-renders the value (digits appended), '' keeps it. */
  | { readonly kind: 'column'; readonly from: SchemaColumn; readonly insert: string }
  /** A column added after the source version: its fill, rendered in the target's type (JSON text). */
  | { readonly kind: 'fill'; readonly json: string };

export interface Projection {
  readonly from: number;
  readonly to: number;
  /** The source version's columns, in the order its row images hold them. */
  readonly source: readonly SchemaColumn[];
  /** How SQL reads the source's row images: by position (versioned output), or by name (format-v1 rows, which may lack columns). */
  readonly layout: 'position' | 'name';
  readonly columns: readonly { readonly to: SchemaColumn; readonly source: ColumnSource }[];
  /** Rows of `from` are already rows of `to` (same names, order and texts). */
  readonly identity: boolean;
}

const DECIMAL_SCALE = /^decimal\(\d+,(\d+)\)/;

/**
 * The digits a value of `from` gains as a value of `to`: DECIMAL scale and temporal fraction
 * digits only grow by a widening (`.` first when there were none). '' when the text is unchanged.
 */
export function widenInsert(from: Pick<SchemaColumn, 'type' | 'kind' | 'fsp'>, to: Pick<SchemaColumn, 'type' | 'kind' | 'fsp'>): string {
  if (from.type === to.type) return '';
  let had = 0;
  let has = 0;
  if (from.kind === 'decimal' && to.kind === 'decimal') {
    had = Number(DECIMAL_SCALE.exec(from.type)?.[1] ?? 0);
    has = Number(DECIMAL_SCALE.exec(to.type)?.[1] ?? 0);
  } else if (from.kind === to.kind && (to.kind === 'datetime' || to.kind === 'timestamp' || to.kind === 'time')) {
    had = from.fsp ?? 0;
    has = to.fsp ?? 0;
  }
  if (has < had) throw new MaterializeError(`${from.type} → ${to.type} is not a widening the rule can apply`);
  return has === had ? '' : `${had === 0 ? '.' : ''}${'0'.repeat(has - had)}`;
}

/** A value's JSON text re-rendered with `insert` (see widenInsert): before the closing `"`, or before `Z"` of a TIMESTAMP. */
export function rerender(json: string, kind: SchemaColumn['kind'], insert: string): string {
  if (!insert || json === 'null') return json;
  if (kind === 'timestamp' && json.endsWith('Z"')) return `${json.slice(0, -2)}${insert}Z"`;
  return `${json.slice(0, -1)}${insert}"`;
}

/** How rows of version `from` read as rows of version `to`. */
export function projection(history: TableHistory, from: number, to: number): Projection {
  const source = history.version(from);
  const target = history.version(to);
  const columns = target.columns.map((column) => {
    const same = source.columns.find((c) => c.id === column.id);
    if (same) return { to: column, source: { kind: 'column' as const, from: same, insert: widenInsert(same, column) } };
    return { to: column, source: { kind: 'fill' as const, json: fillOf(history, column, from, to) } };
  });
  const identity =
    columns.length === source.columns.length &&
    columns.every((c, i) => c.source.kind === 'column' && c.source.from.id === source.columns[i]?.id && c.source.from.name === c.to.name && !c.source.insert);
  return { from, to, source: source.columns, layout: history.versioned ? 'position' : 'name', columns, identity };
}

/** The fill of a column added after `from`, from the version that added it, in `to`'s type. */
function fillOf(history: TableHistory, column: SchemaColumn, from: number, to: number): string {
  const name = formatTableRef(history.table);
  for (let n = from + 1; n <= to; n++) {
    const version = history.version(n);
    const add = version.changes.find((c) => c.op === 'add' && c.id === column.id);
    if (add?.op !== 'add') continue;
    const added = version.columns.find((c) => c.id === column.id);
    if (!added) throw new MaterializeError(`${name} version ${n} adds column id ${column.id} but does not list it`);
    return rerender(add.fill, column.kind, widenInsert(added, column));
  }
  throw new MaterializeError(
    `${name}: rows of version ${from} are read in version ${to}, but no version between adds column ${column.name} (id ${column.id}) with a fill`,
  );
}

// ---------------------------------------------------------------------------------------------
// The same, as DuckDB SQL over the row image's text

/** A SQL string literal. */
export const sqlString = (text: string) => `'${text.replaceAll("'", "''")}'`;

/*
 * Reading a row image in SQL. A versioned row image holds exactly its version's columns in order
 * (`{"a":1,"b":"x"}`), and `,"` occurs only between members, so `string_split(image, ',"')` — the
 * caller binds it as `p` — cuts it into members: value i is p[i] after its name (the first keeps
 * `{`, the last ends with `}`). One split per row, then each value is a substring; a layout check
 * (member count and names) turns any image that is not laid out so into NULL, which the rule
 * reports. Format-v1 rows may lack columns added after them, so they are read by name instead (a
 * regular expression per value: exact, but several times slower).
 */

/** The SQL that binds the parts of row image `row` as `p`. */
export const partsSql = (row: string) => `string_split(${row}, ',"') AS p`;

/** A member's text up to its value: `{"name":` for the first, `name":` after a split at `,"`. */
const memberPrefix = (name: string, first: boolean) => (first ? `{${JSON.stringify(name)}:` : `${JSON.stringify(name).slice(1)}:`);

/** Characters DuckDB counts (code points). */
const chars = (text: string) => [...text].length;

/** The JSON text of column `name` of a row image with `columns`, from its parts `p`. */
function positionValue(columns: readonly SchemaColumn[], name: string): string {
  const i = columns.findIndex((c) => c.name === name);
  const n = chars(memberPrefix(name, i === 0));
  const part = `p[${i + 1}]`;
  return i === columns.length - 1 ? `substr(${part}, ${n + 1}, length(${part}) - ${n + 1})` : `substr(${part}, ${n + 1})`;
}

/** True when parts `p` are a row image laid out as `columns`. */
function layoutSql(columns: readonly SchemaColumn[]): string {
  const names = columns.map((c, i) => `starts_with(p[${i + 1}], ${sqlString(memberPrefix(c.name, i === 0))})`);
  return `len(p) = ${columns.length} AND ${names.join(' AND ')} AND suffix(p[${columns.length}], '}')`;
}

/** A column name as the row image writes it (`"name"`), escaped for RE2. */
const namePattern = (name: string) => JSON.stringify(name).replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');

/** The JSON text of member `name` of the row image `row` (SQL) found by name, NULL when the image has no such member. */
export function valueSql(row: string, name: string): string {
  return `nullif(regexp_extract(${row}, ${sqlString(`[{,]${namePattern(name)}:(.*?)(?:,"|\\}$)`)}, 1), '')`;
}

/** `v` (SQL, a JSON text) re-rendered with `insert` (rare: only widened columns pay the repeated extraction). */
function rerenderSql(v: string, kind: SchemaColumn['kind'], insert: string): string {
  if (!insert) return v;
  const plain = `substr(${v}, 1, length(${v}) - 1) || ${sqlString(`${insert}"`)}`;
  if (kind === 'timestamp')
    return `CASE WHEN ${v} = 'null' THEN ${v} WHEN suffix(${v}, 'Z"') THEN substr(${v}, 1, length(${v}) - 2) || ${sqlString(`${insert}Z"`)} ELSE ${plain} END`;
  return `CASE WHEN ${v} = 'null' THEN ${v} ELSE ${plain} END`;
}

/** The SQL of one target column's value from a row image (`row`, parts `p`) of the projection's source version. */
function columnSql(row: string, p: Projection, source: ColumnSource, kind: SchemaColumn['kind']): string {
  if (source.kind === 'fill') return sqlString(source.json);
  const value = p.layout === 'position' ? positionValue(p.source, source.from.name) : valueSql(row, source.from.name);
  return rerenderSql(value, kind, source.insert);
}

/** `sql` where the image's layout is as expected, else NULL (reported by the rule). */
const checked = (p: Projection, sql: string) => (p.layout === 'position' ? `CASE WHEN ${layoutSql(p.source)} THEN ${sql} END` : sql);

/** The row image `row` (SQL; its parts bound as `p`, see partsSql) of the projection's source version, as the target version's row text. */
export function projectSql(row: string, p: Projection): string {
  if (p.identity) return row;
  const parts = p.columns.map((c, i) => `${sqlString(`${i ? ',' : '{'}${JSON.stringify(c.to.name)}:`)} || ${columnSql(row, p, c.source, c.to.kind)}`);
  return checked(p, `${parts.join(' || ')} || '}'`);
}

/** The identity of the row image `row` (parts `p`): the key columns of the target version, as `{"k":v,…}` in key order. */
export function keySql(row: string, p: Projection, key: readonly string[]): string {
  const parts = key.map((name, i) => {
    const column = p.columns.find((c) => c.to.name === name);
    if (!column) throw new MaterializeError(`version ${p.to}: key column ${name} is not a column`);
    return `${sqlString(`${i ? ',' : '{'}${JSON.stringify(name)}:`)} || ${columnSql(row, p, column.source, column.to.kind)}`;
  });
  return checked(p, `${parts.join(' || ')} || '}'`);
}
