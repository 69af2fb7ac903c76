import type { SchemaVersion } from '../../lib/schema/version.ts';

/**
 * The materialization rule straight from docs/FORMAT.md (format-v2 §4), event by event, in memory:
 * the independent reference the DuckDB implementation is checked against. Row images are kept as
 * text and cut into members by a character scanner, so values keep their exact spelling.
 */
export interface RefEvent {
  readonly op: 'c' | 'u' | 'd' | 'r' | 't' | 's';
  readonly seq: string;
  readonly schema: number;
  readonly kind?: string;
  readonly before: string | null;
  readonly after: string | null;
}

/** A flat JSON object's members as [name, value text]. */
export function members(text: string): [string, string][] {
  const out: [string, string][] = [];
  let i = 1;
  const scan = () => {
    const start = i;
    if (text[i] === '"') {
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
      i++;
    } else while (text[i] !== ',' && text[i] !== '}') i++;
    return text.slice(start, i);
  };
  while (text[i] !== '}') {
    const name = JSON.parse(scan()) as string;
    i++; // ':'
    out.push([name, scan()]);
    if (text[i] === ',') i++;
  }
  return out;
}

const digits = (type: string, kind: string) =>
  kind === 'decimal'
    ? Number(/,(\d+)\)/.exec(type)?.[1] ?? 0)
    : ['datetime', 'timestamp', 'time'].includes(kind)
      ? Number(/\((\d)\)/.exec(type)?.[1] ?? 0)
      : -1;

/** A value re-rendered from one type to a wider one: DECIMAL scale and fraction digits padded with zeros. */
function widen(value: string, from: { type: string; kind: string }, to: { type: string; kind: string }): string {
  const [a, b] = [digits(from.type, from.kind), digits(to.type, to.kind)];
  if (value === 'null' || a < 0 || a === b) return value;
  const text = JSON.parse(value) as string;
  const zone = text.endsWith('Z') ? 'Z' : '';
  const [whole, fraction = ''] = text.slice(0, text.length - zone.length).split('.');
  return JSON.stringify(`${whole}.${fraction.padEnd(b, '0')}${zone}`);
}

export function project(row: string, from: number, to: number, versions: Map<number, SchemaVersion>): string {
  const [source, target] = [versions.get(from), versions.get(to)] as [SchemaVersion, SchemaVersion];
  const values = new Map(members(row));
  const cells = target.columns.map((column) => {
    const old = source.columns.find((c) => c.id === column.id);
    if (old) return `${JSON.stringify(column.name)}:${widen(values.get(old.name) as string, old, column)}`;
    for (let n = from + 1; n <= to; n++) {
      const v = versions.get(n) as SchemaVersion;
      const add = v.changes.find((c) => c.op === 'add' && c.id === column.id);
      if (add?.op === 'add')
        return `${JSON.stringify(column.name)}:${widen(add.fill, v.columns.find((c) => c.id === column.id) as SchemaVersion['columns'][number], column)}`;
    }
    throw new Error(`no fill for ${column.name}`);
  });
  return `{${cells.join(',')}}`;
}

/** Folds `events` (any order) and returns the rows (duplicates repeated) and whether the table is gone. */
export function referenceFold(events: readonly RefEvent[], versions: Map<number, SchemaVersion>): { rows: string[]; gone: boolean; version: number } {
  let state: { v: number; rows: string[] } = { v: 0, rows: [] };
  let gone = false;
  const id = (row: string, key: readonly string[]) => JSON.stringify(key.map((k) => new Map(members(row)).get(k)));
  for (const e of [...events].sort((x, y) => (x.seq < y.seq ? -1 : 1))) {
    if (e.op === 't') {
      state = { v: e.schema, rows: [] };
      gone = ['drop', 'rename-out', 'exclude'].includes(e.kind ?? '');
      continue;
    }
    if (state.v === 0) state.v = e.schema;
    if (e.op === 's') {
      state = { v: e.schema, rows: state.rows.map((r) => project(r, state.v, e.schema, versions)) };
      continue;
    }
    const key = versions.get(state.v)?.key ?? null;
    const after = e.after === null ? null : project(e.after, e.schema, state.v, versions);
    const before = e.before === null ? null : project(e.before, e.schema, state.v, versions);
    const remove = (match: (r: string) => boolean) => {
      const at = state.rows.findIndex(match);
      if (at >= 0) state.rows.splice(at, 1);
    };
    if (key) {
      if (e.op === 'd' && before) remove((r) => id(r, key) === id(before, key));
      if (e.op !== 'd' && after) {
        remove((r) => id(r, key) === id(after, key));
        state.rows.push(after);
      }
    } else {
      if ((e.op === 'u' || e.op === 'd') && before) remove((r) => r === before);
      if (e.op !== 'd' && after) state.rows.push(after);
    }
  }
  return { rows: state.rows, gone, version: state.v };
}
