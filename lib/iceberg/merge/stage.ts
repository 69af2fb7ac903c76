import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { type ChangeStep, changeSet, stepLines } from '../../materialize/changes.ts';
import { downloadObjects, loadEventsSql } from '../../materialize/events.ts';
import type { TableHistory } from '../../materialize/history.ts';
import { sqlString } from '../../materialize/projection.ts';
import { materializeRule, planRule } from '../../materialize/rule.ts';
import { pad } from '../../sink/s3/keys.ts';
import { outsideBucket, type s3ObjectStore } from '../../sink/s3/object-store.ts';
import { listKeys } from '../../sink/s3/objects.ts';
import type { MergeState } from '../../state/iceberg-store.ts';
import { IncompatibleTypeChangeError } from '../files/schema.ts';
import { type DeleteMode, loadVersion, metadataVersion, type Staged, stageChanges, stageReplace, stageTruncate, type TableVersion } from '../table/table.ts';
import { pageObjects } from './pages.ts';
import type { MergeRun } from './run.ts';
import { spec, type TableLocation } from './spec.ts';
import { type Cut, KEEP_COLUMNS, type StagedMerge } from './types.ts';

/* The Iceberg side of step 2: the new version(s) staged from the table's events, after what earlier attempts staged is discarded. */

/** The Iceberg side of step 2: the new version(s), chained from the committed one. */
export async function stage(
  run: MergeRun,
  table: TableRef,
  state: MergeState,
  cut: Cut,
  duck: DuckDBConnection,
  history: TableHistory,
  work: string,
  /** The snapshot jobs merged once this commits: a full rewrite reads exactly their pages. */
  jobs: ReadonlySet<string>,
): Promise<StagedMerge> {
  const deps = { store: run.store, workDir: work };
  const current = state.metadataKey ? await loadVersion(run.store, state.metadataKey) : undefined;
  const location = await run.locationOf(table, current);
  const tag = run.tagFor(state);
  await discardUncommitted(run, location, state, current?.version ?? 0);
  const at = run.clock();
  const options = (suffix: string) => ({
    tag: `${tag}${suffix}`,
    timestampMs: at,
    summary: { 'sluice.commit-seq': String(cut.commitSeq) },
    deletes: run.config.iceberg.deletes,
  });
  const rewrite = async (events: string, prefix: string, recreate: boolean) => {
    const rule = await materializeRule(duck, history, events, prefix);
    // The rows leave DuckDB as a file: streaming a million row texts through JavaScript cost more than the Parquet writing.
    const path = join(work, `${prefix}-rows.jsonl`);
    await duck.run(
      `COPY (SELECT row FROM ${rule.state}, range(${rule.state}.n)) TO ${sqlString(path)} (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER E'\\x01')`,
    );
    const from = recreate ? undefined : state.schemaVersion;
    const to = rule.version.version;
    const rows = { path, lines: rule.rows };
    const staged = await stageReplace(deps, current, spec(history, location, to, from, recreate && current !== undefined), rows, options(''));
    return { version: staged.version, schemaVersion: to, gone: false, mode: rule.rows ? 'rewrite' : 'empty', stats: [staged] } as StagedMerge;
  };
  // A first load needs no change set (nothing to apply it to): the rule alone, unless the table is gone already.
  if (!current && !state.gone && !(await planRule(duck, history, 'e_ev')).gone) return await rewrite('e_ev', 'r', false);
  const changes = await changeSet(duck, history, 'e_ev', { version: state.schemaVersion ?? null }, 'e');
  const reset = changes.steps.find((s): s is Extract<ChangeStep, { kind: 'reset' }> => s.kind === 'reset');
  const to = changes.version.version;

  if (changes.gone) {
    // Dropped, renamed away or excluded: the Iceberg table is emptied (kept for readers and time travel).
    if (!current) return { version: undefined, schemaVersion: to, gone: true, mode: 'empty', stats: [] };
    const staged = await stageTruncate(deps, current, spec(history, location, state.schemaVersion ?? to, undefined), options(''));
    return { version: staged.version, schemaVersion: state.schemaVersion, gone: true, mode: 'empty', stats: [staged] };
  }
  // After a reset nothing before it counts: these events alone give the table. A new table under
  // the name (create, rename-in, include) shares no column identity with the old one.
  if (reset || !current || state.gone) return await rewrite('e_ev', 'r', reset !== undefined && !KEEP_COLUMNS.has(reset.marker.kind ?? ''));
  const rewritesValues = changes.steps.some((s) => s.kind === 'schema' && (s.fills || s.rerenders || s.rekey));
  if (!rewritesValues) {
    try {
      return await incremental(run, deps, current, history, location, state.schemaVersion ?? to, changes.steps, to, duck, options);
    } catch (error) {
      if (!(error instanceof IncompatibleTypeChangeError)) throw error;
      run.deps.log.info('a column type Iceberg cannot promote: rewriting the table', { table: formatTableRef(table), error: error.message });
    }
  }
  // A schema change that rewrites existing values: the whole table by the rule, from every event up to the cut.
  const all = await run.changeLog.binlogObjects(table, 0, cut.commitSeq);
  const pages = await pageObjects(run, table, cut, new Set(), jobs);
  const dir = join(work, 'all');
  mkdirSync(dir, { recursive: true });
  await duck.run(loadEventsSql('a_ev', await downloadObjects(run.deps.s3, run.config.bucket, [...all.keys, ...pages.keys], dir)));
  return await rewrite('a_ev', 'a', false);
}

/**
 * Deletes what earlier attempts of this merge staged (runs that crashed or lost their lease before
 * their commit), and metadata files past the committed version: no committed metadata names them
 * (merge sequences only grow, and the commit is what makes a version current).
 */
export async function discardUncommitted(run: MergeRun, at: string | TableLocation, state: MergeState, committed: number): Promise<void> {
  const { home: location, files } = typeof at === 'string' ? { home: at, files: at } : at;
  const keys: string[] = [];
  const seq = `m${pad(state.mergeSeq + 1)}_`;
  // A catalog's location is not even listed: a table bucket (S3 Tables) serves no ListObjects, and
  // what an attempt left there is its unreferenced-file removal's to delete.
  const listed = [...new Set([location, files])].filter((l) => !outsideBucket(l));
  if (listed.length < 2 && files !== location)
    run.deps.log.debug("files of a merge attempt that did not commit, left under the catalog's location to its unreferenced-file removal", {
      location: files,
      merge: state.mergeSeq + 1,
    });
  for (const prefix of listed.flatMap((l) => [`${l}/data/${seq}`, `${l}/metadata/${seq}`, `${l}/metadata/snap-${seq}`]))
    for await (const key of run.store.list(prefix)) keys.push(key);
  // An attempt stages the next few versions (a merge, then maybe a compaction and an expiry).
  const staged = Array.from(
    { length: 10 },
    (_, i) =>
      `${location}/metadata/${String(committed + 1 + i)
        .padStart(5, '0')
        .slice(0, -1)}`,
  );
  for (const prefix of new Set([`${location}/metadata/v`, ...staged]))
    for await (const key of listKeys(run.deps.s3, run.config.bucket, prefix)) {
      const version = metadataVersion(key);
      if (version !== undefined && version > committed) keys.push(key);
    }
  if (!keys.length) return;
  run.deps.log.info('deleting Iceberg files of a merge attempt that did not commit', { location, merge: state.mergeSeq + 1, objects: keys.length });
  await run.store.delete(keys);
}

/** Rows steps as merge-on-read changes, schema steps as schema evolution; one Iceberg snapshot per rows step. */
async function incremental(
  _run: MergeRun,
  deps: { store: ReturnType<typeof s3ObjectStore>; workDir: string },
  current: TableVersion,
  history: TableHistory,
  location: TableLocation,
  from: number,
  steps: readonly ChangeStep[],
  to: number,
  duck: DuckDBConnection,
  options: (suffix: string) => { tag: string; timestampMs: number; summary: Record<string, string>; deletes: DeleteMode },
): Promise<StagedMerge> {
  let version = current;
  let at = from;
  const stats: Staged[] = [];
  for (const step of steps) {
    if (step.kind !== 'rows') continue;
    const { upserts, deletes } = stepLines(duck, step);
    const staged = await stageChanges(deps, version, spec(history, location, step.version.version, at), { upserts, deletes }, options(`-${stats.length}`));
    stats.push(staged);
    version = staged.version;
    at = step.version.version;
  }
  if (at !== to || !stats.length) {
    // A schema change after the last row (or no row at all): a snapshot with the new schema.
    const staged = await stageChanges(deps, version, spec(history, location, to, at), { upserts: [], deletes: [] }, options(`-${stats.length}`));
    stats.push(staged);
    version = staged.version;
  }
  return { version, schemaVersion: to, gone: false, mode: 'incremental', stats };
}

/** A scratch DuckDB database for one table's events (spills to disk). */
export class Duck {
  private constructor(
    private readonly instance: DuckDBInstance,
    readonly conn: DuckDBConnection,
  ) {}

  static async open(work: string): Promise<Duck> {
    const instance = await DuckDBInstance.create(join(work, 'merge.duckdb'), { temp_directory: join(work, 'spill') });
    return new Duck(instance, await instance.connect());
  }

  close(): void {
    this.conn.closeSync();
    this.instance.closeSync();
  }
}
