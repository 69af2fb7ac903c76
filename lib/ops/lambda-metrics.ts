import { Metrics } from '@aws-lambda-powertools/metrics';
import { SluiceError } from '../errors.ts';

/*
 * The functions' CloudWatch metrics (EMF on stdout, namespace `sluice`, dimensions service + source).
 * The dashboard (scripts/dashboard.cjs) graphs them by name; test/unit/dashboard.test.ts checks that
 * every name it graphs is one the code emits.
 */

/** The short names the dashboard knows the functions by (dimension `function`). */
export type FunctionName = 'poller' | 'snapshot' | 'iceberg';

/** A function's metrics, flushed by `publishStoredMetrics()` at the end of each invocation. */
export function lambdaMetrics(sourceId: string): Metrics {
  return new Metrics({ namespace: 'sluice', serviceName: 'sluice', defaultDimensions: { source: sourceId } });
}

/**
 * Per invocation: the container's peak memory (graphed against the function's memory size) and, for a
 * failed one, its error code (`Errors`, dimension `code`; UNEXPECTED for an error without one).
 */
export function recordInvocation(metrics: Metrics, fn: FunctionName, error?: unknown): void {
  const memory = metrics.singleMetric();
  memory.addDimension('function', fn);
  memory.addMetric('MemoryUsedMB', 'Megabytes', Math.round(process.resourceUsage().maxRSS / 1024));
  if (error !== undefined) recordError(metrics, fn, error instanceof SluiceError ? error.code : 'UNEXPECTED');
}

/** One failure by code: a failed run, or one table's failed merge. */
export function recordError(metrics: Metrics, fn: FunctionName, code: string): void {
  const failed = metrics.singleMetric();
  failed.addDimensions({ function: fn, code });
  failed.addMetric('Errors', 'Count', 1);
}
