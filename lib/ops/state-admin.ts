import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { type Config, type Startup, tableFilter } from '../config/config.ts';
import { GtidSet, isMariadbGtidPosition } from '../core/gtid-set.ts';
import type { BinlogHistory } from '../core/history.ts';
import { type BinlogPosition, comparePositions, formatPosition } from '../core/position.ts';
import type { TableRef } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import type { Log } from '../log.ts';
import { historyAt, startupPosition, tablesWritten } from '../source/mysql/binlog-scan.ts';
import { dialectOf } from '../source/mysql/dialect/dialect.ts';
import { BinlogHistories } from '../source/mysql/history.ts';
import { serverTraits } from '../source/mysql/schema-read.ts';
import { connect, type SqlConnection } from '../source/mysql/server.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SourceState, StateStore } from '../state/store.ts';

/** A source's state as a portable savepoint (`sluice state export`). */
export interface StateFile {
  format: 'sluice-state/v1';
  source: string;
  exportedAt: string;
  position: BinlogPosition | null;
  /** The binlog history the position belongs to (absent in files from before it was recorded). */
  history?: BinlogHistory;
  commitSeq: number;
  /** The position's history epoch (absent in files from before epochs: 0). */
  epoch?: number;
}

/** What `state import` accepts: the shape `state export` writes, every field checked (zod, like the config). */
const stateFileSchema = z.object({
  format: z.literal('sluice-state/v1'),
  source: z.string().min(1),
  exportedAt: z.string().optional(),
  position: z
    .object({
      file: z.string().regex(/^[^:\s]+\.\d+$/, 'expected a binlog file name such as binlog.000042'),
      pos: z.number().int().min(4, 'a binlog position is at least 4'),
      gtid: z.string().min(1).optional(),
      gtidSet: z.string().refine(GtidSet.is, 'expected a MySQL GTID set such as 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5').optional(),
      gtidPos: z.string().refine(isMariadbGtidPosition, 'expected a MariaDB GTID position such as 0-1-1234,2-1-7').optional(),
      gtidSkip: z.string().refine(isMariadbGtidPosition, 'expected a MariaDB GTID position such as 2-1-7').optional(),
      gtidTime: z.number().int().positive().optional(),
      gtidCommitUs: z.number().int().positive().optional(),
    })
    .nullable(),
  history: z
    .object({ file: z.string().min(1), created: z.number().int().positive(), serverId: z.number().int().optional(), serverUuid: z.string().optional() })
    .optional(),
  commitSeq: z.number().int().min(0),
  epoch: z.number().int().min(0).optional(),
});

/** Checks a savepoint; errors name `origin` (the file) and each bad field. */
export function parseStateFile(value: unknown, origin: string): StateFile {
  const result = stateFileSchema.safeParse(value);
  if (!result.success) {
    const fields = result.error.issues.map((issue) => `${issue.path.join('.') || '(the whole file)'}: ${issue.message}`);
    throw new SluiceError(
      ErrorCode.STATE_FILE,
      `${origin} is not a sluice state file (the output of \`sluice state export\`): ${fields.join('; ')}. Nothing was imported.`,
    );
  }
  return { exportedAt: '', ...result.data } as StateFile;
}

/** Reads and checks a savepoint file. */
export async function readStateFile(path: string): Promise<StateFile> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new SluiceError(ErrorCode.STATE_FILE, `cannot read ${path} as JSON: ${(error as Error).message}. Nothing was imported.`, { cause: error });
  }
  return parseStateFile(value, path);
}

export async function exportState(config: Config, store: StateStore): Promise<StateFile> {
  const state = await store.get(config.sourceId);
  return {
    format: 'sluice-state/v1',
    source: config.sourceId,
    exportedAt: new Date().toISOString(),
    position: state?.position ?? null,
    ...(state?.history ? { history: state.history } : {}),
    commitSeq: state?.commitSeq ?? 0,
    epoch: state?.epoch ?? 0,
  };
}

/**
 * Writes under a short administrative lease, so it never races a running poller (which would make
 * the lease unavailable: the command then fails and asks to retry) and fences any zombie.
 */
async function underLease(
  config: Config,
  store: StateStore,
  write: (state: SourceState, now: number, owner: string) => Promise<SourceState>,
): Promise<SourceState> {
  const owner = `admin-${randomUUID()}`;
  const now = Date.now();
  let state: SourceState;
  try {
    state = await store.acquireLease(config.sourceId, owner, now + 30_000, now);
  } catch (error) {
    throw new SluiceError(
      ErrorCode.STATE_BUSY,
      `source ${config.sourceId} is being captured right now (${(error as Error).message}); retry after the run, or pause the schedule first`,
      { cause: error },
    );
  }
  try {
    if (state.pending)
      throw new SluiceError(
        ErrorCode.STATE_PENDING,
        `source ${config.sourceId} has a committed batch still being renamed; run one capture to finish it, then retry`,
      );
    return await write(state, Date.now(), owner);
  } finally {
    await store.releaseLease(config.sourceId, owner);
  }
}

/**
 * Restores a savepoint. Refuses to move a source backwards (an older epoch, position or commit
 * sequence) unless forced. The commit sequence never decreases even when forced: reusing a number
 * would overwrite committed output objects. The position starts a new history epoch, after both
 * the stored one and the file's: what is read from it sorts after everything either stack wrote.
 */
export async function importState(
  config: Config,
  store: StateStore,
  saved: unknown,
  options: { force?: boolean; log: Log; origin?: string },
): Promise<SourceState> {
  const origin = options.origin ?? 'the state file';
  const file = parseStateFile(saved, origin);
  if (!file.position)
    throw new SluiceError(
      ErrorCode.STATE_FILE,
      `${origin} holds no position (its source had never run): position: expected a position, got null. Nothing was imported.`,
    );
  if (file.source !== config.sourceId && !options.force) {
    throw new SluiceError(ErrorCode.STATE_SOURCE, `the file is for source ${file.source}, not ${config.sourceId}; pass --force to import it anyway`);
  }
  const position = file.position;
  return underLease(config, store, async (state, now, owner) => {
    const fileEpoch = file.epoch ?? 0;
    const newer =
      state.epoch > fileEpoch ||
      (state.epoch === fileEpoch && state.position !== undefined && comparePositions(state.position, position) > 0) ||
      state.commitSeq > file.commitSeq;
    if (newer && !options.force) {
      throw new SluiceError(
        ErrorCode.STATE_NEWER,
        `source ${config.sourceId} is ahead of the file (stored ${state.position ? formatPosition(state.position) : '-'}, commit ${state.commitSeq}; file ${formatPosition(position)}, commit ${file.commitSeq}). Importing would re-capture changes; pass --force to roll back on purpose.`,
      );
    }
    options.log.info('importing state', { source: config.sourceId, position, commitSeq: file.commitSeq });
    return store.overwrite(
      { sourceId: config.sourceId, owner, expectVersion: state.version, now },
      {
        position,
        history: file.history?.file === position.file ? file.history : undefined,
        commitSeq: Math.max(state.commitSeq, file.commitSeq),
        epoch: Math.max(state.epoch, fileEpoch) + 1,
      },
    );
  });
}

/** A startup setting as it was written (`position:binlog.000003:4`). */
function startupText(to: Startup): string {
  switch (to.mode) {
    case 'position':
      return `position:${to.position.file}:${to.position.pos}`;
    case 'gtid':
      return `gtid:${to.gtid}`;
    case 'timestamp':
      return `timestamp:${new Date(to.at).toISOString()}`;
    default:
      return to.mode;
  }
}

/**
 * Moves the stored position to `latest`, `position:…`, `timestamp:…` or `gtid:…`, keeping the
 * commit sequence, in a new history epoch (lib/format/seq.ts), and says what the move skipped
 * (`resync`), which the next run resets and copies again:
 *
 *   - `gtid:` names the transactions read: the server sends every one after them, nothing is skipped;
 *   - the stored position on another history than the server's, or purged: every table;
 *   - back on the same history: the transactions after the new position are read again, nothing
 *     is skipped (their events sort after the first reading's, so the result is the same);
 *   - forward on the same history: the tables the skipped transactions wrote, read from the binlog
 *     (every table when a DDL lies among them).
 */
export async function resetState(config: Config, store: StateStore, to: Startup, log: Log): Promise<SourceState> {
  if (to.mode === 'initial' || to.mode === 'initial-only')
    throw new SluiceError(
      ErrorCode.STATE_RESET,
      'reset takes latest, earliest, position:<file>:<pos>, timestamp:<ISO> or gtid:<set>; for a new snapshot run `sluice snapshot --all`',
    );
  const target = await mysqlTarget(config);
  const conn = await connect(target);
  const before = await store.get(config.sourceId);
  let position: BinlogPosition;
  let history: BinlogHistory;
  let skipped: Skipped;
  try {
    position = await startupPosition({ ...config, startup: to }, conn, log);
    // Recorded now, before any run reads from it: what tells this history from the next (historyAt).
    history = await historyAt(target, conn, position);
    skipped = await whatResetSkips(config, conn, before, position, to);
  } finally {
    await conn.end();
  }
  return underLease(config, store, (state, now, owner) => {
    if (state.epoch !== (before?.epoch ?? 0) || !samePosition(state.position, before?.position))
      throw new SluiceError(ErrorCode.STATE_BUSY, `source ${config.sourceId} moved while the reset looked at the binlog; nothing was stored, retry`);
    const resync =
      skipped === 'nothing' ? undefined : { reason: `sluice state reset --to ${startupText(to)}`, at: now, ...(skipped === 'all' ? {} : { tables: skipped }) };
    log.info('resetting the stored position', { source: config.sourceId, from: state.position, to: position, epoch: state.epoch + 1, resync });
    return store.overwrite(
      { sourceId: config.sourceId, owner, expectVersion: state.version, now },
      { position, history, commitSeq: state.commitSeq, epoch: state.epoch + 1, ...(resync ? { resync } : {}) },
    );
  });
}

type Skipped = 'nothing' | 'all' | TableRef[];

/** The same stored position (its fields compared, not their order, which DynamoDB does not keep). */
const samePosition = (a: BinlogPosition | undefined, b: BinlogPosition | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.file === b.file && a.pos === b.pos && a.gtid === b.gtid && a.gtidSet === b.gtidSet);

/**
 * What a reset from the stored state to `position` skips (see resetState). The stored position is
 * taken to be on the server's history only where that is proven: the checks a run makes before
 * reading (its file and offset; with its GTID, that the server has it at that very place, or holds
 * its GTID set), and those of the stream from it (its file's creation time, the first GTID after
 * it). A position without the recorded creation time of its file proves nothing, whatever GTIDs it
 * holds (they are numbered from 1 again after RESET MASTER): every table.
 */
async function whatResetSkips(config: Config, conn: SqlConnection, state: SourceState | undefined, position: BinlogPosition, to: Startup): Promise<Skipped> {
  if (to.mode === 'gtid' || !state?.position) return 'nothing';
  const stored = state.position;
  const recorded = state.history;
  if (recorded?.file !== stored.file) return 'all';
  const forward = comparePositions(position, stored) > 0;
  let written: Awaited<ReturnType<typeof tablesWritten>>;
  try {
    await new BinlogHistories(state).checkStored(conn);
    // The GTID checks too, which a recorded history stands in for at a run's start.
    if (stored.gtid !== undefined || stored.gtidSet !== undefined || stored.gtidPos !== undefined)
      await new BinlogHistories({ position: stored }).checkStored(conn);
    // The file's creation time, asked here: a scan of an empty range may end before its stream shows it.
    if ((await historyAt(await mysqlTarget(config), conn, stored)).created !== recorded.created) return 'all';
    const traits = await serverTraits(conn, await dialectOf(conn));
    const context = { comments: traits.comments, lowerCaseTableNames: traits.lowerCaseTableNames };
    const range = { from: stored, to: forward ? position : stored };
    written = await tablesWritten(await mysqlTarget(config), range, tableFilter(config), context, new BinlogHistories(state));
  } catch (error) {
    if (error instanceof SluiceError && (error.code === ErrorCode.POSITION_FOREIGN || error.code === ErrorCode.POSITION_LOST)) return 'all';
    throw error;
  }
  if (!forward) return 'nothing';
  if (written.ddl) return 'all';
  return written.tables.length ? written.tables : 'nothing';
}
