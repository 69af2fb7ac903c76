import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Config } from '../config/config.ts';
import { formatTableRef, type TableRef } from '../core/table-ref.ts';
import type { Log } from '../log.ts';
import type { MergeStore } from '../state/iceberg-store.ts';
import type { StateStore } from '../state/store.ts';
import { recordedFailure } from './invocation.ts';
import { recordError } from './lambda-metrics.ts';
import { sourceStatus } from './status.ts';

/*
 * What the functions report after their run, as CloudWatch metrics (EMF) and one log line. The
 * runs' results are taken by their shape: the jobs sit in this layer, beside ops, not below it.
 */

/** The poller's, after a capture run: the source's health (lag, time to purge, position age) and its warnings. */
export async function reportCapture(
  deps: { readonly config: Config; readonly store: StateStore; readonly metrics: Metrics; readonly log: Log },
  result: { readonly lagSeconds?: number },
): Promise<void> {
  const { metrics, log } = deps;
  const health = await sourceStatus(deps.config, deps.store);
  if (result.lagSeconds !== undefined) metrics.addMetric('LagSeconds', 'Seconds', result.lagSeconds);
  if (health.lagBytes !== undefined) metrics.addMetric('LagBytes', 'Bytes', health.lagBytes);
  if (typeof health.timeToPurgeSeconds === 'number') metrics.addMetric('TimeToPurgeSeconds', 'Seconds', health.timeToPurgeSeconds);
  // Paired with the lag on the dashboard and in StalledAlarm: lag with a moving position is catching up, lag with a still one is stuck.
  if (health.positionAgeSeconds !== undefined) metrics.addMetric('PositionAgeSeconds', 'Seconds', health.positionAgeSeconds);
  for (const warning of health.warnings ?? []) log.warn(warning);
  log.info('capture run finished', { ...result, lagBytes: health.lagBytes, timeToPurgeSeconds: health.timeToPurgeSeconds });
}

/** One table's part of an Iceberg merge run, as far as the report reads it. */
interface MergedTable {
  readonly table: TableRef;
  readonly status: string;
  readonly mode?: string;
  readonly reason?: string;
  readonly commitSeq?: number;
  readonly error?: Error;
}

/**
 * The iceberg function's, after a merge run: per table how many source commits it is behind (a held
 * or busy table's from its ledger) and a failed table's error by its code; the run's summary, or a
 * failure (the alarm) naming every table that failed, already counted by their codes.
 */
export async function reportMerge(
  deps: { readonly config: Config; readonly merges: MergeStore; readonly metrics: Metrics; readonly log: Log },
  result: { readonly cut?: { readonly commitSeq: number }; readonly tables: readonly MergedTable[] },
): Promise<{ table: string; status: string; mode?: string; reason?: string }[]> {
  const { config, metrics } = deps;
  const summary = result.tables.map((t) => ({ table: formatTableRef(t.table), status: t.status, mode: t.mode, reason: t.reason }));
  deps.log.info('Iceberg merge run finished', { cut: result.cut, tables: summary });
  let counted = false;
  try {
    for (const t of result.tables) {
      const merged = t.commitSeq ?? (await deps.merges.get(config.sourceId, t.table))?.commitSeq ?? 0;
      const lag = metrics.singleMetric();
      lag.addDimension('table', formatTableRef(t.table));
      lag.addMetric('IcebergLagCommits', 'Count', Math.max(0, (result.cut?.commitSeq ?? merged) - merged));
      if (t.status === 'failed') recordError(metrics, 'iceberg', (t.error as { code?: string } | undefined)?.code ?? 'UNEXPECTED');
      counted ||= t.status === 'failed';
    }
  } catch (error) {
    // Failed tables are counted by their own codes; the run's failure only when none was.
    throw counted && error instanceof Error ? recordedFailure(error) : error;
  }
  const failed = result.tables.filter((t) => t.status === 'failed');
  if (failed.length) throw recordedFailure(new Error(`Iceberg merge failed for ${failed.map((t) => `${formatTableRef(t.table)}: ${t.reason}`).join('; ')}`));
  return summary;
}
