import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../config/config.ts';
import { type BinlogPosition, comparePositions, fileNumber } from '../core/position.ts';
import { formatTableRef } from '../core/table-ref.ts';
import type { SourceRecord } from '../fleet/registry.ts';
import { sourceConfig } from '../fleet/source-config.ts';
import type { CatalogDocument } from '../schema/catalog.ts';
import { catalogKey } from '../sink/s3/keys.ts';
import { getJson } from '../sink/s3/objects.ts';
import { BinlogReader } from '../source/mysql/binlog-reader.ts';
import { SCAN_SILENCE_MS } from '../source/mysql/binlog-scan.ts';
import { dialectOf } from '../source/mysql/dialect/dialect.ts';
import { filterWarnings } from '../source/mysql/filter-check.ts';
import { rdsBinlogRetention, retentionWarning } from '../source/mysql/rds.ts';
import { binaryLogs, connect, masterPosition, type SqlConnection } from '../source/mysql/server.ts';
import { type MysqlTarget, mysqlTarget } from '../source/mysql/target.ts';
import type { Reposition, SourceState, StateStore } from '../state/store.ts';

export interface SourceStatus {
  source: string;
  stored?: BinlogPosition;
  master?: BinlogPosition;
  lagBytes?: number;
  positionOnServer?: boolean;
  commitSeq: number;
  /** The stored position's history epoch: how many times its binlog history was changed (lib/format/seq.ts). */
  epoch: number;
  /** A change of history the next run still has to act on: it resets and re-copies every captured table. */
  resync?: { reason: string; at: string };
  /** The last time a capture run followed the transactions to another binlog history by itself (lib/capture/follow.ts). */
  lastReposition?: Omit<Reposition, 'at'> & { at: string };
  lastCommitAt?: string;
  /** Seconds since the stored position last moved (data commit or heartbeat); with lag, it tells catching up from stuck. */
  positionAgeSeconds?: number;
  lease?: { owner: string; expiresAt: string; live: boolean };
  /** A committed commit still being renamed: always the source's latest (`commitSeq`), counted in the same write. */
  pending?: { commitSeq: number; objects: number };
  error?: SourceState['error'];
  mysqlError?: string;
  /** The server's binlog retention; null when binlogs are never purged automatically. */
  retentionSeconds?: number | null;
  /** RDS/Aurora `binlog retention hours` (null: NULL, purged as soon as possible); absent elsewhere. */
  rdsRetentionHours?: number | null;
  /** How long until the binlog holding the stored position may be purged; null = no automatic purge. */
  timeToPurgeSeconds?: number | null;
  /** SLUICE_INCLUDE / SLUICE_EXCLUDE patterns that match no table (lib/source/mysql/filter-check.ts). */
  warnings?: string[];
  /**
   * Tables whose current schema version follows a DDL statement sluice could not classify, with
   * what was decided: re-copied by sluice itself (SLUICE_DDL_UNKNOWN=resnapshot) or as an operator
   * said (SLUICE_DDL_OVERRIDES). From the schema catalog the stored position points at.
   */
  unclassifiedDdl?: UnclassifiedDdl[];
}

/** A decision about a DDL statement sluice could not classify, as the catalog records it for a table. */
export interface UnclassifiedDdl {
  readonly table: string;
  /** Where the statement is in the binlog: the position SLUICE_DDL_OVERRIDES would name. */
  readonly position: string;
  /** What the table's `t`/`s` event says it did: `resnapshot` (re-copied), `drop` (gone by then), `noop`. */
  readonly kind: string;
  readonly decidedBy: 'sluice' | 'operator';
  readonly reason: string;
}

/** The decisions the catalog at `pointer` holds for tables' current versions. */
async function unclassifiedDdl(config: Config, s3: S3Client, pointer: number): Promise<UnclassifiedDdl[]> {
  const catalog = (await getJson(s3, config.bucket, catalogKey(config.prefix, config.sourceId, pointer))) as CatalogDocument | undefined;
  return (catalog?.tables ?? []).flatMap((entry) =>
    entry.ddl?.decidedBy
      ? [
          {
            table: formatTableRef(entry.version),
            position: `${entry.position.file}:${entry.position.pos}`,
            kind: entry.ddl.kind,
            decidedBy: entry.ddl.decidedBy,
            reason: entry.ddl.reason ?? '',
          },
        ]
      : [],
  );
}

/** Start times of binlog files already looked up: a file's start never changes, the poller asks every run. */
const fileStarts = new Map<string, number>();

/** When a binlog file started (its first timestamped event), or undefined if it has none yet. */
async function fileStartTime(target: MysqlTarget, file: string): Promise<number | undefined> {
  const key = `${target.uri}|${file}`;
  const known = fileStarts.get(key);
  if (known !== undefined) return known;
  const started = await readFileStartTime(target, file);
  if (started !== undefined) fileStarts.set(key, started);
  return started;
}

async function readFileStartTime(target: MysqlTarget, file: string): Promise<number | undefined> {
  const reader = new BinlogReader({ target, start: { file, pos: 4 }, filter: () => false, idleMs: 300 });
  const since = Date.now();
  try {
    for await (const item of reader) {
      // A listed file starts with an event: a pause is a slow stream (a loaded machine), not an empty file.
      if (item.kind === 'idle') {
        if (Date.now() - since < SCAN_SILENCE_MS) continue;
        return undefined;
      }
      if ((item.kind === 'progress' || item.kind === 'begin') && item.tsMs > 0) return item.tsMs;
    }
    return undefined;
  } finally {
    await reader.stop();
  }
}

/**
 * Time until the binlog holding `stored` may be purged. A binlog is purged once it has been closed
 * for the retention period; it was closed when the next file started. Still the current file: the
 * whole retention period remains.
 */
async function purgeRisk(
  conn: SqlConnection,
  target: MysqlTarget,
  stored: BinlogPosition,
  now: number,
  rdsHours?: number | null,
): Promise<{ retentionSeconds: number | null; timeToPurgeSeconds: number | null }> {
  let retention: number;
  if (rdsHours !== undefined) {
    // RDS/Aurora purge by `binlog retention hours`, not by the server's expiry variables; NULL: any time now.
    if (rdsHours === null) return { retentionSeconds: 0, timeToPurgeSeconds: 0 };
    retention = rdsHours * 3600;
  } else {
    retention = await (await dialectOf(conn)).retentionSeconds(conn);
  }
  if (!retention) return { retentionSeconds: null, timeToPurgeSeconds: null };
  const logs = await binaryLogs(conn);
  const index = logs.findIndex((l) => l.file === stored.file);
  if (index < 0) return { retentionSeconds: retention, timeToPurgeSeconds: 0 };
  const next = logs[index + 1];
  const closedAt = next ? await fileStartTime(target, next.file) : undefined;
  if (closedAt === undefined) return { retentionSeconds: retention, timeToPurgeSeconds: retention };
  return { retentionSeconds: retention, timeToPurgeSeconds: Math.max(0, Math.round(closedAt / 1000 + retention - now / 1000)) };
}

/** Stored vs master position, lag in bytes, lease, pending renames, recorded errors and (with `s3`) decisions about DDL sluice could not classify. */
export async function sourceStatus(config: Config, store: StateStore, now = Date.now(), s3?: S3Client): Promise<SourceStatus> {
  const state = await store.get(config.sourceId);
  const status: SourceStatus = {
    source: config.sourceId,
    stored: state?.position,
    commitSeq: state?.commitSeq ?? 0,
    epoch: state?.epoch ?? 0,
    resync: state?.resync ? { reason: state.resync.reason, at: new Date(state.resync.at).toISOString() } : undefined,
    lastReposition: state?.lastReposition ? { ...state.lastReposition, at: new Date(state.lastReposition.at).toISOString() } : undefined,
    lastCommitAt: state?.lastCommitAt ? new Date(state.lastCommitAt).toISOString() : undefined,
    positionAgeSeconds: state?.positionAt ? Math.max(0, Math.round((now - state.positionAt) / 1000)) : undefined,
    lease: state?.lease ? { owner: state.lease.owner, expiresAt: new Date(state.lease.expiresAt).toISOString(), live: state.lease.expiresAt > now } : undefined,
    pending: state?.pending ? { commitSeq: state.commitSeq, objects: state.pending.copies.length } : undefined,
    error: state?.error,
  };
  if (s3 && state?.catalog !== undefined) {
    const decided = await unclassifiedDdl(config, s3, state.catalog);
    if (decided.length) status.unclassifiedDdl = decided;
  }
  try {
    const conn = await connect(await mysqlTarget(config));
    try {
      status.master = await masterPosition(conn);
      const warnings = await filterWarnings(conn, config);
      const rds = await rdsBinlogRetention(conn);
      const retention = retentionWarning(rds);
      if (retention) warnings.push(retention);
      if (rds.kind === 'hours') status.rdsRetentionHours = rds.hours;
      if (warnings.length) status.warnings = warnings;
      const logs = await binaryLogs(conn);
      const stored = status.stored;
      if (stored) {
        status.positionOnServer = logs.some((l) => l.file === stored.file);
        if (!status.positionOnServer) status.timeToPurgeSeconds = 0;
        if (status.positionOnServer && comparePositions(stored, status.master) <= 0) {
          Object.assign(status, await purgeRisk(conn, await mysqlTarget(config), stored, now, rds.kind === 'hours' ? rds.hours : undefined));
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

/** One registered source in `sluice status`: its record's schedule, and its status or why there is none. */
export interface FleetSourceStatus {
  readonly id: string;
  readonly paused: boolean;
  readonly everyMinutes: number;
  readonly iceberg: boolean;
  readonly status?: SourceStatus;
  /** The record makes no configuration (lib/fleet/source-config.ts): what is wrong with it. */
  readonly configError?: string;
}

/**
 * `sourceStatus` of every registered source, a few at a time (each asks its own server): one
 * source's unreachable server or bad record is its own line, never the fleet's failure.
 */
export async function fleetStatus(
  env: Record<string, string | undefined>,
  records: readonly SourceRecord[],
  store: StateStore,
  now = Date.now(),
  concurrency = 8,
): Promise<FleetSourceStatus[]> {
  const results: FleetSourceStatus[] = new Array(records.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < records.length; i = next++) {
      const record = records[i] as SourceRecord;
      const summary = { id: record.id, paused: record.paused, everyMinutes: record.everyMinutes, iceberg: record.iceberg };
      let config: Config;
      try {
        config = sourceConfig(env, record);
      } catch (error) {
        results[i] = { ...summary, configError: (error as Error).message };
        continue;
      }
      results[i] = { ...summary, status: await sourceStatus(config, store, now) };
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, records.length) }, worker));
  return results;
}
