import type { Log } from '../log.ts';
import type { SourceRecord } from './registry.ts';
import { isDue } from './source-config.ts';

/** How many invocations a tick starts at once: enough for hundreds of sources within seconds, few enough for Lambda's Invoke API rate. */
const CONCURRENCY = 16;

/** What a scheduled tick did for the registered sources. */
export interface FanOut {
  /** The sources it started a run for. */
  readonly started: string[];
  /** The sources whose run could not be started (logged; the next tick tries again). */
  readonly failed: string[];
}

/**
 * One scheduled tick of a function for the fleet: starts `start(id)` (an asynchronous invocation
 * of the same function, for that source) for every registered source that is due at `now` and
 * that `covers` takes. One source's failed start never holds back another's.
 */
export async function fanOut(
  sources: readonly SourceRecord[],
  start: (source: string) => Promise<void>,
  options: { readonly now: number; readonly log: Log; readonly covers?: (record: SourceRecord) => boolean },
): Promise<FanOut> {
  const due = sources.filter((record) => isDue(record, options.now) && (options.covers?.(record) ?? true)).map((record) => record.id);
  const started: string[] = [];
  const failed: string[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < due.length; i = next++) {
      const source = due[i] as string;
      try {
        await start(source);
        started.push(source);
      } catch (error) {
        failed.push(source);
        options.log.warn('could not start the run of a registered source; the next tick tries again', { source, error: String(error) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, due.length) }, worker));
  if (sources.length) options.log.info('fleet tick', { registered: sources.length, due: due.length, started: started.length, failed: failed.length });
  return { started: started.sort(), failed: failed.sort() };
}
