import type { BinlogPosition } from '../core/position.ts';
import { type Column, valueEncoder } from './types.ts';

/**
 * One change event a line (format v2, docs/FORMAT.md):
 * {"op","db","table","key","before","after","source","seq","schema"}. Lines are built as text so
 * values keep their exact encoding; column-name prefixes are escaped once per table shape.
 */
export type Op = 'c' | 'u' | 'd' | 'r';

/** Control events: `t` resets the table (every earlier row is gone), `s` changes its schema and keeps its rows. */
export type MarkerOp = 't' | 's';

export interface TableShape {
  readonly db: string;
  readonly table: string;
  readonly columns: readonly Column[];
  /** Indexes of the primary-key columns, or null for a table without one. */
  readonly key: readonly number[] | null;
}

export interface EncodedShape extends TableShape {
  /** `"db":"…","table":"…"` */
  readonly header: string;
  /** `"name":` per column */
  readonly names: readonly string[];
  /** The table's schema version the rows are written under (the `schema` field); absent for format v1 writers. */
  readonly schema?: number;
  /** This shape's row and key encoders (see `compileEncoders`). */
  readonly encoders: RowEncoders;
}

export type Row = Record<string, unknown>;

/** Names mysql2 refuses as result fields; a row object's `__proto__` would even set its prototype (the binlog reader assigns rows by name). */
const OBJECT_ACCESSORS = new Set(['__proto__', '__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__']);

/**
 * The property a column's value has in a row object: its name, except for the names of
 * Object.prototype's accessors, which are read as `<name>\u0001` (the snapshot's SELECT aliases
 * them so, the binlog reader renames the TABLE_MAP's column descriptors so). A table that also has a column
 * named exactly that cannot be told apart from it; U+0001 in a name is not worth a second scheme.
 */
export const rowProperty = (name: string): string => (OBJECT_ACCESSORS.has(name) ? `${name}\u0001` : name);

interface RowEncoders {
  /** The row as a JSON object of every column. */
  readonly row: (row: Row) => string;
  /** The key columns as a JSON object; `null` for a table without a key. */
  readonly key: (row: Row) => string;
}

/**
 * A shape's encoders, made once per shape: one function per shape reading each column by its
 * literal name, so the engine sees one row layout at each property read (the rows a driver hands
 * over for a table share one), where a loop over names would read every column from one site. Names
 * and prefixes enter the generated source only as JSON string literals; values go through each
 * column's `valueEncoder`.
 */
function compileEncoders(shape: TableShape, names: readonly string[]): RowEncoders {
  const encoders = shape.columns.map((c) => valueEncoder(c.kind, c.fsp));
  const part = (index: number, first: boolean) =>
    `${JSON.stringify((first ? '{' : ',') + names[index])} + e${index}(r[${JSON.stringify(rowProperty((shape.columns[index] as Column).name))}])`;
  const object = (indexes: readonly number[]) => (indexes.length ? `${indexes.map((index, i) => part(index, i === 0)).join(' + ')} + '}'` : "'{}'");
  const row = object(shape.columns.map((_, i) => i));
  const key = shape.key ? object(shape.key) : "'null'";
  const make = new Function(...encoders.map((_, i) => `e${i}`), `return { row: (r) => ${row}, key: (r) => ${key} };`);
  return make(...encoders) as RowEncoders;
}

export function encodeShape(shape: TableShape & { readonly schema?: number }): EncodedShape {
  const names = shape.columns.map((c) => `${JSON.stringify(c.name)}:`);
  return {
    ...shape,
    header: `"db":${JSON.stringify(shape.db)},"table":${JSON.stringify(shape.table)}`,
    names,
    encoders: compileEncoders(shape, names),
  };
}

export function encodeRow(shape: EncodedShape, row: Row): string {
  return shape.encoders.row(row);
}

export function encodeKey(shape: EncodedShape, row: Row): string {
  return shape.encoders.key(row);
}

export interface EventSource {
  file: string;
  pos: number;
  gtid: string | null;
  serverId: number | null;
  tsMs: number;
  txn: string;
  snapshot: boolean;
}

/** The last binlog file `encodeSource` was given and its JSON: a capture encodes a source per transaction, nearly always of one file. */
let lastSourceFile: string | undefined;
let lastSourceFileJson = '';

export function encodeSource(s: EventSource): string {
  if (s.file !== lastSourceFile) {
    lastSourceFile = s.file;
    lastSourceFileJson = JSON.stringify(s.file);
  }
  return `{"file":${lastSourceFileJson},"pos":${s.pos},"gtid":${s.gtid === null ? 'null' : JSON.stringify(s.gtid)},"server_id":${s.serverId ?? 'null'},"ts_ms":${s.tsMs},"txn":${JSON.stringify(s.txn)},"snapshot":${s.snapshot}}`;
}

/** A full event line, newline included. `before`/`after`/`key` are already-encoded JSON text. */
export function eventLine(op: Op, shape: EncodedShape, key: string, before: string, after: string, source: string, seq: string): string {
  const schema = shape.schema === undefined ? '' : `,"schema":${shape.schema}`;
  return `{"op":"${op}",${shape.header},"key":${key},"before":${before},"after":${after},"source":${source},"seq":"${seq}"${schema}}\n`;
}

/**
 * The constant parts of the lines `eventLine(op, shape, key, 'null', row, source, seq)` makes for
 * rows whose seq is `seqPrefix` followed by a row index: `head` + key + `middle` + row + `tail` +
 * index + `end`, for writers that put the values in between themselves (snapshot pages as bytes).
 */
export function lineParts(op: Op, shape: EncodedShape, source: string, seqPrefix: string): { head: string; middle: string; tail: string; end: string } {
  // Markers no JSON text holds raw (control characters are always escaped in it).
  const line = eventLine(op, shape, '\u0000', 'null', '\u0001', source, `${seqPrefix}\u0002`);
  const [head, afterKey] = line.split('\u0000') as [string, string];
  const [middle, afterRow] = afterKey.split('\u0001') as [string, string];
  const [tail, end] = afterRow.split('\u0002') as [string, string];
  return { head, middle, tail, end };
}

/** What a control event says of the DDL (or snapshot) that caused it. */
export interface MarkerCause {
  readonly kind: string;
  readonly position?: BinlogPosition;
  /** A statement sluice could not classify: who decided what it did (`sluice` by default, or an `operator`). */
  readonly decidedBy?: 'sluice' | 'operator';
}

/** A control event line (`t` or `s`) for one table, at the DDL's place in the feed. */
export function markerLine(
  op: MarkerOp,
  table: { db: string; table: string },
  schema: number | undefined,
  cause: MarkerCause,
  source: string,
  seq: string,
): string {
  const header = `"db":${JSON.stringify(table.db)},"table":${JSON.stringify(table.table)}`;
  const position = cause.position ? `,"position":{"file":${JSON.stringify(cause.position.file)},"pos":${cause.position.pos}}` : '';
  const version = schema === undefined ? '' : `,"schema":${schema}`;
  const decided = cause.decidedBy ? `,"decided_by":"${cause.decidedBy}"` : '';
  return `{"op":"${op}",${header},"key":null,"before":null,"after":null,"source":${source},"seq":"${seq}"${version},"ddl":{"kind":${JSON.stringify(cause.kind)}${position}${decided}}}\n`;
}
