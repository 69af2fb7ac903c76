import type { Config } from '../config/config.ts';

/*
 * The capture run's decisions, as pure functions of what it has seen, so they are tested without
 * a database (test/unit/capture-policy.test.ts).
 */

/** A run's time limits, all in epoch ms. */
export interface Deadlines {
  /** The lease lasts exactly the run's budget: no write is accepted after it. */
  readonly leaseExpires: number;
  /** Take no new transaction after this; commit and hand over. */
  readonly soft: number;
  /** Give up a transaction still in flight rather than commit after the lease is gone (the store would refuse it anyway). */
  readonly hard: number;
}

export function deadlines(startedAt: number, budgetMs: number, safetyMarginMs: number): Deadlines {
  const leaseExpires = startedAt + budgetMs;
  return { leaseExpires, soft: leaseExpires - safetyMarginMs, hard: leaseExpires - Math.min(2000, safetyMarginMs / 2) };
}

/** Whether the run ends at this transaction boundary: out of time, or caught up when asked to stop there. */
export function shouldStop(now: number, limits: Deadlines, stopWhenCaughtUp: boolean, caughtUp: () => boolean): boolean {
  return now >= limits.soft || (stopWhenCaughtUp && caughtUp());
}

/** What the open batch holds, as far as cutting it is concerned. */
export interface BatchFill {
  readonly events: number;
  /** Uncompressed characters. */
  readonly size: number;
  readonly startedAt: number;
}

/**
 * At a transaction boundary: `commit` the batch if it is due (size, count or age; with a target
 * latency, also once the reader has caught up and the batch is that old) or the run ends (`force`);
 * with nothing batched, `heartbeat` the position if it moved and no commit happened for the commit
 * interval (or the run ends), so a quiet or filtered source never parks on an old binlog; else `wait`.
 */
export function boundaryAction(input: {
  readonly now: number;
  readonly force: boolean;
  readonly batch: BatchFill | undefined;
  /** The position read is past the committed one. */
  readonly advanced: boolean;
  /** Nothing the reader decoded waits to be read: committing now does not hold back rows at hand. */
  readonly caughtUp: boolean;
  readonly lastCommitAt: number;
  readonly limits: Config['batch'];
  readonly commitIntervalMs: number;
}): 'commit' | 'heartbeat' | 'wait' {
  const { now, force, batch, limits } = input;
  if (batch && batch.events > 0) {
    const age = now - batch.startedAt;
    const due =
      batch.size >= limits.maxBytes ||
      batch.events >= limits.maxEvents ||
      age >= limits.maxAgeMs ||
      (input.caughtUp && limits.targetLatencyMs !== undefined && age >= limits.targetLatencyMs);
    return force || due ? 'commit' : 'wait';
  }
  return input.advanced && (force || now - input.lastCommitAt >= input.commitIntervalMs) ? 'heartbeat' : 'wait';
}

/**
 * With a target latency, how long until the open batch is old enough to commit once caught up: the
 * reader should report `idle` by then if nothing arrives, so a quiet stream does not hold it longer.
 */
export function latencyWait(now: number, batch: BatchFill | undefined, limits: Config['batch']): number | undefined {
  if (limits.targetLatencyMs === undefined || !batch || batch.events === 0) return undefined;
  return Math.max(0, batch.startedAt + limits.targetLatencyMs - now);
}
