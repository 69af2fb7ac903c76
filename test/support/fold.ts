import type { S3Client } from '@aws-sdk/client-s3';
import { encodeRow, encodeShape } from '../../lib/format/event.ts';
import { schemaKey } from '../../lib/sink/s3/keys.ts';
import { getJson, listKeys } from '../../lib/sink/s3/objects.ts';
import { tableInfo } from '../../lib/source/mysql/schema.ts';
import { pagingConnection } from '../../lib/source/mysql/snapshot-reader.ts';
import type { MysqlTarget } from '../../lib/source/mysql/target.ts';
import type { ChangeEvent } from './source.ts';

/*
 * A reference implementation of the materialization rule of docs/FORMAT.md, written straight from
 * the rule for tests, independent of lib/: fold a table's events in seq order, `t` resets, `s`
 * re-keys, rows project through the schema history by column id.
 */

interface HistoryColumn {
  id: number;
  name: string;
  kind: string;
  type: string;
  fsp?: number;
}

export interface History {
  version: number;
  seq: string;
  columns: HistoryColumn[];
  key: string[] | null;
  changes: { op: string; id: number; fill?: string; from?: string }[];
  dropped?: boolean;
}

/** A table's schema history objects, by version. */
export async function loadHistory(s3: S3Client, bucket: string, prefix: string, source: string, db: string, table: string): Promise<Map<number, History>> {
  const folder = schemaKey(prefix, source, db, table, 0).replace(/[^/]+$/, '');
  const versions = new Map<number, History>();
  for await (const key of listKeys(s3, bucket, folder)) versions.set(Number(/(\d+)\.json$/.exec(key)?.[1]), (await getJson(s3, bucket, key)) as History);
  return versions;
}

type Row = Record<string, unknown>;

/** A value written under an older type, as the current type writes it (widenings only). */
function rerender(value: unknown, column: HistoryColumn): unknown {
  if (value === null || typeof value !== 'string') return value;
  if (column.kind === 'decimal') {
    const scale = Number(/,(\d+)\)/.exec(column.type)?.[1] ?? 0);
    const [int, frac = ''] = value.split('.');
    return scale ? `${int}.${frac.padEnd(scale, '0')}` : int;
  }
  if ((column.kind === 'datetime' || column.kind === 'time' || column.kind === 'timestamp') && column.fsp) {
    const z = value.endsWith('Z') ? 'Z' : '';
    const body = z ? value.slice(0, -1) : value;
    const [whole, frac = ''] = body.split('.');
    return `${whole}.${frac.padEnd(column.fsp, '0')}${z}`;
  }
  return value;
}

/** A row image written under version `from`, read through version `to`. */
function project(row: Row, from: number, to: number, history: Map<number, History>): Row {
  const source = history.get(from);
  const target = history.get(to);
  if (!source || !target) throw new Error(`schema version ${from} or ${to} missing`);
  const out: Row = {};
  for (const column of target.columns) {
    const old = source.columns.find((c) => c.id === column.id);
    if (old) {
      out[column.name] = rerender(row[old.name], column);
      continue;
    }
    // Added after `from`: the fill of the version that added it.
    let fill: string | undefined;
    for (let v = from + 1; v <= to && fill === undefined; v++) fill = history.get(v)?.changes.find((c) => c.op === 'add' && c.id === column.id)?.fill;
    out[column.name] = fill === undefined ? undefined : JSON.parse(fill);
  }
  return out;
}

/** The table's rows by the rule: JSON text of each row in the current version, sorted (a multiset). */
export function fold(events: readonly ChangeEvent[], history: Map<number, History>): string[] {
  const sorted = [...events].sort((a, b) => (a.seq < b.seq ? -1 : 1));
  const last = Math.max(...history.keys());
  let key: string[] | null = history.get(sorted.find((e) => e.op === 't')?.schema ?? last)?.key ?? null;
  let keyed = new Map<string, Row>();
  let bag: string[] = [];
  const current = (row: Row, version: number) => project(row, version, last, history);
  const identity = (row: Row) => JSON.stringify((key ?? []).map((k) => row[k]));
  const remove = (row: Row) => {
    if (key) keyed.delete(identity(row));
    else {
      const at = bag.indexOf(JSON.stringify(row));
      if (at >= 0) bag.splice(at, 1);
    }
  };
  const add = (row: Row) => {
    if (key) keyed.set(identity(row), row);
    else bag.push(JSON.stringify(row));
  };
  /** The version in effect at a seq: an event without `schema` (a snapshot page the poller had not recorded yet) is read so. */
  const versions = [...history.values()].sort((a, b) => a.version - b.version);
  const at = (seq: string) => versions.filter((v) => v.seq <= seq).at(-1)?.version ?? last;
  for (const e of sorted) {
    const version = e.schema ?? at(e.seq);
    if (e.op === 't') {
      keyed = new Map();
      bag = [];
      key = history.get(version)?.key ?? null;
      continue;
    }
    if (e.op === 's') {
      const next = history.get(version)?.key ?? null;
      if (JSON.stringify(next) !== JSON.stringify(key)) {
        const rows = key ? [...keyed.values()] : bag.map((r) => JSON.parse(r) as Row);
        key = next;
        keyed = new Map();
        bag = [];
        for (const row of rows) add(row);
      }
      continue;
    }
    if (e.before && (e.op === 'd' || e.op === 'u')) remove(current(e.before, version));
    if (e.after && e.op !== 'd') add(current(e.after, version));
  }
  const rows = key ? [...keyed.values()].map((r) => JSON.stringify(r)) : bag;
  return history.get(last)?.dropped ? [] : rows.sort();
}

/** The table's rows in MySQL, encoded as sluice encodes them, as JSON text of each row, sorted. */
export async function mysqlRows(target: MysqlTarget, db: string, table: string): Promise<string[]> {
  const reader = pagingConnection(target);
  await reader.init();
  try {
    const info = await tableInfo(reader.sql, db, table).catch(() => undefined);
    if (!info) return [];
    const shape = encodeShape({ db, table, columns: info.columns, key: null });
    const out: string[] = [];
    for await (const rows of reader.page({ ...info, key: [], keyParams: [] }, null, null, 0))
      for (const row of rows) out.push(JSON.stringify(JSON.parse(encodeRow(shape, row))));
    return out.sort();
  } finally {
    await reader.end();
  }
}
