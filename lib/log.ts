import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';

/** The logging surface sluice uses: Powertools' structured logger, or anything shaped like it. */
export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

/** Structured JSON logs. Level from POWERTOOLS_LOG_LEVEL / AWS_LAMBDA_LOG_LEVEL, else `fallbackLevel`. */
export function createLogger(fallbackLevel: LogLevel = 'INFO'): Logger {
  return new Logger({ serviceName: 'sluice', logLevel: (process.env.POWERTOOLS_LOG_LEVEL ?? process.env.AWS_LAMBDA_LOG_LEVEL ?? fallbackLevel) as LogLevel });
}

export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };
