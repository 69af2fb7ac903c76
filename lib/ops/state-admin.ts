import { randomUUID } from 'node:crypto';
import type { Config, Startup } from '../config/config.ts';
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
  commitSeq: number;
}

export async function exportState(config: Config, store: StateStore): Promise<StateFile> {
  const state = await store.get(config.sourceId);
  return {
    format: 'sluice-state/v1',
    source: config.sourceId,
    exportedAt: new Date().toISOString(),
    position: state?.position ?? null,
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
export async function importState(config: Config, store: StateStore, file: StateFile, options: { force?: boolean; log: Log }): Promise<SourceState> {
  if (file.format !== 'sluice-state/v1' || !file.position)
    throw new SluiceError(ErrorCode.STATE_FILE, 'not a sluice state file with a position (expected format sluice-state/v1, from `sluice state export`)');
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
      { position, commitSeq: Math.max(state.commitSeq, file.commitSeq) },
    );
  });
}

/** Moves the stored position to `latest`, `position:…`, `timestamp:…` or `gtid:…`, keeping the commit sequence. */
export async function resetState(config: Config, store: StateStore, to: Startup, log: Log): Promise<SourceState> {
  if (to.mode === 'initial' || to.mode === 'initial-only')
    throw new SluiceError(
      ErrorCode.STATE_RESET,
      'reset takes latest, earliest, position:<file>:<pos>, timestamp:<ISO> or gtid:<set>; for a new snapshot run `sluice snapshot`',
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
