import { randomUUID } from 'node:crypto';
import { noFaults } from '../commit/faults.ts';
import { acquireLease, chunkLease, type Lease } from '../commit/lease.ts';
import { chunkLedger } from '../commit/ledgers.ts';
import { advance, type CommitContext, type CommitTarget, commitStaged, recover, rollForward, stage } from '../commit/protocol.ts';
import type { Config } from '../config/config.ts';
import { type KeyValues, plainKeyValues } from '../core/key-values.ts';
import type { BinlogPosition } from '../core/position.ts';
import { formatTableRef, type TableRef } from '../core/table-ref.ts';
import { ErrorCode, isFatal, SluiceError } from '../errors.ts';
import { type EncodedShape, encodeShape, encodeSource, markerLine } from '../format/event.ts';
import { epochField } from '../format/manifest.ts';
import { snapshotPagePrefix, snapshotSeq } from '../format/seq.ts';
import type { SchemaVersion } from '../schema/version.ts';
import { Batch } from '../sink/s3/batch.ts';
import { chunkStaging, pad, snapshotDataKey, snapshotManifestKey } from '../sink/s3/keys.ts';
import { dialectOf } from '../source/mysql/dialect/dialect.ts';
import type { TableInfo } from '../source/mysql/schema.ts';
import { pagingConnection } from '../source/mysql/snapshot-reader.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import { type ChunkState, chunkId, type PlannedTable, type SnapshotJob } from '../state/snapshot-store.ts';
import { PageLines } from './page-lines.ts';
import { PageSchema } from './page-schema.ts';
import { planSnapshot, type SnapshotDeps, snapshotTableInfo } from './plan.ts';
import { allChunksDone } from './progress.ts';

/*
 * Snapshot: each table's rows, paged by ascending key, committed page by page through the commit
 * protocol (lib/commit/protocol.ts) with a chunk as its ledger: stage → one fenced write moving the
 * chunk's cursor and recording the renames → copy, the whole commit of page N overlapping the read
 * of N+1 (N+1 is read after N's last key, which is known once N is read; it commits after N).
 *
 * Ordering contract. Before each page we read a settled binlog end L (the low watermark: every
 * transaction before L has committed in the engine, dialect.ts `settledEnd`), then SELECT the page,
 * which therefore sees every transaction before L. Not the plain binlog end: a group commit writes
 * the binlog before it commits in the engine, and a page read in between kept the older row under a
 * seq above the change (issue #30; compressed transactions on MySQL widen that window). Its rows get
 * seq prefix F(L).P(L) (lib/format/seq.ts). Every transaction before L has its first event ending
 * before P(L) in F(L) (or in an earlier file), every transaction after L has it ending after P(L)
 * (transactions are written whole, a compressed one as its GTID event and one payload event), so
 * no binlog event shares the prefix:
 *   - a change before L sorts before the snapshot row, which reflects it (or a later state);
 *   - a change after L sorts after it and is captured by the poller, whose position is ≤ L.
 * So "greatest seq per key wins" yields the table's current state. Rows inserted after planning
 * beyond the last chunk's upper bound (the max key at plan time) were inserted after the poller's
 * start, so the binlog carries them (that start is a settled end too, so the plan saw every row
 * inserted before it).
 */

export interface WorkerResult {
  snapshot: string;
  pages: number;
  rows: number;
  /** Of `rows`, those written from the wire as bytes (lib/snapshot/page-lines.ts); the others went through row objects. */
  wireRows: number;
  chunksFinished: number;
  /** True when every chunk of the job is done. */
  complete: boolean;
  /** True when this worker stopped for time with unfinished work it could have claimed. */
  timedOut: boolean;
}

/**
 * One worker: claims unfinished chunks one at a time and pages through them until done or out of
 * time (then it stops after the page in flight; the next worker resumes at the chunk's cursor).
 * A fatal error is recorded on the job for `sluice status`.
 */
export async function runSnapshotWorker(deps: SnapshotDeps, options: { budgetMs: number; snapshotId?: string; workerId?: string }): Promise<WorkerResult> {
  const { config, snapshots } = deps;
  const clock = deps.clock ?? Date.now;
  let job = options.snapshotId ? await snapshots.job(config.sourceId, options.snapshotId) : await snapshots.latestJob(config.sourceId);
  if (!job)
    throw new SluiceError(
      ErrorCode.SNAPSHOT_NONE,
      `source ${config.sourceId} has no snapshot request; start one with \`sluice snapshot --all\` (or \`--tables db.t,…\`)`,
    );
  try {
    job = await planSnapshot(deps, job);
    return await copyJob(deps, job, options.budgetMs, options.workerId ?? randomUUID(), clock);
  } catch (error) {
    if (isFatal(error)) await snapshots.recordError(config.sourceId, job.id, { code: error.code, message: error.message }, clock()).catch(() => {});
    throw error;
  }
}

async function copyJob(deps: SnapshotDeps, job: SnapshotJob, budgetMs: number, owner: string, clock: () => number): Promise<WorkerResult> {
  const { config, snapshots } = deps;
  const leaseExpires = clock() + budgetMs;
  const softDeadline = leaseExpires - config.safetyMarginMs;
  const result: WorkerResult = { snapshot: job.id, pages: 0, rows: 0, wireRows: 0, chunksFinished: 0, complete: false, timedOut: false };
  const reader = pagingConnection(await mysqlTarget(config));
  await reader.init();
  const ctx: CommitContext = { s3: deps.s3, bucket: config.bucket, faults: deps.faults ?? noFaults, log: deps.log, clock };
  const schema = new PageSchema({ s3: deps.s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId, store: deps.store });
  try {
    let remaining = 0;
    for (const table of job.tables ?? []) {
      let reading = await readTable(reader, config, table, schema).catch(unlessGone);
      for (let n = 0; n < table.chunks; n++) {
        const current = await snapshots.chunk(config.sourceId, job.id, table.id, n);
        // A chunk whose last page committed but whose renames did not finish is still work.
        if (!current || (current.done && !current.pending)) continue;
        if (clock() >= softDeadline) {
          remaining++;
          result.timedOut = true;
          continue;
        }
        // No heartbeat: every page commit renews the chunk's lease (chunkLedger), never past this worker's.
        const lease = await acquireLease(chunkLease(snapshots, job, table.id, n), { owner, clock, leaseMs: config.snapshot.leaseMs, deadline: leaseExpires });
        if ('busy' in lease) {
          remaining++;
          continue;
        }
        let chunk = lease.held;
        try {
          if (reading) {
            const copy: TableCopy = { deps, ctx, job, planned: table, reading, reader, schema, softDeadline, result };
            chunk = await (reading.info.key.length ? copyChunk : copyWhole)(copy, lease).catch(async (error) => {
              reading = unlessGone(error);
              // Pages may have committed before the table went: go on from the chunk as stored.
              return (await snapshots.chunk(config.sourceId, job.id, table.id, n)) ?? chunk;
            });
          }
          if (!reading) chunk = await skipGone(deps, ctx, job, lease, chunk);
          if (chunk.done) result.chunksFinished++;
          else {
            remaining++;
            result.timedOut = true;
          }
        } finally {
          await lease.release();
        }
      }
    }
    // Chunks other workers held while we passed them may be done by now: decide on a fresh read.
    result.complete = remaining === 0 || (await allChunksDone(snapshots, job));
    if (result.complete && job.status !== 'done') await snapshots.markDone(config.sourceId, job.id, clock());
    return result;
  } finally {
    await reader.end();
  }
}

/** A table the job was planned with that no longer exists: `undefined`; any other error is rethrown. */
function unlessGone(error: unknown): undefined {
  if (error instanceof SluiceError && error.code === ErrorCode.TABLE_NOT_FOUND) return undefined;
  throw error;
}

/**
 * A chunk of a table dropped or renamed away since the job was planned: done without reading. The
 * DDL that removed the table is in the binlog after every page read so far, so the poller writes
 * its reset (`t drop`, `t rename-out`) after them and readers drop those rows anyway; a table
 * renamed into the captured set gets a snapshot of its own.
 */
async function skipGone(deps: SnapshotDeps, ctx: CommitContext, job: SnapshotJob, lease: Lease<ChunkState>, current: ChunkState): Promise<ChunkState> {
  const { ledger, stagingRoot, id } = chunkWork(deps, job, lease, ctx.clock);
  const chunk = await recover(ctx, ledger, current, stagingRoot);
  if (chunk.done) return chunk;
  deps.log.warn('snapshot skips a table that no longer exists (dropped or renamed)', { snapshot: job.id, chunk: id });
  return advance(ledger, chunk, { cursor: chunk.cursor, rows: 0, done: true });
}

/** What copying a chunk of one table needs besides the chunk: the same for all of its chunks in a worker's run. */
interface TableCopy {
  readonly deps: SnapshotDeps;
  readonly ctx: CommitContext;
  readonly job: SnapshotJob;
  readonly planned: PlannedTable;
  /** Updated in place when the table's structure changed (readTable again). */
  readonly reading: TableReading;
  readonly reader: ReturnType<typeof pagingConnection>;
  readonly schema: PageSchema;
  /** Stop starting pages (the worker's budget less the safety margin). */
  readonly softDeadline: number;
  readonly result: WorkerResult;
}

/**
 * How the worker reads a table: `info` (the columns its SELECT names, the key it pages by) and the
 * structure that was current when `info` was read. A page is read only while the table still has
 * that structure; after a DDL, `info` is read again.
 */
interface TableReading {
  info: TableInfo;
  structure: string | undefined;
}

/** Reads a table's `info` between two equal reads of its structure, so no DDL slipped in between. */
async function readTable(
  reader: ReturnType<typeof pagingConnection>,
  config: SnapshotDeps['config'],
  table: TableRef,
  schema: PageSchema,
): Promise<TableReading> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const before = await schema.structureOf(reader.sql, table);
    const info = await snapshotTableInfo(reader.sql, config, table);
    if ((await schema.structureOf(reader.sql, table)) === before) return { info, structure: before };
  }
  throw new SluiceError(
    ErrorCode.SNAPSHOT_TABLE_CHANGING,
    `${formatTableRef(table)} changed structure during each of 10 reads of it; the next run tries again`,
    {
      retriable: true,
    },
  );
}

/**
 * Pages through one claimed chunk until it is done or the soft deadline passes. When the table's
 * key is no longer the one the job was planned with (a DDL changed it), the chunk's bounds and
 * cursor mean nothing under the new key: the chunk then copies the whole table by the new key from
 * the start, keeping its progress only in memory (a keyed table's rows read twice merge by seq).
 */
async function copyChunk(copy: TableCopy, lease: Lease<ChunkState>, claimed: ChunkState = lease.held): Promise<ChunkState> {
  const { deps, ctx, job, planned, reading, reader, schema, softDeadline, result } = copy;
  const { owner } = lease;
  const { config } = deps;
  const clock = ctx.clock;
  const { ledger, stagingRoot, id } = chunkWork(deps, job, lease, clock);
  // Roll forward a page committed by a worker that died before its renames, then drop its leftovers.
  let chunk = await recover(ctx, ledger, claimed, stagingRoot);

  // A page commits (stage → the fenced write → renames) while the next page is read: `committing`
  // is that page on its way. It must be settled (renames done, pending cleared) before the next
  // page commits, which the ledger's no-pending condition enforces anyway; `next` is where the
  // next page starts, ahead of `chunk` meanwhile.
  let committing: Promise<void> | undefined;
  const settle = async () => {
    const pending = committing;
    committing = undefined;
    if (pending) await pending;
  };
  let next = { page: chunk.pages + 1, cursor: chunk.cursor, done: chunk.done };
  // Progress of a whole-table copy (the key changed since planning): never stored in the chunk.
  let wholeCursor: KeyValues | null = null;
  try {
    while (!next.done && clock() < softDeadline) {
      const page = next.page;
      const before = await schema.structureOf(reader.sql, reading.info);
      if (before !== reading.structure) {
        Object.assign(reading, await readTable(reader, config, reading.info, schema));
        wholeCursor = null;
        continue;
      }
      const info = reading.info;
      if (!info.key.length) {
        await settle();
        return copyWhole(copy, lease, chunk);
      }
      const whole = !sameNames(info.key, planned.key);
      const stored = await schema.epoch();
      const at = schema.place(stored, await (await dialectOf(reader.sql)).settledEnd(reader.sql, [info]));
      const { epoch, watermark } = at;
      const shape = shapeOf(info, await schema.versionAt(info, before, at));
      const prefix = snapshotPagePrefix(epoch, watermark, job.id, claimed.table, claimed.n, page);
      const source = encodeSource({
        file: watermark.file,
        pos: watermark.pos,
        gtid: null,
        serverId: null,
        tsMs: clock(),
        txn: `snapshot:${job.id}`,
        snapshot: true,
      });
      const batch = new Batch(ctx.s3, ctx.bucket, `${stagingRoot}${owner}/${pad(page, 8)}/`, clock());
      const from = whole ? wholeCursor : (next.cursor ?? chunk.lo);
      const lines = new PageLines(batch, shape, source, prefix, { bytes: deps.rowLines !== false });
      const failed = await reader.read(info, from, whole ? null : chunk.hi, config.snapshot.pageRows, lines).then(
        () => undefined,
        async (error: unknown) => {
          await batch.abort(); // first: the structure read below fails too when the connection is lost
          return { error };
        },
      );
      if ((await schema.structureOf(reader.sql, info)) !== before) {
        // The table changed while the page was read (or went, failing the read): read it again
        // under the version then in effect (or end the chunk, the table gone).
        if (!failed) await batch.abort();
        continue;
      }
      if (failed) throw failed.error;
      lines.finish();
      const { count, wireRows } = lines;
      const last = lines.lastKey(info.key);
      const done = count < config.snapshot.pageRows;
      if (whole) wholeCursor = last;
      await settle().catch(async (error) => {
        await batch.abort();
        throw error;
      });
      if (count === 0) {
        await batch.abort();
        chunk = await advance(ledger, chunk, { cursor: chunk.cursor, rows: 0, done: true });
        break;
      }
      const target = pageTarget(config, job.id, { table: info, chunk: claimed.n, page, watermark, epoch, after: from, last });
      const cursor = whole ? null : last;
      committing = (async () => {
        chunk = await commitStaged(ctx, ledger, chunk, { cursor, rows: count, done }, await stage(ctx, batch, target));
        result.pages++;
        result.rows += count;
        result.wireRows += wireRows;
        deps.log.debug('snapshot page committed', { snapshot: job.id, chunk: id, page, rows: count, wireRows, done });
        chunk = await rollForward(ctx, ledger, chunk);
      })();
      committing.catch(() => {}); // awaited (and rethrown) by settle; not an unhandled rejection meanwhile
      next = { page: page + 1, cursor, done };
    }
  } catch (error) {
    // The table may be gone (the caller goes on from the stored chunk): the page committing must
    // be finished first, or its commit and renames would move the chunk on under it.
    await committing?.catch(() => {});
    throw error;
  }
  await settle();
  return chunk;
}

/** Where a page of a chunk commits: its data and manifest keys, and what the manifest says of it. */
function pageTarget(
  config: Config,
  jobId: string,
  page: { table: TableRef; chunk: number; page: number; watermark: BinlogPosition; epoch: number; after: KeyValues | null; last: KeyValues | null },
): CommitTarget {
  const { sourceId } = config;
  const { table, chunk, watermark, epoch } = page;
  return {
    source: sourceId,
    placement: {
      snapshot: {
        id: jobId,
        db: table.db,
        table: table.table,
        chunk,
        page: page.page,
        watermark,
        after: plainKeyValues(page.after),
        last: plainKeyValues(page.last),
      },
      ...epochField(epoch),
    },
    dataKey: (db, name) => snapshotDataKey(config.prefix, db, name, sourceId, jobId, chunk, page.page),
    manifestKey: snapshotManifestKey(config.prefix, sourceId, jobId, table.db, table.table, chunk, page.page),
  };
}

const sameNames = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((name, i) => name === b[i]);

/** The shape a page of `info` is written with, stamped with its schema version when known. */
function shapeOf(info: TableInfo, version: SchemaVersion | undefined): EncodedShape {
  return encodeShape({
    db: info.db,
    table: info.table,
    columns: info.columns,
    key: info.key.map((k) => info.columns.findIndex((c) => c.name === k)),
    ...(version ? { schema: version.version } : {}),
  });
}

/** A chunk's ledger (every page commit renews its lease, never past this worker's budget) and staging area. */
function chunkWork(deps: SnapshotDeps, job: SnapshotJob, lease: Lease<ChunkState>, clock: () => number) {
  const { config } = deps;
  const claimed = lease.held;
  const ledger = chunkLedger(deps.snapshots, job, lease.owner, clock, () => lease.until());
  const id = chunkId(claimed.table, claimed.n);
  const stagingRoot = chunkStaging(config.prefix, config.sourceId, job.id, id.replace('#', '-'));
  return { ledger, stagingRoot, id };
}

/**
 * A table without a key: nothing to page by, so it is read whole inside ONE consistent snapshot,
 * whose binlog position the server's dialect pins exactly (MariaDB's binlog_snapshot_file/position,
 * MySQL's global read lock held for it, else a read lock on the table held while it is read): the
 * watermark L of every page. The first page starts with a reset (`t`, kind `snapshot`) at L, before
 * every row of the attempt: readers drop the table's earlier rows — including a failed attempt's —
 * and count these. Pages commit as the rows stream (bounded memory). An attempt cannot resume in
 * another transaction: a worker that dies leaves its pages, and the next attempt supersedes them
 * with its own reset at its later watermark. Cost: one full read per attempt, within one worker run.
 */
async function copyWhole(copy: TableCopy, lease: Lease<ChunkState>, claimed: ChunkState = lease.held): Promise<ChunkState> {
  // No soft deadline: an attempt cannot stop half-way; it reads on until done or out of lease.
  const { deps, ctx, job, reading, reader, schema, result } = copy;
  const { owner } = lease;
  const { config } = deps;
  const clock = ctx.clock;
  const { ledger, stagingRoot } = chunkWork(deps, job, lease, clock);
  let chunk = await recover(ctx, ledger, claimed, stagingRoot);
  if (chunk.done) return chunk;
  const before = await schema.structureOf(reader.sql, reading.info);
  // One transaction at a binlog point the server's dialect pins (dialect.ts `snapshotPoint`).
  // On MySQL without RELOAD the table is read-locked instead (no transaction): read nothing else until point.end().
  const stored = await schema.epoch();
  const point = await (await dialectOf(reader.sql)).snapshotPoint(reader.sql, [reading.info]);
  if ('refused' in point)
    throw new SluiceError(
      ErrorCode.SNAPSHOT_NO_KEY,
      `table ${formatTableRef(reading.info)} has no key, so it is read whole in one transaction at a known binlog point, which this server cannot give: ${point.refused}. Else give it a primary key or a UNIQUE key on NOT NULL columns, or exclude it (SLUICE_EXCLUDE)`,
    );
  // The transaction reads the table as it was at its start: check that `info` describes that.
  if (before !== reading.structure || (await schema.structureOf(reader.sql, reading.info)) !== before) {
    await point.end();
    Object.assign(reading, await readTable(reader, config, reading.info, schema));
    return (reading.info.key.length ? copyChunk : copyWhole)(copy, lease, chunk);
  }
  const info = reading.info;
  try {
    const at = schema.place(stored, point.position);
    const { epoch, watermark } = at;
    const version = await schema.versionAt(info, before, at);
    const shape = shapeOf(info, version);
    const source = encodeSource({
      file: watermark.file,
      pos: watermark.pos,
      gtid: null,
      serverId: null,
      tsMs: clock(),
      txn: `snapshot:${job.id}`,
      snapshot: true,
    });
    let page = chunk.pages + 1;
    let batch = new Batch(ctx.s3, ctx.bucket, `${stagingRoot}${owner}/${pad(page, 8)}/`, clock());
    const reset = snapshotSeq(snapshotPagePrefix(epoch, watermark, job.id, claimed.table, claimed.n, 0), 0);
    void batch.write(shape, markerLine('t', info, version?.version, { kind: 'snapshot', position: watermark }, source, reset), reset);
    let count = 0;
    let wireRows = 0;
    const commitPage = async (done: boolean) => {
      const staged = await stage(ctx, batch, {
        source: config.sourceId,
        placement: {
          snapshot: { id: job.id, db: info.db, table: info.table, chunk: claimed.n, page, watermark, after: null, last: null },
          ...epochField(epoch),
        },
        dataKey: (db, table) => snapshotDataKey(config.prefix, db, table, config.sourceId, job.id, claimed.n, page),
        manifestKey: snapshotManifestKey(config.prefix, config.sourceId, job.id, info.db, info.table, claimed.n, page),
      });
      chunk = await rollForward(ctx, ledger, await commitStaged(ctx, ledger, chunk, { cursor: null, rows: count, done }, staged));
      result.pages++;
      result.rows += count;
      result.wireRows += wireRows;
    };
    // A full page commits while the read waits (the connection paused), then the rows go on into the next.
    const lines: PageLines = new PageLines(batch, shape, source, snapshotPagePrefix(epoch, watermark, job.id, claimed.table, claimed.n, page), {
      bytes: deps.rowLines !== false,
      pageRows: config.snapshot.pageRows,
      full: async () => {
        lines.finish();
        ({ count, wireRows } = lines);
        await commitPage(false);
        page++;
        batch = new Batch(ctx.s3, ctx.bucket, `${stagingRoot}${owner}/${pad(page, 8)}/`, clock());
        lines.next(batch, snapshotPagePrefix(epoch, watermark, job.id, claimed.table, claimed.n, page));
      },
    });
    await reader.read(info, null, null, 0, lines).catch(async (error) => {
      await batch.abort();
      throw error;
    });
    lines.finish();
    ({ count, wireRows } = lines);
    await commitPage(true);
    return chunk;
  } finally {
    await point.end();
  }
}
