import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import type { Metrics } from '@aws-lambda-powertools/metrics';

/** The logging surface sluice uses: Powertools' structured logger, or anything shaped like it. */
export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

/** Structured JSON logs. Level from POWERTOOLS_LOG_LEVEL / AWS_LAMBDA_LOG_LEVEL, else `fallbackLevel`. */
export function createLogger(fallbackLevel: LogLevel = 'INFO', env: Readonly<Record<string, string | undefined>> = process.env): Logger {
  return new Logger({ serviceName: 'sluice', logLevel: (env.POWERTOOLS_LOG_LEVEL ?? env.AWS_LAMBDA_LOG_LEVEL ?? fallbackLevel) as LogLevel });
}

export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };

/** Where capture runs record metrics: Powertools' EMF Metrics in Lambda, nothing elsewhere. */
export interface MetricsSink {
  addMetric(name: string, unit: Parameters<Metrics['addMetric']>[1], value: number): unknown;
}

export const noMetrics: MetricsSink = { addMetric: () => undefined };
