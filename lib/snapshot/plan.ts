import { randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Faults } from '../commit/faults.ts';
import { type Config, keyColumn, tableFilter } from '../config/config.ts';
import type { KeyValues } from '../core/key-values.ts';
import type { BinlogPosition } from '../core/position.ts';
import { tablePath } from '../core/table-path.ts';
import { formatTableRef, type TableRef } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import type { Log } from '../log.ts';
import { listTables, ROW_TABLE_TYPES, type TableInfo, tableInfo, tableIsGone } from '../source/mysql/schema.ts';
import { readTableVersion } from '../source/mysql/schema-read.ts';
import { connect, masterPosition, type SqlConnection } from '../source/mysql/server.ts';
import { keyAtOffset, lastKey } from '../source/mysql/snapshot-reader.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { PlannedTable, SnapshotJob, SnapshotStore } from '../state/snapshot-store.ts';
import type { SnapshotRequest, StateStore } from '../state/store.ts';

export interface SnapshotDeps {
  readonly config: Config;
  readonly s3: S3Client;
  readonly snapshots: SnapshotStore;
  /** The source's state: the schema catalog a page's version is taken from. */
  readonly store: StateStore;
  readonly log: Log;
  readonly clock?: () => number;
  readonly faults?: Faults;
  /**
   * Rows go from the wire into the staging buffers as bytes where the table's columns allow
   * (lib/snapshot/page-lines.ts); false sends every row through mysql2's row objects, the reference
   * path the tests compare with.
   */
  readonly rowLines?: boolean;
}

const jobId = (now: number) =>
  `${new Date(now)
    .toISOString()
    .replace(/[-:TZ.]/g, '')
    .slice(0, 14)}-${randomUUID().slice(0, 4)}`;

/** Records a snapshot request (all included tables, or `tables`), with the binlog position before it. */
export async function requestSnapshot(
  deps: Pick<SnapshotDeps, 'config' | 'snapshots' | 'log' | 'clock'>,
  tables: readonly TableRef[] | null,
  startPosition?: BinlogPosition,
): Promise<SnapshotJob> {
  const now = (deps.clock ?? Date.now)();
  // Jobs may run side by side (each worker carries its job's id): rows of a table copied twice
  // merge by seq, the later copy's rows winning.
  let position = startPosition;
  if (!position || tables) {
    const conn = await connect(await mysqlTarget(deps.config));
    try {
      // A name that does not exist is a mistake in the request; one that vanishes later was dropped or renamed.
      if (tables) await requireTables(conn, deps.config, tables);
      position ??= await masterPosition(conn);
    } finally {
      await conn.end();
    }
  }
  const job: SnapshotJob = { sourceId: deps.config.sourceId, id: jobId(now), createdAt: now, requested: tables, status: 'requested', startPosition: position };
  await deps.snapshots.createJob(job);
  deps.log.info('snapshot requested', { snapshot: job.id, tables: tables?.map(formatTableRef) ?? 'all included' });
  return job;
}

/**
 * Refuses a request naming anything but captured base tables (a table that does not exist, a view,
 * a table the filters exclude — its rows would never be kept up to date), naming each, before
 * anything is recorded.
 */
async function requireTables(conn: SqlConnection, config: Config, tables: readonly TableRef[]): Promise<void> {
  const accept = tableFilter(config);
  const problems: string[] = [];
  for (const table of tables) {
    const [found] = await conn.query('SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?', [table.db, table.table]);
    const type = (found as { TABLE_TYPE: string }[])[0]?.TABLE_TYPE;
    if (!type)
      problems.push(
        `${formatTableRef(table)}: no such table, or the sluice user cannot see it (check the name's quoting, or GRANT SELECT ON <db>.* TO the sluice user)`,
      );
    else if (!ROW_TABLE_TYPES.includes(type))
      problems.push(
        `${formatTableRef(table)}: a ${type.toLowerCase()} (information_schema TABLE_TYPE), not a base table; the snapshot copies base tables only`,
      );
    else if (!accept(table.db, table.table))
      problems.push(
        `${formatTableRef(table)}: excluded by SLUICE_INCLUDE/SLUICE_EXCLUDE, so the poller would not keep its copy current; change the filters first`,
      );
  }
  if (problems.length) throw new SluiceError(ErrorCode.TABLE_NOT_FOUND, `cannot snapshot:\n  ${problems.join('\n  ')}\nNothing was recorded.`);
}

/**
 * The snapshot job a poller commit asked for (a table renamed into the set, a re-snapshot after
 * DDL, a table the filters now include): created once under the id the commit fixed, so a
 * roll-forward that runs again creates nothing. Returns the job when this call created it.
 */
export async function requestJob(
  deps: Pick<SnapshotDeps, 'config' | 'snapshots' | 'log' | 'clock'>,
  request: SnapshotRequest,
): Promise<SnapshotJob | undefined> {
  const job: SnapshotJob = {
    sourceId: deps.config.sourceId,
    id: request.id,
    createdAt: (deps.clock ?? Date.now)(),
    requested: request.tables.map(({ db, table }) => ({ db, table })),
    status: 'requested',
    startPosition: request.startPosition,
    reason: request.reason,
  };
  if (!(await deps.snapshots.createJob(job))) return undefined;
  deps.log.info('snapshot requested', { snapshot: job.id, tables: request.tables.length, reason: request.reason });
  return job;
}

/** Which snapshots to work on: a new one of `tables` or of every included table (`all`), or the unfinished ones (`pending`). */
export type SnapshotChoice = { readonly tables: readonly TableRef[] } | 'all' | 'pending';

/**
 * The snapshots to work on. `pending` gives the unfinished ones (the initial copy, re-snapshots DDL
 * asked for), possibly none: a new copy of every table is never started unless asked for (`all`).
 */
export async function snapshotsToRun(deps: SnapshotDeps, choice: SnapshotChoice): Promise<SnapshotJob[]> {
  if (choice === 'all') return [await requestSnapshot(deps, null)];
  if (choice !== 'pending') return [await requestSnapshot(deps, choice.tables)];
  return deps.snapshots.activeJobs(deps.config.sourceId);
}

/**
 * A table as the snapshot reads it, paged by its row identity: the primary key, else the
 * `SLUICE_KEY_COLUMNS` column, else the UNIQUE NOT NULL key MariaDB identifies rows by (the key the
 * binlog events carry, from the table's schema version). A table with none is read whole.
 */
export async function snapshotTableInfo(conn: SqlConnection, config: Config, table: TableRef): Promise<TableInfo> {
  const configured = keyColumn(config, table);
  const info = await tableInfo(conn, table.db, table.table, configured);
  if (info.key.length || configured) return info;
  const identity = (await readTableVersion(conn, table, undefined))?.key;
  return identity?.length ? tableInfo(conn, table.db, table.table, undefined, identity) : info;
}

/** Splits every requested table into key ranges; of planners racing on one job, one plan wins whole (markPlanned) and every planner returns it. */
export async function planSnapshot(deps: SnapshotDeps, job: SnapshotJob): Promise<SnapshotJob> {
  if (job.status !== 'requested') return job;
  const { config, snapshots } = deps;
  const conn = await connect(await mysqlTarget(config));
  try {
    const accept = tableFilter(config);
    const names = job.requested ?? (await listTables(conn, accept));
    const infos: TableInfo[] = [];
    const refused: string[] = [];
    for (const { db, table } of names) {
      try {
        infos.push(await snapshotTableInfo(conn, config, { db, table }));
      } catch (error) {
        if (!(error instanceof SluiceError)) throw error;
        // Dropped or renamed away since the request (which checked it existed): the poller retracts
        // its rows with the DDL's reset, and a table renamed into the set gets a job of its own.
        if (error.code === ErrorCode.TABLE_NOT_FOUND && (await tableIsGone(conn, { db, table })))
          deps.log.warn('snapshot leaves out a table that no longer exists', { snapshot: job.id, table: formatTableRef({ db, table }) });
        else refused.push(error.message);
      }
    }
    if (refused.length) throw new SluiceError(ErrorCode.SNAPSHOT_REFUSED, `snapshot refused, nothing was copied:\n  ${refused.join('\n  ')}`);
    const planned: PlannedTable[] = [];
    // Planners may race on one job (several workers start at once), each reading the table at its
    // own moment, so their chunk boundaries differ. Chunks are named by this planner's attempt and
    // only the plan that wins markPlanned is ever read, so no job mixes two planners' boundaries
    // (which could leave a key range between them unread). A losing attempt's chunks are unused.
    const attempt = randomUUID().slice(0, 8);
    for (const info of infos) {
      const id = `${tablePath(info)}@${attempt}`;
      if (!info.key.length) {
        // No key to page by: one chunk, read whole at one point (lib/snapshot/worker.ts).
        await snapshots.putChunk(config.sourceId, job.id, { table: id, n: 0, lo: null, hi: null });
        planned.push({ db: info.db, table: info.table, id, chunks: 1, estimatedRows: info.estimatedRows, key: [] });
        continue;
      }
      const bounds: KeyValues[] = [];
      let boundary = await keyAtOffset(conn, info, null, config.snapshot.chunkRows);
      while (boundary) {
        bounds.push(boundary);
        boundary = await keyAtOffset(conn, info, boundary, config.snapshot.chunkRows);
      }
      const max = await lastKey(conn, info);
      const his: (KeyValues | null)[] = [...bounds.filter((b) => JSON.stringify(b) !== JSON.stringify(max)), max];
      for (const [n, hi] of his.entries()) await snapshots.putChunk(config.sourceId, job.id, { table: id, n, lo: n === 0 ? null : (his[n - 1] ?? null), hi });
      planned.push({ db: info.db, table: info.table, id, chunks: his.length, estimatedRows: info.estimatedRows, key: info.key });
    }
    const result = await snapshots.markPlanned(config.sourceId, job.id, planned);
    deps.log.info('snapshot planned', { snapshot: job.id, tables: planned.length, chunks: planned.reduce((a, t) => a + t.chunks, 0) });
    return result;
  } finally {
    await conn.end();
  }
}
