import { join } from 'node:path';
import { AssertionError } from '../../errors.ts';
import { fetchColumns } from '../files/columns.ts';
import { operationOf, PROPERTY, type TableVersion } from '../files/metadata.ts';
import { boundDomain, boundLiteral } from '../files/metrics.ts';
import { bucketExpression, col, Workspace } from '../files/parquet.ts';
import type { IcebergField, IcebergSchema } from '../files/schema.ts';
import { BUCKET_FILE, bucketSuffix, DEFAULT_ROWS_PER_FILE } from './keys.ts';
import { type LiveEntry, liveEntries, loadLive } from './live.ts';
import { type ChangeSet, FILE_PATH, type IcebergDeps, POS, POSITION_DELETE_FIELDS, type Staged, type StageOptions, stats, type TableSpec } from './types.ts';
import { bucketSignature, type Prepared, prepare, SnapshotWriter, writeBuckets, writeMeasured } from './writer.ts';

/* A merge's change set as a snapshot: merge-on-read for keyed tables (position or equality deletes), copy-on-write buckets for keyless ones. */

/**
 * Stages one merge: `changes` applied to `current` (undefined creates the table). Keyed tables get
 * one data file with the upserted rows (sorted by the key) and one delete file — position deletes
 * of the keys' current rows, or equality deletes on the key (`options.deletes`) — (merge on read);
 * keyless tables rewrite the hash buckets that lose rows (copy on write) and add bucket
 * files for new rows.
 */
export async function stageChanges(
  deps: IcebergDeps,
  current: TableVersion | undefined,
  spec: TableSpec,
  changes: ChangeSet,
  options: StageOptions,
): Promise<Staged> {
  const prepared = prepare(deps, current, spec, options, false);
  await using ws = await Workspace.open(deps.workDir);
  const writer = new SnapshotWriter(deps, prepared, spec, options);
  const { fields } = prepared;
  const schema = prepared.evolution.schema;
  const keyFields = fields.filter((f) => prepared.keyIds.includes(f.id));
  const upserts = await ws.spool('upserts', changes.upserts);
  const deletes = await ws.spool('deletes', changes.deletes);
  const nulled = await ws.loadJson('up', upserts.path, fields);
  await ws.loadJson('del', deletes.path, spec.key.length ? keyFields : fields);
  const live = await liveEntries(deps.store, current?.metadata);

  if (spec.key.length) {
    const keys = keyFields.map((f) => col(f.id)).join(', ');
    const changed = `SELECT ${keys} FROM up UNION ALL SELECT ${keys} FROM del`;
    const distinct = await ws.count(`SELECT DISTINCT ${keys} FROM (${changed})`);
    if (distinct !== upserts.lines + deletes.lines)
      throw new AssertionError(
        `the change set names ${upserts.lines + deletes.lines - distinct} key(s) more than once; give each key one upsert or one delete`,
      );
    await writer.addFile(await writeMeasured(ws, 'SELECT * FROM up', 'data.parquet', schema, { first: prepared.keyIds }), 'data', 0);
    // A table without data files has nothing to delete: the first load writes no delete file.
    if (live.data.length && (options.deletes ?? 'position') === 'equality') {
      const deleteSchema: IcebergSchema = {
        type: 'struct',
        'schema-id': schema['schema-id'],
        fields: keyFields.map(({ id, name, required, type }) => ({ id, name, required, type })),
      };
      const file = await writeMeasured(ws, changed, 'eq-deletes.parquet', deleteSchema, { first: prepared.keyIds });
      await writer.addFile(file, 'eq-deletes', 2, { equalityIds: prepared.keyIds });
    } else if (live.data.length) await stagePositionDeletes(deps, ws, writer, keyFields, changed, live);
    const carried = await writer.carry(live.manifests, new Set());
    const version = await writer.finish(carried, operationOf(writer.files, 0), {});
    return {
      version,
      written: writer.written,
      schema: prepared.evolution,
      stats: stats({
        rowsWritten: upserts.lines,
        deletes: deletes.lines,
        dataFiles: upserts.lines ? 1 : 0,
        deleteFiles: writer.files.length - (upserts.lines ? 1 : 0),
        nulled,
      }),
    };
  }
  // `await` here: the workspace is disposed when this function returns.
  return await stageKeyless(deps, ws, writer, prepared, live, { upserts: upserts.lines, deletes: deletes.lines, nulled });
}

/** A manifest's bounds map (avsc's array of key/value records) by field id. */
function boundsOf(map: unknown): Map<number, Uint8Array> {
  return new Map(((map as { key: number; value: Uint8Array }[] | null) ?? []).map((e) => [e.key, e.value]));
}

/** The data files whose key bounds can hold one of the keys in workspace table `chg` (files without bounds always can). */
async function candidateFiles(ws: Workspace, keyFields: readonly IcebergField[], data: readonly LiveEntry[]): Promise<LiveEntry[]> {
  const found = new Set<number>();
  const BATCH = 200;
  for (let from = 0; from < data.length; from += BATCH) {
    const parts = data.slice(from, from + BATCH).map((entry, j) => {
      const lower = boundsOf(entry.file.lower_bounds);
      const upper = boundsOf(entry.file.upper_bounds);
      const nulls = new Map(((entry.file.null_value_counts as { key: number; value: number }[] | null) ?? []).map((e) => [e.key, Number(e.value)]));
      const terms = keyFields.flatMap((f) => {
        const value = boundDomain(f.type, `k.${col(f.id)}`);
        const lo = lower.get(f.id);
        const hi = upper.get(f.id);
        const range = [...(lo ? [`${value} >= ${boundLiteral(f.type, lo)}`] : []), ...(hi ? [`${value} <= ${boundLiteral(f.type, hi)}`] : [])];
        if (!range.length) return [];
        // A key part that maps to NULL (a zero date) lies in no range: such a file is a candidate if it holds NULLs there (or does not say).
        const holdsNull = (nulls.get(f.id) ?? 1) > 0;
        return [`(${holdsNull ? `k.${col(f.id)} IS NULL OR ` : ''}(${range.join(' AND ')}))`];
      });
      return `SELECT ${from + j} AS i WHERE EXISTS (SELECT 1 FROM chg k${terms.length ? ` WHERE ${terms.join(' AND ')}` : ''})`;
    });
    for (const row of await ws.rows(parts.join(' UNION ALL '))) found.add(Number(row.i));
  }
  return data.filter((_, i) => found.has(i));
}

/**
 * Position mode: a position delete file naming the current row of every changed key (table `chg`
 * is made from `changed`). Only candidate files (key bounds that can hold a changed key) are read,
 * and of those only the key columns and the row positions; rows an existing delete already removed
 * are not current (a position delete not older than the file, an equality delete newer than it).
 */
async function stagePositionDeletes(
  deps: IcebergDeps,
  ws: Workspace,
  writer: SnapshotWriter,
  keyFields: readonly IcebergField[],
  changed: string,
  live: Awaited<ReturnType<typeof liveEntries>>,
): Promise<void> {
  const keys = keyFields.map((f) => col(f.id)).join(', ');
  await ws.run(`CREATE OR REPLACE TEMP TABLE chg AS SELECT DISTINCT ${keys} FROM (${changed})`);
  const candidates = await candidateFiles(ws, keyFields, live.data);
  if (!candidates.length) return;
  const parts = [];
  for (const [i, entry] of candidates.entries()) {
    const path = join(ws.dir, `keys-${i}.parquet`);
    await fetchColumns(
      ws,
      deps.store,
      deps.store.keyOf(entry.file.file_path),
      entry.file.file_size_in_bytes,
      keyFields.map((f) => f.id),
      path,
    );
    parts.push({ path, seq: entry.seq, uri: entry.file.file_path });
  }
  // The IN form lets DuckDB prune row groups; a key part that maps to NULL (a zero date) needs IS NOT DISTINCT FROM.
  const nullable = await ws.count(`SELECT 1 FROM chg WHERE ${keyFields.map((f) => `${col(f.id)} IS NULL`).join(' OR ')}`);
  const matching = nullable
    ? // The changed keys renamed, so that c<id> inside the subquery names the file's column.
      `EXISTS (SELECT 1 FROM (SELECT ${keyFields.map((f) => `${col(f.id)} AS "k${f.id}"`).join(', ')} FROM chg) k WHERE ${keyFields.map((f) => `k."k${f.id}" IS NOT DISTINCT FROM ${col(f.id)}`).join(' AND ')})`
    : `(${keys}) IN (SELECT ${keys} FROM chg)`;
  await ws.loadParquet('cand', parts, keyFields, { positions: true, where: matching });

  let downloads = 0;
  const download = async (entry: LiveEntry) => {
    const path = join(ws.dir, `del-${downloads++}.parquet`);
    await deps.store.getFile(deps.store.keyOf(entry.file.file_path), path);
    return { path, seq: entry.seq };
  };
  const conditions: string[] = [];
  const paths = new Set(candidates.map((c) => c.file.file_path));
  const applying = live.deletes.filter((d) => {
    if (d.file.content !== 1) return false;
    if (d.file.referenced_data_file) return paths.has(String(d.file.referenced_data_file));
    const lo = boundsOf(d.file.lower_bounds).get(FILE_PATH);
    const hi = boundsOf(d.file.upper_bounds).get(FILE_PATH);
    // Byte order, as the bounds were computed (JavaScript's < compares UTF-16 units).
    const bytes = (p: string) => Buffer.from(p, 'utf8');
    return [...paths].some((p) => (!lo || Buffer.compare(Buffer.from(lo), bytes(p)) <= 0) && (!hi || Buffer.compare(bytes(p), Buffer.from(hi)) <= 0));
  });
  if (applying.length) {
    await ws.loadParquet('pos_old', await Promise.all(applying.map(download)), POSITION_DELETE_FIELDS);
    conditions.push(`NOT EXISTS (SELECT 1 FROM pos_old p WHERE p.${col(FILE_PATH)} = t._file AND p.${col(POS)} = t._pos AND p._seq >= t._seq)`);
  }
  // Equality deletes (written in equality mode, or before position mode existed) still apply.
  const groups = new Map<string, LiveEntry[]>();
  for (const entry of live.deletes.filter((e) => e.file.content === 2)) {
    const ids = (entry.file.equality_ids ?? []).join(',');
    groups.set(ids, [...(groups.get(ids) ?? []), entry]);
  }
  let g = 0;
  for (const [ids, entries] of groups) {
    const fields = ids.split(',').map((id) => keyFields.find((f) => f.id === Number(id)));
    if (fields.some((f) => !f))
      throw new AssertionError(`equality delete files on field ids ${ids} are not on the key (${keyFields.map((f) => f.id)}): a key change rewrites the table`);
    await ws.loadParquet(`eq_${g}`, await Promise.all(entries.map(download)), fields as IcebergField[]);
    const match = (fields as IcebergField[]).map((f) => `d.${col(f.id)} IS NOT DISTINCT FROM t.${col(f.id)}`).join(' AND ');
    conditions.push(`NOT EXISTS (SELECT 1 FROM eq_${g} d WHERE d._seq > t._seq AND ${match})`);
    g++;
  }
  const rows = `SELECT t._file AS ${col(FILE_PATH)}, t._pos AS ${col(POS)} FROM cand t${conditions.length ? ` WHERE ${conditions.join(' AND ')}` : ''}`;
  await ws.run(`CREATE OR REPLACE TEMP TABLE pos_new AS ${rows}`);
  const targets = await ws.rows(`SELECT DISTINCT ${col(FILE_PATH)} AS f FROM pos_new LIMIT 2`);
  const schema: IcebergSchema = { type: 'struct', 'schema-id': 0, fields: POSITION_DELETE_FIELDS };
  const file = await writeMeasured(ws, 'SELECT * FROM pos_new', 'pos-deletes.parquet', schema, { mode: 'full' });
  await writer.addFile(file, 'pos-deletes', 1, targets.length === 1 ? { referencedDataFile: String(targets[0]?.f) } : {});
}

/** Keyless tables: multiset rows in hash buckets of all columns; a bucket that loses rows is rewritten. */
async function stageKeyless(
  deps: IcebergDeps,
  ws: Workspace,
  writer: SnapshotWriter,
  prepared: Prepared,
  live: Awaited<ReturnType<typeof liveEntries>>,
  counts: { upserts: number; deletes: number; nulled: Record<string, number> },
): Promise<Staged> {
  const schema = prepared.evolution.schema;
  const ids = schema.fields.map((f) => f.id);
  const all = ids.map(col).join(', ');
  const properties = prepared.base.metadata.properties;
  const buckets = Number(properties[PROPERTY.buckets] ?? 1);
  const bucketOf = (file: LiveEntry) => Number(BUCKET_FILE.exec(file.file.file_path)?.[1] ?? -1);
  // Buckets are only valid while rows hash the same way: same columns, no delete files, bucket files only.
  const incremental =
    prepared.base.version > 0 &&
    properties[PROPERTY.bucketFields] === bucketSignature(schema, ids) &&
    live.deletes.length === 0 &&
    live.data.every((f) => bucketOf(f) >= 0 && bucketOf(f) < buckets);
  /** Rows of `from` less one row per row of table `del` (multiset difference); returns the deletes that found no row. */
  const subtract = async (from: string, del: string) => {
    const match = ids.map((id) => `a.${col(id)} IS NOT DISTINCT FROM d.${col(id)}`).join(' AND ');
    await ws.run(
      `CREATE OR REPLACE TEMP TABLE result AS WITH a AS (SELECT *, row_number() OVER (PARTITION BY ${all}) AS _n FROM (${from})), ` +
        `d AS (SELECT ${all}, count(*) AS _k FROM ${del} GROUP BY ALL) SELECT ${ids.map((id) => `a.${col(id)}`).join(', ')} FROM a LEFT JOIN d ON ${match} WHERE a._n > coalesce(d._k, 0)`,
    );
    const removed = (await ws.count(from)) - (await ws.count('SELECT * FROM result'));
    return (await ws.count(`SELECT * FROM ${del}`)) - removed;
  };
  const done = async (version: TableVersion, unmatchedDeletes: number): Promise<Staged> => ({
    version,
    written: writer.written,
    schema: prepared.evolution,
    stats: stats({ rowsWritten: counts.upserts, deletes: counts.deletes, dataFiles: writer.files.length, nulled: counts.nulled, unmatchedDeletes }),
  });

  if (!incremental) {
    await loadLive(ws, deps.store, prepared.base.metadata, schema.fields, live);
    const unmatched = await subtract('SELECT * FROM live UNION ALL SELECT * FROM up', 'del');
    const { buckets: laid, layout } = await writeBuckets(ws, writer, schema, 'SELECT * FROM result', ids, DEFAULT_ROWS_PER_FILE);
    const version = await writer.finish([], operationOf(writer.files, live.data.length + live.deletes.length), {
      properties: { [PROPERTY.buckets]: String(laid), [PROPERTY.bucketFields]: layout },
      removed: live.data.length + live.deletes.length,
    });
    return done(version, unmatched);
  }

  const bucket = bucketExpression(ids, buckets);
  const touched = (await ws.rows(`SELECT DISTINCT ${bucket} AS b FROM del ORDER BY b`)).map((r) => Number(r.b));
  const added = (await ws.rows(`SELECT DISTINCT ${bucket} AS b FROM up ORDER BY b`)).map((r) => Number(r.b));
  const removed = new Set<string>();
  let unmatched = 0;
  for (const b of touched) {
    const files = live.data.filter((f) => bucketOf(f) === b);
    await loadLive(ws, deps.store, prepared.base.metadata, schema.fields, { manifests: [], data: files, deletes: [] });
    await ws.run(`CREATE OR REPLACE TEMP TABLE bucket_del AS SELECT * FROM del WHERE ${bucket} = ${b}`);
    unmatched += await subtract(`SELECT * FROM live UNION ALL SELECT * FROM up WHERE ${bucket} = ${b}`, 'bucket_del');
    await writer.addFile(await writeMeasured(ws, 'SELECT * FROM result', `${bucketSuffix(b)}.parquet`, schema), bucketSuffix(b), 0);
    for (const file of files) removed.add(file.file.file_path);
  }
  for (const b of added.filter((b) => !touched.includes(b)))
    await writer.addFile(await writeMeasured(ws, `SELECT * FROM up WHERE ${bucket} = ${b}`, `${bucketSuffix(b)}.parquet`, schema), bucketSuffix(b), 0);
  const carried = await writer.carry(live.manifests, removed);
  const version = await writer.finish(carried, operationOf(writer.files, removed.size), { removed: removed.size });
  return done(version, unmatched);
}
