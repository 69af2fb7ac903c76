import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { type EventFiles, longestLine } from '../../lib/materialize/events.ts';
import { evolve, type SchemaColumn, type SchemaVersion } from '../../lib/schema/version.ts';
import { classifyDdl } from '../../lib/source/mysql/ddl/classify.ts';
import { mariadbComments } from './comment-rules.ts';
import type { RefEvent } from './rule-reference.ts';

/**
 * A simulated source table for the materialization rule: random DML and DDL applied to an
 * in-memory "server" (the truth), with the events sluice writes for them (format v2: `schema` on
 * every event, `t`/`s` markers, snapshot pages interleaved by seq) and the schema history the
 * real DDL classifier and `evolve` derive. The truth is kept independently of the rule: the
 * simulator applies each DDL to its rows itself (fills it knows, widened values re-rendered).
 */

export interface Workload {
  readonly db: string;
  readonly table: string;
  readonly lines: string[];
  readonly events: RefEvent[];
  readonly versions: Map<number, SchemaVersion>;
  /** The table's rows at the end, as the current version's row texts (duplicates repeated). */
  readonly truth: string[];
  readonly gone: boolean;
  readonly current: number;
  /** What happened, for failure messages. */
  readonly log: string[];
}

/** A small seeded PRNG (mulberry32). */
export function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T,
    chance: (p: number) => next() < p,
  };
}

const STRINGS = ['plain', 'a,"b":1', 'quote " inside', 'brace } {', 'back\\slash', 'é😀', 'tab\tnl\n', '{"id":5}', ',"name":"x"', '\u0001ctl', '', 'end}'];
const DOUBLES = ['-0', '5e-324', '1.7976931348623157e+308', '0.1', '3', '-2.5e-7'];
const NAMES = ['n"1', 'a,b', 'x}y', 'é', 'we ird', 'c:d', 'after', 'before'];

type Row = Map<number, string>;

const TEMPLATES = [
  'CREATE TABLE t (id INT NOT NULL, u2 INT NOT NULL, name VARCHAR(20), amount DECIMAL(10,2), at DATETIME, PRIMARY KEY (id), UNIQUE KEY uu (u2))',
  'CREATE TABLE t (id INT NOT NULL, u2 INT NOT NULL, name VARCHAR(20), amount DECIMAL(10,2), f DOUBLE)',
  'CREATE TABLE t (k DECIMAL(10,2) NOT NULL PRIMARY KEY, v VARCHAR(20), ts TIMESTAMP NULL, dur TIME NULL, f DOUBLE NULL, big BIGINT UNSIGNED NULL)',
];

/** ADD COLUMN variants and the value existing rows get (as the server stores and sluice writes it). */
const ADDS: { sql: (name: string) => string; fill: string }[] = [
  { sql: (n) => `ADD COLUMN ${n} VARCHAR(8) DEFAULT 'web'`, fill: '"web"' },
  { sql: (n) => `ADD COLUMN ${n} INT NOT NULL`, fill: '0' },
  { sql: (n) => `ADD COLUMN ${n} TEXT`, fill: 'null' },
  { sql: (n) => `ADD COLUMN ${n} DECIMAL(8,3) DEFAULT 1.5 FIRST`, fill: '"1.500"' },
  { sql: (n) => `ADD COLUMN ${n} DATETIME(2) NOT NULL DEFAULT '2024-05-06 07:08:09'`, fill: '"2024-05-06 07:08:09.00"' },
];

const quote = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** `resets` scales how often the table is truncated, dropped or re-read (1: often; small: long-lived tables). */
export async function workload(seed: number, steps = 60, resets = 1): Promise<Workload> {
  const rnd = random(seed);
  const db = 'shop';
  const table = 't';
  const versions = new Map<number, SchemaVersion>();
  const lines: string[] = [];
  const events: RefEvent[] = [];
  const log: string[] = [];
  let current: SchemaVersion | undefined;
  let rows: Row[] = [];
  let gone = false;
  let pos = 0;
  let counter = 1000;
  let job = 0;
  let added = 0;
  /** A `t resnapshot` waiting for its snapshot. */
  let pendingSnapshot = false;

  const prefix = () => {
    pos += 100;
    return `0000000001.${String(pos + 4).padStart(12, '0')}.`;
  };
  const watermark = () => `0000000001.${String(pos + 50).padStart(12, '0')}.`;
  const source = (snapshot: boolean) => `{"file":"binlog.000001","pos":${pos + 4},"gtid":null,"server_id":1,"ts_ms":0,"txn":"x","snapshot":${snapshot}}`;
  const v = () => current as SchemaVersion;
  const text = (row: Row, version = v()) => `{${version.columns.map((c) => `${JSON.stringify(c.name)}:${row.get(c.id)}`).join(',')}}`;
  const keyText = (row: Row, version = v()) =>
    version.key ? `{${version.key.map((k) => `${JSON.stringify(k)}:${row.get(version.columns.find((c) => c.name === k)?.id ?? -1)}`).join(',')}}` : 'null';
  const emit = (op: RefEvent['op'], seq: string, row: { before?: Row; after?: Row }, kind?: string, snapshot = false) => {
    const before = row.before ? text(row.before) : null;
    const after = row.after ? text(row.after) : null;
    const key = row.after ? keyText(row.after) : row.before ? keyText(row.before) : 'null';
    const ddl = kind ? `,"ddl":{"kind":"${kind}","position":{"file":"binlog.000001","pos":${pos + 4}}}` : '';
    lines.push(
      `{"op":"${op}","db":"${db}","table":"${table}","key":${key},"before":${before ?? 'null'},"after":${after ?? 'null'},"source":${source(snapshot)},"seq":"${seq}","schema":${v().version}${ddl}}`,
    );
    events.push({ op, seq, schema: v().version, ...(kind ? { kind } : {}), before, after });
  };

  const value = (c: SchemaColumn, fresh?: number): string => {
    if (c.nullable && rnd.chance(0.15)) return 'null';
    const fsp = c.fsp ?? 0;
    const frac = fsp ? `.${String(rnd.int(10 ** fsp)).padStart(fsp, '0')}` : '';
    switch (c.kind) {
      case 'int':
        if (c.type.startsWith('bigint unsigned')) return rnd.pick(['18446744073709551615', '0', '9007199254740993']);
        return String(fresh ?? rnd.int(30));
      case 'decimal': {
        const scale = Number(/,(\d+)\)/.exec(c.type)?.[1] ?? 0);
        const whole = fresh ?? rnd.int(500) - (c.nullable ? 100 : 0);
        return JSON.stringify(`${whole}${scale ? `.${String(rnd.int(10 ** scale)).padStart(scale, '0')}` : ''}`);
      }
      case 'double':
        return rnd.pick(DOUBLES);
      case 'datetime':
        return JSON.stringify(`2024-0${1 + rnd.int(9)}-1${rnd.int(10)} 1${rnd.int(10)}:0${rnd.int(10)}:3${rnd.int(10)}${frac}`);
      case 'timestamp':
        return rnd.chance(0.2)
          ? JSON.stringify(`0000-00-00 00:00:00${fsp ? `.${'0'.repeat(fsp)}` : ''}`)
          : JSON.stringify(`2025-1${rnd.int(3)}-0${1 + rnd.int(9)}T0${rnd.int(10)}:1${rnd.int(10)}:2${rnd.int(10)}${frac}Z`);
      case 'time':
        return JSON.stringify(`${rnd.chance(0.3) ? '-' : ''}${rnd.int(839)}:0${rnd.int(10)}:5${rnd.int(10)}${frac}`);
      default:
        return JSON.stringify(rnd.pick(STRINGS));
    }
  };
  const keyColumns = () => (v().key ?? []).map((k) => v().columns.find((c) => c.name === k) as SchemaColumn);
  const newRow = (): Row => {
    const row: Row = new Map();
    const unique = new Set(
      v()
        .indexes.filter((i) => i.kind !== 'index')
        .flatMap((i) => i.parts.map((p) => p.column)),
    );
    for (const c of v().columns) row.set(c.id, value(c, unique.has(c.name) || c.name === 'id' || c.name === 'u2' ? counter++ : undefined));
    return row;
  };
  const unique = (names: readonly string[]) => {
    const ids = names.map((n) => v().columns.find((c) => c.name === n)?.id ?? -1);
    const seen = new Set(rows.map((r) => ids.map((id) => r.get(id)).join('|')));
    return seen.size === rows.length && rows.every((r) => ids.every((id) => r.get(id) !== 'null'));
  };

  const ddl = async (statement: string) => {
    const c = await classifyDdl(statement, { defaultDb: db, comments: mariadbComments(101119) });
    if (c.kind !== 'tables' || c.effects.length !== 1) throw new Error(`${statement}: ${c.kind}`);
    const result = evolve(current, (c.effects[0] as { change: Parameters<typeof evolve>[1] }).change, {
      db,
      table,
      explicitDefaultsForTimestamp: true,
      databaseCollation: 'utf8mb4_unicode_ci',
    });
    if (result.path === 'unknown') throw new Error(`${statement}: unknown (${result.reason})`);
    log.push(`${statement} → ${result.path} v${result.next?.version}`);
    return result;
  };
  const record = (next: SchemaVersion | undefined) => {
    current = next;
    if (next) versions.set(next.version, next);
  };

  const snapshot = () => {
    const hash = 'abcdef01';
    job++;
    if (!v().key) {
      // Keyless: one transaction at L; a `t snapshot` marker sorts before its rows.
      const at = watermark();
      emit('t', `${at}r.j${job}.${hash}.0000.00000000.0000000`, {}, 'snapshot', true);
      for (const [i, row] of rows.entries()) emit('r', `${at}r.j${job}.${hash}.0000.00000001.${String(i).padStart(7, '0')}`, { after: row }, undefined, true);
      log.push(`keyless snapshot of ${rows.length} rows`);
      return;
    }
    // Keyed: pages read after their watermark may see later changes, whose events win by seq.
    const keyIds = keyColumns().map((c) => c.id);
    const order = [...rows].sort((a, b) => (keyIds.map((id) => a.get(id)).join() < keyIds.map((id) => b.get(id)).join() ? -1 : 1));
    const half = order.slice(0, Math.ceil(order.length / 2));
    const pages = [half, order.slice(half.length)];
    pages.forEach((page, p) => {
      const at = watermark();
      if (rnd.chance(0.7)) dml(); // committed after L, before the SELECT sees the rows
      const keys = new Set(page.map((r) => keyText(r)));
      const seen = rows.filter((r) => keys.has(keyText(r)));
      for (const [i, row] of seen.entries())
        emit('r', `${at}r.j${job}.${hash}.0000.${String(p + 1).padStart(8, '0')}.${String(i).padStart(7, '0')}`, { after: row }, undefined, true);
    });
    log.push(`keyed snapshot of ${rows.length} rows`);
  };

  const dml = () => {
    const at = prefix();
    let index = 0;
    const seq = () => `${at}${String(index++).padStart(10, '0')}`;
    for (let n = rnd.chance(0.4) ? 2 + rnd.int(5) : 1; n > 0; n--) {
      const roll = rnd.next();
      const target = rows.length ? rnd.int(rows.length) : -1;
      const row = rows[target];
      if (!row || roll < 0.5) {
        const keyless = !v().key;
        const copy = keyless && row && rnd.chance(0.4) ? new Map(row) : newRow();
        rows.push(copy);
        emit('c', seq(), { after: copy });
      } else if (roll < 0.75) {
        const keys = new Set(keyColumns().map((c) => c.id));
        const others = v().columns.filter((c) => !keys.has(c.id) && c.name !== 'u2' && c.name !== 'id');
        if (!others.length) continue;
        const after = new Map(row);
        const c = rnd.pick(others);
        after.set(c.id, value(c));
        rows[target] = after;
        emit('u', seq(), { before: row, after });
      } else if (roll < 0.85 && v().key) {
        const after = new Map(row);
        for (const c of keyColumns()) after.set(c.id, value(c, counter++));
        rows[target] = after;
        emit('d', seq(), { before: row });
        emit('c', seq(), { after });
      } else {
        rows.splice(target, 1);
        emit('d', seq(), { before: row });
      }
    }
  };

  const alter = async (spec: string, apply: (next: SchemaVersion) => void) => {
    const result = await ddl(`ALTER TABLE t ${spec}`);
    const at = prefix();
    if (result.path === 'derive' || result.path === 'noop') {
      const next = result.next as SchemaVersion;
      apply(next);
      record(next);
      emit('s', `${at}0000000000`, {}, result.path === 'noop' ? 'noop' : 'alter');
      return;
    }
    if (result.path !== 'resnapshot') throw new Error(`${spec}: ${result.path}`);
    apply(result.next as SchemaVersion);
    record(result.next);
    emit('t', `${at}0000000000`, {}, 'resnapshot');
    pendingSnapshot = true;
  };

  const create = async () => {
    const result = await ddl(rnd.pick(TEMPLATES));
    record(result.next);
    rows = [];
    gone = false;
    emit('t', `${prefix()}0000000000`, {}, 'create');
  };

  await create();
  for (let step = 0; step < steps; step++) {
    const roll = rnd.next();
    if (gone) {
      if (rnd.chance(0.5)) await create();
      continue;
    }
    const cols = v().columns;
    const keyNames = new Set(v().key ?? []);
    const droppable = cols.filter((c) => !keyNames.has(c.name) && !v().indexes.some((i) => i.parts.some((p) => p.column === c.name)));
    const reset = roll > 1 - 0.06 * resets ? roll : 0; // the top of the range, scaled
    if (reset > 1 - 0.02 * resets) {
      rows = [];
      emit('t', `${prefix()}0000000000`, {}, 'truncate');
    } else if (reset > 1 - 0.035 * resets) {
      const result = await ddl('DROP TABLE t');
      emit('t', `${prefix()}0000000000`, {}, 'drop');
      record(result.next);
      rows = [];
      gone = true;
      pendingSnapshot = false;
    } else if (reset) {
      // A default the binlog cannot derive: the table is re-read.
      const name = `r${++added}`;
      await alter(`ADD COLUMN ${name} DATETIME DEFAULT CURRENT_TIMESTAMP`, (next) => {
        const id = next.columns.find((c) => c.name === name)?.id as number;
        for (const r of rows) r.set(id, '"2026-01-01 00:00:00"');
      });
    } else if (roll < 0.62) {
      dml();
    } else if (roll < 0.7) {
      const add = rnd.pick(ADDS);
      const name = `c${++added}`;
      await alter(add.sql(name), (next) => {
        const id = next.columns.find((c) => c.name === name)?.id as number;
        for (const r of rows) r.set(id, add.fill);
      });
    } else if (roll < 0.74 && droppable.length > 1) {
      const c = rnd.pick(droppable);
      await alter(`DROP COLUMN ${quote(c.name)}`, () => {
        for (const r of rows) r.delete(c.id);
      });
    } else if (roll < 0.79) {
      const c = rnd.pick(cols);
      const to = `${rnd.pick(NAMES)}${added++}`;
      await alter(`RENAME COLUMN ${quote(c.name)} TO ${quote(to)}`, () => {});
    } else if (roll < 0.86) {
      const c = rnd.pick(cols);
      const wider = widerType(c);
      if (!wider) continue;
      await alter(`MODIFY ${quote(c.name)} ${wider}${c.nullable ? ' NULL' : ' NOT NULL'}`, (next) => {
        const to = next.columns.find((x) => x.id === c.id) as SchemaColumn;
        for (const r of rows) r.set(c.id, widen(r.get(c.id) as string, c, to));
      });
    } else if (roll < 0.9) {
      const key = v().key;
      const names = cols.map((c) => c.name);
      const id = names.find((n) => n === 'id');
      const u2 = names.find((n) => n === 'u2');
      if (!id || !u2) continue;
      const hasPrimary = v().indexes.some((i) => i.kind === 'primary');
      const hasUnique = v().indexes.some((i) => i.kind === 'unique');
      const options: string[] = [];
      if (hasPrimary && unique(['u2'])) options.push('DROP PRIMARY KEY, ADD PRIMARY KEY (u2)', 'DROP PRIMARY KEY, ADD PRIMARY KEY (id, u2)');
      if (hasPrimary || hasUnique)
        options.push(
          [hasPrimary ? 'DROP PRIMARY KEY' : '', hasUnique ? `DROP INDEX ${v().indexes.find((i) => i.kind === 'unique')?.name}` : '']
            .filter(Boolean)
            .join(', '),
        );
      if (!key && unique(['id'])) options.push('ADD PRIMARY KEY (id)');
      if (!options.length) continue;
      await alter(rnd.pick(options), () => {});
    } else if (roll < 0.92) {
      await alter(`ADD INDEX ix${added++} (${quote((cols[0] as SchemaColumn).name)})`, () => {});
    } else if (roll < 0.92 || pendingSnapshot) {
      snapshot();
      pendingSnapshot = false;
    } else dml();
  }
  if (pendingSnapshot && !gone) snapshot();
  return {
    db,
    table,
    lines,
    events,
    versions,
    truth: gone ? [] : rows.map((r) => text(r)),
    gone,
    current: (current as SchemaVersion).version,
    log,
  };
}

/** A widening MODIFY for a column, or undefined. */
function widerType(c: SchemaColumn): string | undefined {
  const decimal = /^decimal\((\d+),(\d+)\)( unsigned)?$/.exec(c.type);
  if (decimal) return `DECIMAL(${Number(decimal[1]) + 2},${Number(decimal[2]) + 2})`;
  if (c.kind === 'datetime' || c.kind === 'timestamp' || c.kind === 'time')
    return (c.fsp ?? 0) < 6 ? `${c.kind.toUpperCase()}(${Math.min(6, (c.fsp ?? 0) + 2)})` : undefined;
  if (c.type === 'int') return 'BIGINT';
  const varchar = /^varchar\((\d+)\)$/.exec(c.type);
  if (varchar) return `VARCHAR(${Number(varchar[1]) + 10})`;
  return undefined;
}

/** The simulator's own re-rendering of a widened value (the server pads DECIMAL scale and fraction digits with zeros). */
function widen(value: string, from: SchemaColumn, to: SchemaColumn): string {
  if (value === 'null') return value;
  const scale = (c: SchemaColumn) => (c.kind === 'decimal' ? Number(/,(\d+)\)/.exec(c.type)?.[1]) : (c.fsp ?? 0));
  if (!['decimal', 'datetime', 'timestamp', 'time'].includes(to.kind) || scale(from) === scale(to)) return value;
  const raw = JSON.parse(value) as string;
  if (raw.startsWith('0000-00-00') && to.kind === 'timestamp') return JSON.stringify(`${raw.split('.')[0]}.${'0'.repeat(scale(to))}`);
  const zulu = raw.endsWith('Z');
  const body = zulu ? raw.slice(0, -1) : raw;
  const [whole, fraction = ''] = body.split('.');
  return JSON.stringify(`${whole}.${fraction.padEnd(scale(to), '0')}${zulu ? 'Z' : ''}`);
}

/** The versions of one table through `statements` (classifier + evolve), each with the path it took. */
export async function versionsFrom(
  statements: readonly string[],
  at: { db: string; table: string } = { db: 'shop', table: 't' },
): Promise<{ version: SchemaVersion; path: string }[]> {
  const out: { version: SchemaVersion; path: string }[] = [];
  let current: SchemaVersion | undefined;
  for (const statement of statements) {
    const c = await classifyDdl(statement, { defaultDb: at.db, comments: mariadbComments(101119) });
    if (c.kind !== 'tables') throw new Error(`${statement}: ${c.kind}`);
    for (const { change } of c.effects) {
      const result = evolve(current, change, { ...at, explicitDefaultsForTimestamp: true, databaseCollation: 'utf8mb4_unicode_ci' });
      if (!result.next) throw new Error(`${statement}: ${result.path} ${result.reason ?? ''}`);
      current = result.next;
      out.push({ version: current, path: result.path });
    }
  }
  return out;
}

/** Writes event lines, spread at random over `objects` gzip files in `dir`, as the rule reads a table's objects. */
export async function eventFiles(lines: readonly string[], dir: string, objects: number, seed: number): Promise<EventFiles> {
  const rnd = random(seed);
  const buckets: string[][] = Array.from({ length: objects }, () => []);
  for (const line of lines) buckets[rnd.int(objects)]?.push(line);
  mkdirSync(dir, { recursive: true });
  let longest = 0;
  let files = 0;
  for (const [i, bucket] of buckets.entries()) {
    if (!bucket.length) continue;
    const file = join(dir, `${i}.jsonl.gz`);
    writeFileSync(file, gzipSync(bucket.map((l) => `${l}\n`).join('')));
    longest = Math.max(longest, await longestLine(file));
    files++;
  }
  return { glob: files ? join(dir, '*.jsonl.gz') : undefined, files, longestLine: longest };
}
