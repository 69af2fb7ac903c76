import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { Config, Startup } from '../config/config.ts';
import { GtidSet } from '../core/gtid-set.ts';
import type { BinlogHistory } from '../core/history.ts';
import { type BinlogPosition, comparePositions, formatPosition } from '../core/position.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import type { Log } from '../log.ts';
import { startupPosition } from '../source/mysql/binlog-scan.ts';
import { connect } from '../source/mysql/server.ts';
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
    })
    .nullable(),
  history: z
    .object({ file: z.string().min(1), created: z.number().int().positive(), serverId: z.number().int().optional(), serverUuid: z.string().optional() })
    .optional(),
  commitSeq: z.number().int().min(0),
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
 * Restores a savepoint. Refuses to move a source backwards (an older position or commit sequence)
 * unless forced. The commit sequence never decreases even when forced: reusing a number would
 * overwrite committed output objects.
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
    const newer = (state.position && comparePositions(state.position, position) > 0) || state.commitSeq > file.commitSeq;
    if (newer && !options.force) {
      throw new SluiceError(
        ErrorCode.STATE_NEWER,
        `source ${config.sourceId} is ahead of the file (stored ${state.position ? formatPosition(state.position) : '-'}, commit ${state.commitSeq}; file ${formatPosition(position)}, commit ${file.commitSeq}). Importing would re-capture changes; pass --force to roll back on purpose.`,
      );
    }
    options.log.info('importing state', { source: config.sourceId, position, commitSeq: file.commitSeq });
    return store.overwrite(
      { sourceId: config.sourceId, owner, expectVersion: state.version, now },
      { position, history: file.history?.file === position.file ? file.history : undefined, commitSeq: Math.max(state.commitSeq, file.commitSeq) },
    );
  });
}

/** Moves the stored position to `latest`, `position:…`, `timestamp:…` or `gtid:…`, keeping the commit sequence. */
export async function resetState(config: Config, store: StateStore, to: Startup, log: Log): Promise<SourceState> {
  if (to.mode === 'initial' || to.mode === 'initial-only')
    throw new SluiceError(
      ErrorCode.STATE_RESET,
      'reset takes latest, earliest, position:<file>:<pos>, timestamp:<ISO> or gtid:<set>; for a new snapshot run `sluice snapshot --all`',
    );
  const conn = await connect(await mysqlTarget(config));
  let position: BinlogPosition;
  try {
    position = await startupPosition({ ...config, startup: to }, conn, log);
  } finally {
    await conn.end();
  }
  return underLease(config, store, (state, now, owner) =>
    store.overwrite({ sourceId: config.sourceId, owner, expectVersion: state.version, now }, { position, commitSeq: state.commitSeq }),
  );
}
