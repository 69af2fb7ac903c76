/**
 * Named points in the commit protocols where tests (and the chaos suite) inject crashes. In
 * production `noFaults` is passed and each point costs one no-op call.
 */
export type FaultPoint =
  /** Staging objects and manifest written (Iceberg: data and metadata files), state not yet committed. */
  | 'after-staging'
  /** State committed (offset moved, renames recorded), no rename done yet. */
  | 'after-commit'
  /** Some but not all staging objects copied to their final keys. */
  | 'mid-rename'
  /** All copies done (Iceberg: the version published), staging not yet deleted, pending not yet cleared. */
  | 'before-clear'
  /** Iceberg rewrite: a bucket's files written, the bucket not yet recorded done. */
  | 'bucket-staged'
  /** Iceberg rewrite: a bucket recorded done, its lease not yet released. */
  | 'bucket-recorded';

export interface Faults {
  /** May throw (a crash) or wait (a stall, e.g. until the lease expires). */
  hit(point: FaultPoint): void | Promise<void>;
}

export const noFaults: Faults = { hit() {} };

/** Thrown by injected faults; stands for a process dying at that point. */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

/** Crashes at `point` the first time (or every time) it is reached. */
export function crashAt(point: FaultPoint, times = 1): Faults {
  let left = times;
  return {
    hit(p) {
      if (p === point && left-- > 0) throw new InjectedFault(`injected crash at ${p}`);
    },
  };
}
