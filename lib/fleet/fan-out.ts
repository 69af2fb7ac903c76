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
 * of the same function, for that source) for every registered source that is due at `now` (its
 * capture schedule; `everyTick`: every one not paused, for a function on a schedule of its own)
 * and that `covers` takes. Reading the registry failing, or one source's start, holds back no other
 * source: logged, counted in `failed`, the next tick tries again.
 */
export async function fanOut(
  sources: () => Promise<readonly SourceRecord[]>,
  start: (source: string) => Promise<void>,
  options: { readonly now: number; readonly log: Log; readonly covers?: (record: SourceRecord) => boolean; readonly everyTick?: boolean },
): Promise<FanOut> {
  let registered: readonly SourceRecord[];
  try {
    registered = await sources();
  } catch (error) {
    options.log.warn('could not read the registered sources; the next tick tries again', { error: String(error) });
    return { started: [], failed: ['(registry)'] };
  }
  const due = registered
    .filter((record) => (options.everyTick ? !record.paused : isDue(record, options.now)) && (options.covers?.(record) ?? true))
    .map((record) => record.id);
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
  if (registered.length) options.log.info('fleet tick', { registered: registered.length, due: due.length, started: started.length, failed: failed.length });
  return { started: started.sort(), failed: failed.sort() };
}
