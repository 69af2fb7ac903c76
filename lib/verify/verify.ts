import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { type Config, tableFilter } from '../config/config.ts';
import { type BinlogPosition, formatPosition } from '../core/position.ts';
import { formatTableRef, fromTableKey, type TableRef, tableKey } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { seqAfter } from '../format/seq.ts';
import { sqlString } from '../materialize/projection.ts';
import { type Materialized, materializeRule } from '../materialize/rule.ts';
import { loadTable, type OutputSource, type OutputTable, outputTables, tableDir } from '../materialize/table.ts';
import { dialectOf } from '../source/mysql/dialect/dialect.ts';
import { BinlogHistories } from '../source/mysql/history.ts';
import { listTables } from '../source/mysql/schema.ts';
import { serverTraits } from '../source/mysql/schema-read.ts';
import { type PagingConnection, pagingConnection } from '../source/mysql/snapshot-reader.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SnapshotStore } from '../state/snapshot-store.ts';
import type { StateStore } from '../state/store.ts';
import { compareTable, loadSkipped, type TableVerdict } from './compare.ts';
import { readAtKnownPosition, writeChanges, writeTableRows } from './mysql-read.ts';

/*
 * `sluice verify`: does S3 hold exactly what MySQL holds?
 *
 * Method, safe on a live source. The output's stored position O is read first, then the committed
 * manifests are listed (so the output holds at least every change up to O), then MySQL is read
 * inside one consistent-snapshot transaction whose binlog position S the server reports (MariaDB:
 * binlog_snapshot_file/position; S is after every listed commit). The output is materialized by
 * the format's rule (lib/materialize). A key is compared only if both sides reflect the same point
 * in its history: keys changed between O and S (found by scanning the binlog from O to S) are
 * skipped — the output has not caught up with them; every other key's last change lies before both
 * points, so the two sides must agree exactly.
 *
 * Keyless tables are multisets of rows: a row value (all copies) that a change between O and S
 * wrote or removed is skipped on both sides. Any other row value v had no change in the window, so
 * its count at O (the output) equals its count at S (MySQL), and the multisets must agree on it.
 *
 * A DDL between O and S that touches a table (other than index/comment-like ones) changes what
 * MySQL's structure or rows mean relative to the output's current version: that table is reported
 * as `changing` and not compared (run verify again once the output has caught up). A statement
 * the classifier cannot attribute makes every table `changing`.
 *
 * Findings beyond rows: a column MySQL has that the output's current version lacks (or the
 * reverse, or another column order); output rows for a table that no longer exists or is no
 * longer included (`orphans`). A truncated or dropped table still holding rows shows as extra
 * rows or an orphan, by the rule. Only the objects of the tables checked are read, each table in
 * turn, spilled to disk by DuckDB.
 *
 *   compare.ts     the per-table comparison   mysql-read.ts   read MySQL at S, what changed from O to S
 *   verify.ts      the steps, in order
 */

export type { TableVerdict } from './compare.ts';

/** Output rows for a table that MySQL no longer has, or that is no longer included. */
export interface Orphan {
  /** The table as text (`formatTableRef`), for people. */
  table: string;
  ref: TableRef;
  rows: number;
  reason: 'does not exist' | 'not included';
}

export interface Verdict {
  ok: boolean;
  mysqlPosition: BinlogPosition;
  outputPosition?: BinlogPosition;
  tables: TableVerdict[];
  orphans: Orphan[];
  /** Tables found only in the output that could not be judged (a DDL between O and S touched them). */
  changing: string[];
}

/** A table with a difference of any kind. */
export const tableFails = (t: TableVerdict) =>
  t.status === 'compared' && (t.missing + t.extra + t.differing > 0 || t.missingColumns.length > 0 || t.extraColumns.length > 0 || t.columnOrderDiffers);

export async function verify(
  deps: { config: Config; s3: S3Client; store: StateStore; snapshots?: SnapshotStore },
  options: { tables?: readonly TableRef[]; examples?: number; workDir?: string } = {},
): Promise<Verdict> {
  const { config, s3 } = deps;
  const running = (await deps.snapshots?.activeJobs(config.sourceId)) ?? [];
  if (running.length) {
    throw new SluiceError(
      ErrorCode.VERIFY_SNAPSHOT_RUNNING,
      `snapshot ${running.map((j) => j.id).join(', ')} is still copying; verify once it completes (sluice status shows its progress), because its pages may see changes newer than the comparison point`,
    );
  }
  const work = options.workDir ?? mkdtempSync(join(tmpdir(), 'sluice-verify-'));
  const db = await DuckDBInstance.create(join(work, 'verify.duckdb'), { temp_directory: join(work, 'spill'), memory_limit: '512MB' });
  const duck = await db.connect();
  const target = await mysqlTarget(config);
  const reader = pagingConnection(target);
  try {
    await reader.init();
    // 1. The output's position, then what it holds (every change up to O is listed). O must be on
    // the server's binlog history (POSITION_FOREIGN otherwise, as capture would say): S, read
    // later, is then in O's history epoch and every event of the output sorts at or before it.
    const stored = await deps.store.get(config.sourceId);
    const outputPosition = stored?.position;
    const epoch = stored?.epoch ?? 0;
    if (stored?.position) await new BinlogHistories(stored).checkStored(reader.sql);
    const source: OutputSource = { s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId };
    const output = await outputTables(source);

    // 2. MySQL, at one binlog position the server's dialect pins for the tables read (dialect.ts
    // `snapshotPoint`: a consistent snapshot, or read locks on them, so they are listed first).
    const included = tableFilter(config);
    const existing = new Set((await listTables(reader.sql, () => true)).map(tableKey));
    const live = new Set((await listTables(reader.sql, included)).map(tableKey));
    const names: readonly TableRef[] = options.tables?.length ? options.tables : [...new Set([...live, ...output.keys()])].map(fromTableKey);
    const read = await readAtKnownPosition(
      reader,
      names.filter((ref) => live.has(tableKey(ref))),
    );
    const mysqlPosition = read.position;

    // 3. What changed between the output's position and S: keys and rows to skip, tables a DDL touched.
    const changesFile = join(work, 'changes.txt');
    const changing = await writeChanges(
      target,
      { from: outputPosition, to: mysqlPosition },
      new Set(names.map(tableKey)),
      changesFile,
      await serverTraits(reader.sql, await dialectOf(reader.sql)),
    );
    await loadSkipped(duck, changesFile, changing.longest);

    // 4. Table by table: only its own objects are read.
    const judged: Judged = { tables: [], orphans: [], unjudged: [] };
    const judging: Judging = { duck, source, reader, work, epoch, mysqlPosition, examples: options.examples ?? 5 };
    for (const [n, ref] of names.entries()) {
      const key = tableKey(ref);
      const inFlux = changing.all || changing.ddl.has(key);
      await judgeTable(judging, { n, ref, output: output.get(key), live: live.has(key), exists: existing.has(key), inFlux }, judged);
    }
    const { tables, orphans, unjudged } = judged;
    await read.end();
    return { ok: !tables.some(tableFails) && orphans.length === 0, mysqlPosition, outputPosition, tables, orphans, changing: unjudged };
  } finally {
    await reader.end();
    duck.closeSync();
    db.closeSync();
    if (!options.workDir) rmSync(work, { recursive: true, force: true });
  }
}

/** What verify has judged so far. */
interface Judged {
  tables: TableVerdict[];
  orphans: Orphan[];
  /** Tables found only in the output that could not be judged. */
  unjudged: string[];
}

/** What every table's judgment reads. */
interface Judging {
  readonly duck: DuckDBConnection;
  readonly source: OutputSource;
  readonly reader: PagingConnection;
  readonly work: string;
  readonly epoch: number;
  readonly mysqlPosition: BinlogPosition;
  readonly examples: number;
}

/** Judges table number `n`: its output by the rule against MySQL's rows, or as an orphan or in flux. */
async function judgeTable(
  judging: Judging,
  table: { n: number; ref: TableRef; output: OutputTable | undefined; live: boolean; exists: boolean; inFlux: boolean },
  judged: Judged,
): Promise<void> {
  const { duck, source, reader, work, epoch, mysqlPosition } = judging;
  const { n, ref, inFlux } = table;
  const dir = tableDir(work, n);
  const materialized = inFlux ? undefined : await materialize(duck, source, table.output, dir, { epoch, position: mysqlPosition });
  if (typeof materialized === 'number')
    throw new SluiceError(
      ErrorCode.VERIFY_ORDER,
      `the output holds ${materialized} event(s) of ${formatTableRef(ref)} that sort after the MySQL read (${formatPosition(mysqlPosition)}${epoch ? `, history epoch ${epoch}` : ''}), although the stored position was read before it: the source's position was moved while verify ran (run it again), or the output's order is broken. Nothing was judged.`,
    );
  if (!table.live) {
    if (inFlux) judged.unjudged.push(formatTableRef(ref));
    else if (materialized && !materialized.gone && materialized.rows > 0)
      judged.orphans.push({ table: formatTableRef(ref), ref, rows: materialized.rows, reason: table.exists ? 'not included' : 'does not exist' });
  } else if (inFlux) {
    judged.tables.push(changingVerdict(ref, 'a DDL between the output position and the MySQL read touched it; verify again once the output has caught up'));
  } else {
    const mysqlFile = join(work, `mysql-${n}.txt`);
    const version = materialized?.version;
    const mysql = await writeTableRows(reader, ref, version ? version.key : null, mysqlFile);
    judged.tables.push(
      await compareTable(duck, {
        ref,
        mysql: { file: mysqlFile, ...mysql },
        output:
          materialized && version
            ? {
                state: materialized.state,
                version: version.version,
                columns: version.columns.map((c) => c.name),
                key: version.key,
                versioned: materialized.versioned,
                rows: materialized.rows,
              }
            : undefined,
        examples: judging.examples,
      }),
    );
    rmSync(mysqlFile, { force: true });
  }
  rmSync(dir, { recursive: true, force: true });
}

/** The output of one table by the rule, or how many of its events sort after the MySQL read (none when O is read first and nothing moved it). */
async function materialize(
  duck: DuckDBConnection,
  source: OutputSource,
  entry: OutputTable | undefined,
  dir: string,
  at: { epoch: number; position: BinlogPosition },
): Promise<(Materialized & { versioned: boolean }) | number | undefined> {
  if (!entry) return undefined;
  const loaded = await loadTable(source, entry, duck, dir, 'o');
  if (!loaded) return undefined;
  const [late] = (await duck.runAndReadAll(`SELECT count(*) AS n FROM o_ev WHERE seq > ${sqlString(seqAfter(at.epoch, at.position))}`)).getRowObjects();
  if (Number(late?.n)) return Number(late?.n);
  return { ...(await materializeRule(duck, loaded.history, 'o_ev', 'o')), versioned: loaded.history.versioned };
}

function changingVerdict(ref: TableRef, note: string): TableVerdict {
  return {
    table: formatTableRef(ref),
    ref,
    status: 'changing',
    keyed: false,
    schemaVersion: null,
    mysqlRows: 0,
    outputRows: 0,
    compared: 0,
    skipped: 0,
    missing: 0,
    extra: 0,
    differing: 0,
    missingColumns: [],
    extraColumns: [],
    columnOrderDiffers: false,
    note,
    examples: { missing: [], extra: [], differing: [] },
  };
}
