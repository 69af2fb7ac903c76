import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../../config/config.ts';
import type { BinlogPosition } from '../../core/position.ts';
import { formatTableRef } from '../../core/table-ref.ts';
import { ChangeLog } from '../../materialize/change-log.ts';
import { s3ObjectStore } from '../../sink/s3/object-store.ts';
import type { MergeStore } from '../../state/iceberg-store.ts';
import { jobCovers, type SnapshotStore } from '../../state/snapshot-store.ts';
import type { RecordedError } from '../../state/store.ts';
import { currentSnapshot, type TableMetadata } from '../files/metadata.ts';

/** One table's Iceberg merge as `sluice status` shows it. */
export interface IcebergTableStatus {
  readonly table: string;
  /** The last source commit merged; 0 before the first merge. */
  readonly commitSeq: number;
  /** Source commits not merged yet. */
  readonly behind: number;
  readonly position?: BinlogPosition;
  /** Why the merge waits: a snapshot job still copies the table. */
  readonly held?: string;
  /** Dropped, renamed away or excluded: the Iceberg table is kept, empty. */
  readonly gone: boolean;
  readonly metadata?: string;
  readonly records?: number;
  readonly dataFiles?: number;
  readonly deleteFiles?: number;
  /** The newest compaction among the snapshots the table still keeps (ISO time). */
  readonly lastCompactedAt?: string;
  readonly lease?: { readonly owner: string; readonly expiresAt: string; readonly live: boolean };
  readonly error?: RecordedError;
}

interface Deps {
  readonly config: Config;
  readonly s3: S3Client;
  readonly merges: MergeStore;
  readonly snapshots: SnapshotStore;
}

async function readMetadata(s3: S3Client, bucket: string, key: string): Promise<TableMetadata | undefined> {
  const body = await s3ObjectStore(s3, bucket).get(key);
  return body === undefined ? undefined : (JSON.parse(new TextDecoder().decode(body)) as TableMetadata);
}

/**
 * The merge of every captured table that has a ledger: where it stands against the source's
 * `sourceCommitSeq`, whether a snapshot holds it back, its last error, its files. Tables never
 * merged are left out; none at all (the merge is not used) gives an empty list.
 */
export async function icebergStatus(deps: Deps, sourceCommitSeq: number, now = Date.now()): Promise<IcebergTableStatus[]> {
  const { config } = deps;
  const active = await deps.snapshots.activeJobs(config.sourceId);
  const out: IcebergTableStatus[] = [];
  for (const table of await ChangeLog.over(deps.s3, config).tables()) {
    const state = await deps.merges.get(config.sourceId, table);
    if (!state) continue;
    const job = active.find((j) => jobCovers(j, table));
    const metadata = state.metadataKey ? await readMetadata(deps.s3, config.bucket, state.metadataKey) : undefined;
    const summary = metadata && currentSnapshot(metadata)?.summary;
    const compactions = (metadata?.snapshots ?? []).filter((s) => s.summary.operation === 'replace').map((s) => s['timestamp-ms']);
    out.push({
      table: formatTableRef(table),
      commitSeq: state.commitSeq,
      behind: Math.max(0, sourceCommitSeq - state.commitSeq),
      position: state.position,
      held: job ? `snapshot ${job.id} is copying it (${job.status})` : undefined,
      gone: state.gone,
      metadata: state.metadataKey,
      records: summary ? Number(summary['total-records'] ?? 0) : undefined,
      dataFiles: summary ? Number(summary['total-data-files'] ?? 0) : undefined,
      deleteFiles: summary ? Number(summary['total-delete-files'] ?? 0) : undefined,
      lastCompactedAt: compactions.length ? new Date(Math.max(...compactions)).toISOString() : undefined,
      lease: state.lease && { owner: state.lease.owner, expiresAt: new Date(state.lease.expiresAt).toISOString(), live: state.lease.expiresAt > now },
      error: state.error,
    });
  }
  return out;
}
