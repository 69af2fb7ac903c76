import type { DuckDBConnection } from '@duckdb/node-api';
import { formatTableRef, type TableRef } from '../core/table-ref.ts';
import { MaterializeError } from '../errors.ts';
import type { SchemaVersion } from '../schema/version.ts';
import type { TableHistory } from './history.ts';
import { keySql, partsSql, projection, projectSql, sqlString } from './projection.ts';

/*
 * The materialization rule (docs/FORMAT.md, "The materialization rule"; format-v2 §4), once, as
 * DuckDB SQL generated from the table's schema history. For one table, folding its events in seq
 * order:
 *   t        state := empty (only events after the last `t` matter);
 *   s → N    rows are read through N; if N's key columns differ, the state is re-keyed;
 *   keyed    identity = key columns of the row image projected to the current version;
 *            c/r/u: state[id(after)] := after; d: remove state[id(before)];
 *   keyless  a multiset of projected rows: c/r add a copy of after, d removes one copy of before
 *            if present, u does both.
 *
 * As SQL, over the events after the last `t`, cut into key epochs at the `s` events whose version
 * changes the key columns (by column id, so a renamed or widened key column keeps the epoch):
 *   keyed epoch     per identity (projected to the epoch's last version L) the event with the
 *                   greatest seq wins, a `d` meaning absent; rows carried from the epoch before
 *                   are re-keyed and kept where the epoch has no event for their identity;
 *   keyless epoch   per projected row, the ±1 changes in seq order (removal before addition within
 *                   a `u`) are a walk that cannot go below zero ("if present"): from a start count
 *                   c the end count is max(0, c + low) + total − low, where total is the sum of the
 *                   changes and low the least prefix sum (≤ 0). Carried rows give c.
 * Projection is per row, so projecting every row of an epoch to L at once equals projecting the
 * state at each `s` on the way; the multiset's "if present" is then judged among rows equal in L,
 * which differs from the event-by-event fold only for a stream that deletes a row it never held.
 *
 * Events are compared by seq only (text order); which object carried them does not matter.
 * The state is a DuckDB table (id, v, row, n): rows keep the version they were written in until
 * the end, where each is projected once to the current version; DuckDB spills it to disk.
 */

export const ROW_OPS = "('c','u','d','r')";

/** A `t` or `s` event. */
export interface Marker {
  readonly seq: string;
  readonly op: 't' | 's';
  readonly version: number;
  readonly kind: string | null;
}

/** Events between two `s` events that change the key columns: one identity throughout. */
export interface Epoch {
  /** The epoch holds the events with `after` < seq < `before` ('' = from the start, null = to the end). */
  readonly after: string;
  readonly before: string | null;
  /** The key columns (names in `version`), null for a keyless epoch. */
  readonly key: readonly string[] | null;
  /** The epoch's last version L: every row of the epoch is projected to it. */
  readonly version: number;
  /** Versions the epoch's row events are written in. */
  readonly rowVersions: readonly number[];
}

export interface RulePlan {
  readonly table: TableRef;
  /** The DuckDB table of the events (see events.ts). */
  readonly events: string;
  /** Statements planning ran on the events first (events without `schema` given the version in effect at their seq). */
  readonly prepared: readonly string[];
  /** The current version N: the version of the table's newest event. */
  readonly current: number;
  /** The last `t`: nothing before it counts. */
  readonly reset: Marker | null;
  /** The last `t` dropped the name (drop, rename-out, exclude): the table is gone. */
  readonly gone: boolean;
  readonly epochs: readonly Epoch[];
}

/** `t` kinds after which the table no longer exists under this name in the captured set. */
export const GONE_KINDS = new Set(['drop', 'rename-out', 'exclude']);

export const sameIds = (a: readonly number[] | null, b: readonly number[] | null) =>
  JSON.stringify(a && [...a].sort((x, y) => x - y)) === JSON.stringify(b && [...b].sort((x, y) => x - y));

async function rows(duck: DuckDBConnection, sql: string): Promise<Record<string, unknown>[]> {
  return (await duck.runAndReadAll(sql)).getRowObjects();
}

/**
 * Plans the rule over the events in table `events`: the last reset, the current version, the key
 * epochs, each checked against the history. `start`: the version the state is at before these
 * events (the incremental merge's table); the full materialization starts empty.
 */
export async function planRule(duck: DuckDBConnection, history: TableHistory, events: string, start?: number): Promise<RulePlan> {
  const fallback = history.latest.version;
  const version = (v: unknown) => (v === null || v === undefined ? fallback : Number(v));
  const prepared: string[] = [];
  const at = history.versioned ? history.versionAtSql('seq') : undefined;
  if (at) prepared.push(`UPDATE ${events} SET v = ${at} WHERE v IS NULL`);
  for (const sql of prepared) await duck.run(sql);
  const markers: Marker[] = (await rows(duck, `SELECT seq, op, v, kind FROM ${events} WHERE op IN ('t', 's') ORDER BY seq`)).map((r) => ({
    seq: String(r.seq),
    op: r.op as 't' | 's',
    version: version(r.v),
    kind: r.kind === null ? null : String(r.kind),
  }));
  const reset = markers.filter((m) => m.op === 't').at(-1) ?? null;
  const from = reset?.seq ?? '';
  const newest = (await rows(duck, `SELECT v FROM ${events} ORDER BY seq DESC LIMIT 1`))[0];
  const current = newest ? version(newest.v) : (start ?? fallback);
  const ranges = (
    await rows(duck, `SELECT v, min(seq) AS lo, max(seq) AS hi FROM ${events} WHERE op IN ${ROW_OPS} AND seq > ${sqlString(from)} GROUP BY v`)
  ).map((r) => ({ v: version(r.v), lo: String(r.lo), hi: String(r.hi) }));

  const name = formatTableRef(history.table);
  const first = ranges.reduce<{ v: number; lo: string } | undefined>((a, r) => (!a || r.lo < a.lo ? r : a), undefined);
  const firstMarker = markers.find((m) => m.seq > from);
  const startVersion = reset?.version ?? start ?? (firstMarker && (!first || firstMarker.seq < first.lo) ? firstMarker.version : first?.v) ?? current;

  // Cut at every `s` whose version's key columns differ from the running ones.
  const cuts: { seq: string; version: number }[] = [{ seq: from, version: startVersion }];
  let keyIds = history.keyIds(startVersion);
  for (const m of markers) {
    if (m.op !== 's' || m.seq <= from) continue;
    const ids = history.keyIds(m.version);
    if (!sameIds(ids, keyIds)) cuts.push({ seq: m.seq, version: m.version });
    keyIds = ids;
  }
  const epochs: Epoch[] = cuts.map((cut, i) => {
    const before = cuts[i + 1]?.seq ?? null;
    const inside = (seq: string) => seq > cut.seq && (before === null || seq < before);
    const own = ranges.filter((r) => inside(r.lo) || inside(r.hi));
    const ids = history.keyIds(cut.version);
    for (const r of own) {
      if (!inside(r.lo) || !inside(r.hi))
        throw new MaterializeError(`${name}: rows written in version ${r.v} lie on both sides of the key change at seq ${before ?? cut.seq}`);
      if (!sameIds(history.keyIds(r.v), ids))
        throw new MaterializeError(`${name}: rows written in version ${r.v} sit in a part of the feed keyed by version ${cut.version}'s key`);
    }
    const seen = [cut.version, ...own.map((r) => r.v), ...markers.filter((m) => m.op === 's' && inside(m.seq)).map((m) => m.version)];
    const last = before === null ? Math.max(current, ...seen) : Math.max(...seen);
    if (before === null && last !== current)
      throw new MaterializeError(`${name}: events are written in version ${last}, after the newest event's version ${current}`);
    return { after: cut.seq, before, key: history.version(last).key, version: last, rowVersions: own.map((r) => r.v).sort((a, b) => a - b) };
  });
  return { table: history.table, events, prepared, current, reset, gone: reset !== null && GONE_KINDS.has(reset.kind ?? ''), epochs };
}

/** `CASE v WHEN … END` of `sql(version)` over `versions` (no CASE for one). */
export function byVersion(versions: readonly number[], sql: (v: number) => string): string {
  const branches = new Map<string, number[]>();
  for (const v of versions) {
    const text = sql(v);
    branches.set(text, [...(branches.get(text) ?? []), v]);
  }
  // Versions whose rows read alike (the usual case for the key) share one expression.
  if (branches.size === 1) return [...branches.keys()][0] as string;
  return `CASE ${[...branches].map(([text, vs]) => `WHEN v ${vs.length > 1 ? `IN (${vs.join(', ')})` : `= ${vs[0]}`} THEN ${text}`).join(' ')} END`;
}

/** The identity SQL of row image `image` in epoch `e`: projected key columns, or the projected row when keyless. */
function identitySql(history: TableHistory, e: Epoch, versions: readonly number[], image: string): string {
  return byVersion(
    versions.filter((v) => v <= e.version),
    (v) => {
      const p = projection(history, v, e.version);
      return e.key ? keySql(image, p, e.key) : projectSql(image, p);
    },
  );
}

/** The epoch's events, with the version written (NULL read as the current one). */
function epochEvents(plan: RulePlan, e: Epoch): string {
  const range = `seq > ${sqlString(e.after)}${e.before === null ? '' : ` AND seq < ${sqlString(e.before)}`}`;
  return `SELECT seq, op, coalesce(v, ${plan.current}) AS v, b, a FROM ${plan.events} WHERE op IN ${ROW_OPS} AND ${range}`;
}

/**
 * The statement that creates `<prefix>_d<i>`, epoch i's net change per identity:
 *   keyed    (id, seq, op, v, row): the event with the greatest seq; `row` = its after image (version v);
 *   keyless  (id, total, low): id = the projected row; the walk's sum and least prefix sum (≤ 0).
 */
export function epochChangeSql(history: TableHistory, plan: RulePlan, i: number, prefix: string): string {
  const e = plan.epochs[i] as Epoch;
  const versions = e.rowVersions.length ? e.rowVersions : [e.version];
  if (e.key) {
    return `CREATE OR REPLACE TABLE ${prefix}_d${i} AS
SELECT id, max(seq) AS seq, arg_max(op, seq) AS op, arg_max(v, seq) AS v, arg_max(a, seq) AS row
FROM (
  SELECT ${identitySql(history, e, versions, 'image')} AS id, seq, op, v, a
  FROM (SELECT *, ${partsSql('image')} FROM (SELECT *, CASE WHEN op = 'd' THEN b ELSE a END AS image FROM (${epochEvents(plan, e)})))
)
GROUP BY id`;
  }
  return `CREATE OR REPLACE TABLE ${prefix}_d${i} AS
WITH e AS (${epochEvents(plan, e)}),
changes AS (
  SELECT ${identitySql(history, e, versions, 'b')} AS id, seq, 0 AS o, -1 AS d FROM (SELECT *, ${partsSql('b')} FROM e WHERE op IN ('u', 'd'))
  UNION ALL
  SELECT ${identitySql(history, e, versions, 'a')} AS id, seq, 1 AS o, 1 AS d FROM (SELECT *, ${partsSql('a')} FROM e WHERE op IN ('c', 'u', 'r'))
)
SELECT id, sum(d)::BIGINT AS total, least(0, min(p))::BIGINT AS low
FROM (SELECT id, d, sum(d) OVER (PARTITION BY id ORDER BY seq, o ROWS UNBOUNDED PRECEDING) AS p FROM changes)
GROUP BY id`;
}

/** Versions rows of the state may be written in before epoch i: every earlier epoch's row versions, and the last version of keyless ones. */
function stateVersions(plan: RulePlan, i: number): number[] {
  const set = new Set<number>();
  for (const e of plan.epochs.slice(0, i)) {
    if (e.key) for (const v of e.rowVersions) set.add(v);
    else set.add(e.version);
  }
  return [...set].sort((a, b) => a - b);
}

/** The statement that creates `<prefix>_s<i>` (id, v, row, n): the state after epoch i, from the state after i−1 and `_d<i>`. */
function epochStateSql(history: TableHistory, plan: RulePlan, i: number, prefix: string): string {
  const e = plan.epochs[i] as Epoch;
  const carried = i > 0 ? stateVersions(plan, i) : [];
  if (e.key) {
    const fresh = `SELECT id, v, row, 1::BIGINT AS n FROM ${prefix}_d${i} WHERE op <> 'd'`;
    if (!carried.length) return `CREATE OR REPLACE TABLE ${prefix}_s${i} AS\n${fresh}`;
    return `CREATE OR REPLACE TABLE ${prefix}_s${i} AS
${fresh}
UNION ALL
SELECT c.id, c.v, c.row, c.n
FROM (SELECT ${identitySql(history, e, carried, 'row')} AS id, v, row, n FROM (SELECT *, ${partsSql('row')} FROM ${prefix}_s${i - 1})) c
ANTI JOIN ${prefix}_d${i} d ON c.id = d.id`;
  }
  if (!carried.length)
    return `CREATE OR REPLACE TABLE ${prefix}_s${i} AS
SELECT id, ${e.version} AS v, id AS row, total - low AS n FROM ${prefix}_d${i} WHERE total - low > 0`;
  return `CREATE OR REPLACE TABLE ${prefix}_s${i} AS
SELECT id, ${e.version} AS v, id AS row, n
FROM (
  SELECT coalesce(c.id, d.id) AS id, greatest(0, coalesce(c.n, 0) + coalesce(d.low, 0)) + coalesce(d.total - d.low, 0) AS n
  FROM (SELECT ${identitySql(history, e, carried, 'row')} AS id, sum(n)::BIGINT AS n FROM (SELECT *, ${partsSql('row')} FROM ${prefix}_s${i - 1}) GROUP BY 1) c
  FULL JOIN ${prefix}_d${i} d ON c.id = d.id
)
WHERE n > 0`;
}

/** Every statement of the full materialization; the last creates `<prefix>_state` (id, row, n), rows in the current version. */
export function ruleStatements(history: TableHistory, plan: RulePlan, prefix: string): string[] {
  if (!plan.epochs.some((e) => e.rowVersions.length)) return [`CREATE OR REPLACE TABLE ${prefix}_state (id VARCHAR, row VARCHAR, n BIGINT)`];
  const statements: string[] = [];
  plan.epochs.forEach((_, i) => {
    statements.push(epochChangeSql(history, plan, i, prefix), epochStateSql(history, plan, i, prefix));
  });
  const last = plan.epochs.length - 1;
  const versions = stateVersions(plan, last + 1);
  statements.push(`CREATE OR REPLACE TABLE ${prefix}_state AS
SELECT id, ${byVersion(versions, (v) => projectSql('row', projection(history, v, plan.current)))} AS row, n FROM (SELECT *, ${partsSql('row')} FROM ${prefix}_s${last})`);
  return statements;
}

/** The table's current rows, by the rule. */
export interface Materialized {
  readonly plan: RulePlan;
  /** The current version: the rows' columns, in order, and key. */
  readonly version: SchemaVersion;
  readonly gone: boolean;
  /** Rows (keyless duplicates counted), and distinct identities. */
  readonly rows: number;
  readonly distinct: number;
  /** DuckDB table (id VARCHAR, row VARCHAR, n BIGINT): `row` the exact JSON text in the current version, `n` its copies (1 when keyed). */
  readonly state: string;
  /** The statements that made `state` (what `sluice materialize --sql` prints). */
  readonly statements: readonly string[];
}

/** Runs the rule over the events in table `events`, creating `<prefix>_state`; intermediate tables are dropped. */
export async function materializeRule(duck: DuckDBConnection, history: TableHistory, events: string, prefix: string): Promise<Materialized> {
  const plan = await planRule(duck, history, events);
  const rule = ruleStatements(history, plan, prefix);
  for (const sql of rule) await duck.run(sql);
  const statements = [...plan.prepared, ...rule];
  const folded = plan.epochs.some((e) => e.rowVersions.length);
  const changes = (folded ? plan.epochs : []).map((_, i) => `(SELECT count(*) FROM ${prefix}_d${i} WHERE id IS NULL)`);
  const [counts] = await rows(
    duck,
    `SELECT count(*) AS distinct, coalesce(sum(n), 0) AS rows, count(*) FILTER (WHERE row IS NULL AND id IS NOT NULL)${changes.map((c) => ` + ${c}`).join('')} AS broken FROM ${prefix}_state`,
  );
  for (let i = 0; i < plan.epochs.length; i++) await duck.run(`DROP TABLE IF EXISTS ${prefix}_d${i}; DROP TABLE IF EXISTS ${prefix}_s${i}`);
  if (Number(counts?.broken))
    throw new MaterializeError(
      `${formatTableRef(history.table)}: ${counts?.broken} row images are not laid out as their schema version says (its columns, in order)`,
    );
  return {
    plan,
    version: history.version(plan.current),
    gone: plan.gone,
    rows: Number(counts?.rows ?? 0),
    distinct: Number(counts?.distinct ?? 0),
    state: `${prefix}_state`,
    statements,
  };
}
