import { compareEpochPositions } from '../../core/position.ts';
import type { TableRef } from '../../core/table-ref.ts';
import type { MergeRun } from './run.ts';
import { type Cut, sameTable } from './types.ts';

/* A table's snapshot pages in the change log, as far as a cut lets the merge take them. */

/**
 * The table's snapshot pages below the cut, of done jobs other than `skip` (and, given `only`, in
 * it): their objects, the jobs all of whose pages are in, and the done jobs with pages past the
 * cut (`waiting`: the table waits for them whole — merging some of a job's pages now and the
 * rest later would apply the early ones a second time, over newer changes). Pages of jobs not
 * done are left for later (see the header). A job's status is read before its pages are listed:
 * once done, every page of it is in the listing.
 */
export async function pageObjects(run: MergeRun, table: TableRef, cut: Cut, skip: ReadonlySet<string>, only?: ReadonlySet<string>) {
  const keys: string[] = [];
  const complete: string[] = [];
  const waiting: string[] = [];
  let events = 0;
  for (const id of await run.changeLog.snapshotJobs()) {
    if (skip.has(id) || (only && !only.has(id))) continue;
    const job = await run.deps.snapshots.job(run.config.sourceId, id);
    if (job?.status !== 'done') continue;
    const objects: string[] = [];
    let count = 0;
    let all = true;
    for await (const manifest of run.changeLog.pages(id, table)) {
      const watermark = manifest.snapshot?.watermark;
      if (!watermark || compareEpochPositions({ epoch: manifest.epoch ?? 0, position: watermark }, cut) > 0) {
        all = false;
        break;
      }
      for (const o of manifest.objects)
        if (sameTable(o, table)) {
          objects.push(o.key);
          count += o.events;
        }
    }
    // A done job without pages of this table never gets any: complete, so it is not listed again.
    if (!all) waiting.push(id);
    else {
      keys.push(...objects);
      events += count;
      complete.push(id);
    }
  }
  return { keys, complete, waiting, events };
}
