import type { BinlogPosition } from '../core/position.ts';
import { type Column, encodeValue } from './types.ts';

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
}

export function encodeShape(shape: TableShape & { readonly schema?: number }): EncodedShape {
  return {
    ...shape,
    header: `"db":${JSON.stringify(shape.db)},"table":${JSON.stringify(shape.table)}`,
    names: shape.columns.map((c) => `${JSON.stringify(c.name)}:`),
  };
}

export type Row = Record<string, unknown>;

export function encodeRow(shape: EncodedShape, row: Row): string {
  let out = '{';
  const { columns, names } = shape;
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i] as Column;
    out += `${i ? ',' : ''}${names[i]}${encodeValue(column.kind, row[column.name], column.fsp)}`;
  }
  return `${out}}`;
}

export function encodeKey(shape: EncodedShape, row: Row): string {
  if (!shape.key) return 'null';
  let out = '{';
  for (let i = 0; i < shape.key.length; i++) {
    const index = shape.key[i] as number;
    const column = shape.columns[index] as Column;
    out += `${i ? ',' : ''}${shape.names[index]}${encodeValue(column.kind, row[column.name], column.fsp)}`;
  }
  return `${out}}`;
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

export function encodeSource(s: EventSource): string {
  return `{"file":${JSON.stringify(s.file)},"pos":${s.pos},"gtid":${s.gtid === null ? 'null' : JSON.stringify(s.gtid)},"server_id":${s.serverId ?? 'null'},"ts_ms":${s.tsMs},"txn":${JSON.stringify(s.txn)},"snapshot":${s.snapshot}}`;
}

/** A full event line, newline included. `before`/`after`/`key` are already-encoded JSON text. */
export function eventLine(op: Op, shape: EncodedShape, key: string, before: string, after: string, source: string, seq: string): string {
  const schema = shape.schema === undefined ? '' : `,"schema":${shape.schema}`;
  return `{"op":"${op}",${shape.header},"key":${key},"before":${before},"after":${after},"source":${source},"seq":"${seq}"${schema}}\n`;
}

/** What a control event says of the DDL (or snapshot) that caused it. */
export interface MarkerCause {
  readonly kind: string;
  readonly position?: BinlogPosition;
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
  return `{"op":"${op}",${header},"key":null,"before":null,"after":null,"source":${source},"seq":"${seq}"${version},"ddl":{"kind":${JSON.stringify(cause.kind)}${position}}}\n`;
}
