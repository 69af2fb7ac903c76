import type { DuckDBConnection } from '@duckdb/node-api';
import type { SchemaVersion } from '../schema/version.ts';
import type { TableHistory } from './history.ts';
import { type Projection, partsSql, projection, projectSql } from './projection.ts';
import { byVersion, epochChangeSql, type Marker, planRule, type RulePlan, sameIds } from './rule.ts';

/*
 * The rule, incrementally: what a table that already holds the rule's result up to some point
 * (the Iceberg merge's table, at schema version `merged`) must apply for the events after it.
 *
 * Precondition: the events given are ALL the table's events after the merged point in seq order —
 * every event with a greater seq than any merged one, and none at or below it. Binlog commits
 * arrive in seq order, but a snapshot page may commit after binlog commits with greater seqs (its
 * seq is its watermark's): a merge that cuts at a commit must not take those commits until the
 * snapshot pages below them are in (e.g. merge up to the least watermark of the snapshots still
 * running). Keyed steps carry each change's seq, so a merge that keeps the seq of every row and
 * deleted key can also apply late pages itself (a change wins only over an older seq).
 *
 * The steps, in order (each applies to the table as the previous ones leave it):
 *   reset    every row is gone (the last `t` among the events); the table is at `version` (empty);
 *            `gone`: the name was dropped, renamed away or excluded (no steps follow);
 *   schema   existing rows are read through `to` (see `projection`): `fills` when an added column
 *            holds a non-NULL value in existing rows, `rerenders` when a widening changes values'
 *            text (DECIMAL scale, fraction digits), `rekey` when the key columns change;
 *   rows     one key epoch's net change, rows already projected to `version`:
 *              keyed    table (id, seq, deleted, row): delete `id`, or replace the row of `id`
 *                       with `row` (`id` = the key columns as `{"k":v,…}` in key order);
 *              keyless  table (row, removes, adds): remove up to `removes` copies of `row`
 *                       (fewer when fewer exist), then add `adds` copies.
 * Applying the steps to the rule's result at the merged point gives the rule's result over all
 * events (test/unit/materialize-changes.test.ts checks this over random splits).
 */

export type ChangeStep =
  | { readonly kind: 'reset'; readonly marker: Marker; readonly gone: boolean; readonly version: SchemaVersion }
  | {
      readonly kind: 'schema';
      readonly from: SchemaVersion | null;
      readonly to: SchemaVersion;
      /** How rows of `from` read in `to`; null when the table had no version yet. */
      readonly projection: Projection | null;
      readonly fills: boolean;
      readonly rerenders: boolean;
      readonly rekey: boolean;
    }
  | { readonly kind: 'rows'; readonly version: SchemaVersion; readonly keyed: boolean; readonly table: string };

export interface ChangeSet {
  readonly plan: RulePlan;
  readonly steps: readonly ChangeStep[];
  /** The table's version after the steps. */
  readonly version: SchemaVersion;
  readonly gone: boolean;
  readonly statements: readonly string[];
}

/**
 * The change set for the events in table `events`, given the merged table's version (null: nothing
 * merged yet). Creates `<prefix>_c<i>` tables for the rows steps; the caller drops them.
 */
export async function changeSet(
  duck: DuckDBConnection,
  history: TableHistory,
  events: string,
  merged: { version: number | null },
  prefix: string,
): Promise<ChangeSet> {
  const plan = await planRule(duck, history, events, merged.version ?? undefined);
  const steps: ChangeStep[] = [];
  const statements: string[] = [];
  let current = merged.version;
  const schemaStep = (to: number) => {
    const p = current === null ? null : projection(history, current, to);
    steps.push({
      kind: 'schema',
      from: current === null ? null : history.version(current),
      to: history.version(to),
      projection: p,
      fills: p?.columns.some((c) => c.source.kind === 'fill' && c.source.json !== 'null') ?? false,
      rerenders: p?.columns.some((c) => c.source.kind === 'column' && c.source.insert !== '') ?? false,
      rekey: current !== null && !sameIds(history.keyIds(current), history.keyIds(to)),
    });
    current = to;
  };
  if (plan.reset) {
    steps.push({ kind: 'reset', marker: plan.reset, gone: plan.gone, version: history.version(plan.reset.version) });
    current = plan.reset.version;
  }
  for (const [i, e] of plan.epochs.entries()) {
    if (!e.rowVersions.length) continue;
    if (current !== e.version) schemaStep(e.version);
    const table = `${prefix}_c${i}`;
    const change = epochChangeSql(history, plan, i, prefix);
    const project = byVersion(e.rowVersions, (v) => projectSql('row', projection(history, v, e.version)));
    const apply = e.key
      ? `CREATE OR REPLACE TABLE ${table} AS SELECT id, seq, op = 'd' AS deleted, CASE WHEN op <> 'd' THEN ${project} END AS row FROM (SELECT *, ${partsSql('row')} FROM ${prefix}_d${i})`
      : `CREATE OR REPLACE TABLE ${table} AS SELECT id AS row, -low AS removes, total - low AS adds FROM ${prefix}_d${i} WHERE low < 0 OR total - low > 0`;
    for (const sql of [change, apply, `DROP TABLE ${prefix}_d${i}`]) {
      statements.push(sql);
      await duck.run(sql);
    }
    steps.push({ kind: 'rows', version: history.version(e.version), keyed: e.key !== null, table });
  }
  if (!plan.gone && current !== plan.current) schemaStep(plan.current);
  return { plan, steps, version: history.version(current ?? plan.current), gone: plan.gone, statements };
}

/** One column of a query, streamed (bounded memory): the rows step's lines for a consumer such as the Iceberg layer. */
export async function* lines(duck: DuckDBConnection, sql: string): AsyncGenerator<string> {
  const result = await duck.stream(sql);
  for await (const rows of result.yieldRows()) for (const row of rows) yield String(row[0]);
}

/**
 * A rows step as upserts (full row texts in the step's version) and deletes (keyed: the key
 * objects; keyless: one row text per copy to remove, removing fewer when fewer exist), streamed.
 * Apply the deletes before the upserts: a keyed id appears in one list only, and a keyless row's
 * removals come before its additions.
 */
export function stepLines(
  duck: DuckDBConnection,
  step: Extract<ChangeStep, { kind: 'rows' }>,
): { upserts: AsyncIterable<string>; deletes: AsyncIterable<string> } {
  const t = step.table;
  if (step.keyed) return { upserts: lines(duck, `SELECT row FROM ${t} WHERE NOT deleted`), deletes: lines(duck, `SELECT id FROM ${t} WHERE deleted`) };
  return { upserts: lines(duck, `SELECT row FROM ${t}, range(${t}.adds)`), deletes: lines(duck, `SELECT row FROM ${t}, range(${t}.removes)`) };
}
