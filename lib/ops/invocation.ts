import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { createClients } from '../aws.ts';
import { type Config, loadConfig } from '../config/config.ts';
import { createLogger } from '../log.ts';
import { type FunctionName, lambdaMetrics, recordInvocation } from './lambda-metrics.ts';

/*
 * What every Lambda function does around its one lib call, written once (as Powertools keeps it in
 * middleware): the configuration and clients built per container, the logger given the
 * invocation's context, the invocation's memory and failure recorded, and the metrics flushed
 * whatever happened.
 */

/** Built once per container (module scope): config errors fail the cold start loudly, clients keep their connections. */
export interface LambdaRuntime {
  readonly config: Config;
  readonly clients: ReturnType<typeof createClients>;
  readonly logger: ReturnType<typeof createLogger>;
  readonly metrics: ReturnType<typeof lambdaMetrics>;
  /** Starts a function asynchronously (InvocationType `Event`) with `payload` as its event. */
  invokeAsync(functionName: string, payload: unknown): Promise<void>;
}

export function lambdaRuntime(): LambdaRuntime {
  const config = loadConfig();
  const clients = createClients(config);
  const logger = createLogger();
  const metrics = lambdaMetrics(config.sourceId);
  const lambda = new LambdaClient({});
  return {
    config,
    clients,
    logger,
    metrics,
    async invokeAsync(functionName, payload) {
      await lambda.send(new InvokeCommand({ FunctionName: functionName, InvocationType: 'Event', Payload: JSON.stringify(payload) }));
    },
  };
}

/** Errors whose failure the work recorded itself (by their own codes): the invocation does not count them again. */
const recorded = new WeakSet<object>();

/** Marks `error` as already recorded in the metrics; returns it to be thrown. */
export function recordedFailure<E extends Error>(error: E): E {
  recorded.add(error);
  return error;
}

/** The handler of function `fn`: `work` for each event, with the logger's context, the invocation's metrics and their flush around it. */
export function invocation<E, R>(runtime: LambdaRuntime, fn: FunctionName, work: (event: E, context: Context) => Promise<R>) {
  return async (event: E, context: Context): Promise<R> => {
    runtime.logger.addContext(context);
    let failure: unknown;
    try {
      return await work(event, context);
    } catch (error) {
      if (!(error instanceof Object && recorded.has(error))) failure = error;
      throw error;
    } finally {
      recordInvocation(runtime.metrics, fn, failure);
      runtime.metrics.publishStoredMetrics();
    }
  };
}
