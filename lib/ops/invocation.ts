import type { Metrics } from '@aws-lambda-powertools/metrics';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { createClients } from '../aws.ts';
import { type Config, loadConfig } from '../config/config.ts';
import { sourceConfig } from '../fleet/source-config.ts';
import { createLogger } from '../log.ts';
import { type FunctionName, lambdaMetrics, recordInvocation } from './lambda-metrics.ts';

/*
 * What every Lambda function does around its one lib call, written once (as Powertools keeps it in
 * middleware): the configuration and clients built per container, the invocation's source (the
 * stack's own, or one registered in the fleet), the logger given the invocation's context, the
 * invocation's memory and failure recorded, and the metrics flushed whatever happened.
 */

/** The source an invocation serves: the stack's own (`source` undefined) or a registered one (lib/fleet/). */
export interface SourceScope {
  /** The registered source's id; undefined for the stack's own source. */
  readonly source: string | undefined;
  readonly config: Config;
  /** Metrics with the source as their dimension. */
  readonly metrics: Metrics;
}

/** Built once per container (module scope): config errors fail the cold start loudly, clients keep their connections. */
export interface LambdaRuntime {
  /** The stack's own source's (the deployment's parameters). */
  readonly config: Config;
  readonly clients: ReturnType<typeof createClients>;
  readonly logger: ReturnType<typeof createLogger>;
  readonly metrics: Metrics;
  /** Starts a function asynchronously (InvocationType `Event`) with `payload` as its event. */
  invokeAsync(functionName: string, payload: unknown): Promise<void>;
  /** The scope of an event naming `source` (none: the stack's own); undefined when it is not registered or is paused. */
  scope(source: string | undefined): Promise<SourceScope | undefined>;
}

export function lambdaRuntime(): LambdaRuntime {
  const config = loadConfig();
  const clients = createClients(config);
  const logger = createLogger();
  const metrics = lambdaMetrics(config.sourceId);
  const lambda = new LambdaClient({});
  const own: SourceScope = { source: undefined, config, metrics };
  // A registered source's config, rebuilt when its record changes; its metrics, once per container.
  const configs = new Map<string, { updatedAt: number; config: Config }>();
  const sourceMetrics = new Map<string, Metrics>();
  return {
    config,
    clients,
    logger,
    metrics,
    async invokeAsync(functionName, payload) {
      await lambda.send(new InvokeCommand({ FunctionName: functionName, InvocationType: 'Event', Payload: JSON.stringify(payload) }));
    },
    async scope(source) {
      if (source === undefined) return own;
      const record = await clients.registry.get(source);
      if (!record || record.paused) return undefined;
      let built = configs.get(source);
      if (built?.updatedAt !== record.updatedAt) {
        built = { updatedAt: record.updatedAt, config: sourceConfig(process.env, record) };
        configs.set(source, built);
      }
      let scoped = sourceMetrics.get(source);
      if (!scoped) {
        scoped = lambdaMetrics(source);
        sourceMetrics.set(source, scoped);
      }
      return { source, config: built.config, metrics: scoped };
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

/** What an invocation for a source that is no longer registered, or is paused, returns: it did nothing. */
export interface Skipped {
  readonly status: 'skipped';
  readonly source: string;
}

/**
 * The registered source an event names (`{ sourceId }`), if any. Not `source`: EventBridge's own
 * events (the schedule's among them) carry `"source": "aws.events"`.
 */
export const sourceOf = (event: unknown): string | undefined =>
  event && typeof event === 'object' && typeof (event as { sourceId?: unknown }).sourceId === 'string' ? (event as { sourceId: string }).sourceId : undefined;

/**
 * The handler of function `fn`: `work` for each event, in the scope of the source it names, with
 * the logger's context, the invocation's metrics and their flush around it.
 */
export function invocation<E, R>(runtime: LambdaRuntime, fn: FunctionName, work: (event: E, context: Context, scope: SourceScope) => Promise<R>) {
  return async (event: E, context: Context): Promise<R | Skipped> => {
    runtime.logger.addContext(context);
    const source = sourceOf(event);
    let metrics = runtime.metrics;
    let failure: unknown;
    try {
      const scope = await runtime.scope(source);
      if (!scope) {
        runtime.logger.info('the source is not registered, or is paused: nothing to do', { source });
        return { status: 'skipped', source: source as string };
      }
      metrics = scope.metrics;
      if (source !== undefined) runtime.logger.appendKeys({ source });
      return await work(event, context, scope);
    } catch (error) {
      if (!(error instanceof Object && recorded.has(error))) failure = error;
      throw error;
    } finally {
      if (source !== undefined) runtime.logger.removeKeys(['source']);
      recordInvocation(metrics, fn, failure);
      metrics.publishStoredMetrics();
    }
  };
}
