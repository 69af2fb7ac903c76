import type { Config } from '../config/config.ts';
import { type BinlogPosition, comparePositions, fileNumber } from '../source/mysql/position.ts';
import { binaryLogs, connect, masterPosition } from '../source/mysql/server.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SourceState, StateStore } from '../state/store.ts';

export interface SourceStatus {
  source: string;
  stored?: BinlogPosition;
  master?: BinlogPosition;
  lagBytes?: number;
  positionOnServer?: boolean;
  commitSeq: number;
  lastCommitAt?: string;
  lease?: { owner: string; expiresAt: string; live: boolean };
  pending?: { commitSeq: number; objects: number };
  error?: SourceState['error'];
  mysqlError?: string;
}

/** Stored vs master position, lag in bytes, lease, pending renames and recorded errors. */
export async function sourceStatus(config: Config, store: StateStore, now = Date.now()): Promise<SourceStatus> {
  const state = await store.get(config.sourceId);
  const status: SourceStatus = {
    source: config.sourceId,
    stored: state?.position,
    commitSeq: state?.commitSeq ?? 0,
    lastCommitAt: state?.lastCommitAt ? new Date(state.lastCommitAt).toISOString() : undefined,
    lease: state?.lease ? { owner: state.lease.owner, expiresAt: new Date(state.lease.expiresAt).toISOString(), live: state.lease.expiresAt > now } : undefined,
    pending: state?.pending ? { commitSeq: state.pending.commitSeq, objects: state.pending.copies.length } : undefined,
    error: state?.error,
  };
  try {
    const conn = await connect(await mysqlTarget(config));
    try {
      status.master = await masterPosition(conn);
      const logs = await binaryLogs(conn);
      const stored = status.stored;
      if (stored) {
        status.positionOnServer = logs.some((l) => l.file === stored.file);
        if (status.positionOnServer && comparePositions(stored, status.master) <= 0) {
          status.lagBytes = logs
            .filter((l) => fileNumber(l.file) >= fileNumber(stored.file))
            .reduce((sum, l) => sum + (l.file === status.master?.file ? status.master.pos : l.size) - (l.file === stored.file ? stored.pos : 0), 0);
        }
      }
    } finally {
      await conn.end();
    }
  } catch (error) {
    status.mysqlError = (error as Error).message;
  }
  return status;
}
