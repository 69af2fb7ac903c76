import { type Column, encodeValue } from './types.ts';

/**
 * One change event a line (format v1, docs/FORMAT.md):
 * {"op","db","table","key","before","after","source","seq"}. Lines are built as text so values
 * keep their exact encoding; column-name prefixes are escaped once per table shape.
 */
export type Op = 'c' | 'u' | 'd' | 'r';

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
}

export function encodeShape(shape: TableShape): EncodedShape {
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
  return `{"op":"${op}",${shape.header},"key":${key},"before":${before},"after":${after},"source":${source},"seq":"${seq}"}\n`;
}
